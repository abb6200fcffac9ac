//! The linux host model on an MPTCP connection (issue 36, "the linux rules on MPTCP"): every
//! subflow is a TCP connection of its own (RFC 8684 §3.2), so the spec's `handshake_rtt`,
//! `rto_rule` and `quickack_segments` reach each one as they reach a single-path flow.

use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{mbps, ms, mptcp_flow, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, run};

/// A 2-subflow LIA connection (or, with `subflows = 0`, a single-path Reno flow) carrying one
/// 1000-byte segment over a 20 Mbit/s dumbbell with a 40 ms RTT (2 × 19 ms + 4 × 0.5 ms), with
/// the linux host's settings or without; returns its completion time, s.
fn one_segment_fct_s(subflows: u8, linux: bool) -> f64 {
    let mut d = Dumbbell::new(1, mbps(20), ms(19), 100);
    d.access_delay_ns = vec![ms(1) / 2; 1];
    let mut f = match subflows {
        0 => tcp_flow("f", d.left(0), d.right(0), "reno"),
        n => mptcp_flow("f", d.left(0), d.right(0), "reno", n, "lia"),
    };
    f.bytes = Some(1000);
    f.start_ns = ms(100);
    if linux {
        f.recovery = "linux".into();
        f.handshake_rtt = true;
        f.rto_rule = "linux".into();
        f.quickack_segments = 16;
    }
    let res = run(d.spec(1, ms(2000), ms(100), vec![FlowSpec::Tcp(f)]));
    assert_conservation(&res);
    res.flows.f64("completion_time_s")[0]
}

/// Linux acknowledges a connection's first segments at once (quick-ACK mode), so a one-segment
/// transfer completes in one round trip; the RFC 5681 receiver holds the lone segment's ACK for
/// the 40 ms delayed-ACK timer. Measured on this machine's kernel for single-path TCP (the
/// README's host model: 41.0 ms against 87.3 ms on the udp backend's 40 ms path). An MPTCP
/// connection must behave as its subflow 0 does, which single-path TCP shows.
#[test]
fn a_one_segment_mptcp_transfer_completes_in_one_rtt_with_the_linux_host() {
    let (tcp_linux, tcp_rfc) = (one_segment_fct_s(0, true), one_segment_fct_s(0, false));
    let (mptcp_linux, mptcp_rfc) = (one_segment_fct_s(2, true), one_segment_fct_s(2, false));
    eprintln!("FCT s: tcp linux {tcp_linux:.4} rfc {tcp_rfc:.4}; mptcp linux {mptcp_linux:.4} rfc {mptcp_rfc:.4}");
    // One RTT (40 ms) plus serialization; the delayed ACK adds 40 ms.
    assert!((0.040..0.043).contains(&tcp_linux), "{tcp_linux}");
    assert!((0.080..0.083).contains(&tcp_rfc), "{tcp_rfc}");
    assert!((mptcp_linux - tcp_linux).abs() < 0.0005, "MPTCP {mptcp_linux} vs TCP {tcp_linux} with the linux host");
    assert!((mptcp_rfc - tcp_rfc).abs() < 0.0005, "MPTCP {mptcp_rfc} vs TCP {tcp_rfc} without");
}
