//! Regression (issue 19 item 1): Reno and NewReno with SACK-based recovery (`sack`, `prr`) on a
//! RED bottleneck. Two flows on a 10 Mbps / 20 ms dumbbell whose queue is RED (min_th 5, max_th
//! 15 packets) must behave as on DropTail: few retransmissions, few timeouts, a fair split.
//!
//! Before the fix they retransmitted ~65% of what they sent, took ~160 RTOs a minute and one
//! flow starved: FlightSize for the ssthresh of RFC 5681 eq. 4 was taken as snd.nxt − snd.una,
//! which after SACK recovery counts many windows of SACKed data, so a loss *raised* ssthresh;
//! the window outgrew the path, RED dropped everything, and the flow lived in the Loss state.

use ccarena_sim::flow::Flow;
use ccarena_sim::testkit::{make_red, mbps, ms, red_packets, secs, tcp_flow, Dumbbell};
use ccarena_sim::Simulation;
use crate::common::{jain, mean_goodput_bps, tcp};

struct Outcome {
    retransmit_ratio: f64,
    rtos: u64,
    jain: f64,
    goodput_mbps: [f64; 2],
}

fn run_pair(flavor: &str, recovery: &str) -> Outcome {
    let d = Dumbbell::new(2, mbps(10), ms(20), 100);
    let flows = (0..2)
        .map(|i| {
            let mut f = tcp_flow(&format!("{flavor}{i}"), d.left(i), d.right(i), flavor);
            f.recovery = recovery.to_string();
            f.start_ns = ms(100) * i as u64;
            tcp(f)
        })
        .collect();
    let mut spec = d.spec(1, secs(60), ms(100), flows);
    make_red(&mut spec.links[d.bottleneck_link()].queue, red_packets(5, 15));
    let mut sim = Simulation::new(spec).expect("valid spec");
    sim.run();
    let (mut sent, mut rtx, mut rtos) = (0, 0, 0);
    for f in sim.flows() {
        let Flow::Tcp(t) = f else { unreachable!() };
        let st = t.sender.stats();
        sent += st.bytes_sent;
        rtx += st.bytes_retransmitted;
        rtos += st.rto_count;
        eprintln!(
            "  sent {} rtx {} rto {} fr {} cwnd {} ssthresh {} state {:?}",
            st.bytes_sent,
            st.bytes_retransmitted,
            st.rto_count,
            st.fast_recoveries,
            t.sender.cwnd().cwnd_bytes,
            t.sender.cwnd().ssthresh_bytes,
            t.sender.ca_state()
        );
    }
    let res = sim.results();
    let g = [mean_goodput_bps(&res, 0, 10.0, 60.0), mean_goodput_bps(&res, 1, 10.0, 60.0)];
    let o = Outcome {
        retransmit_ratio: rtx as f64 / sent as f64,
        rtos,
        jain: jain(&g),
        goodput_mbps: [g[0] / 1e6, g[1] / 1e6],
    };
    eprintln!(
        "{flavor}/{recovery} on RED: retransmitted {:.1}% of bytes sent, {} RTOs, Jain {:.3}, goodput {:.2} + {:.2} Mbps",
        100.0 * o.retransmit_ratio,
        o.rtos,
        o.jain,
        o.goodput_mbps[0],
        o.goodput_mbps[1]
    );
    o
}

#[test]
fn reno_and_newreno_with_sack_recovery_behave_on_red() {
    let mut bad = Vec::new();
    for flavor in ["reno", "newreno"] {
        for recovery in ["sack", "prr", "linux"] {
            let o = run_pair(flavor, recovery);
            // RED at these thresholds drops ~1–2% of packets, each repaired by one
            // retransmission; SACK repairs them without the timer; the two flows split the link.
            // Reno halving at a 5–15 packet queue on a 34-packet BDP leaves the link ~80% used.
            let total = o.goodput_mbps.iter().sum::<f64>();
            if o.retransmit_ratio > 0.05 || o.rtos > 10 || o.jain < 0.95 || total < 0.7 * 10.0 * 1448.0 / 1500.0 {
                bad.push(format!(
                    "{flavor}/{recovery}: rtx {:.1}%, {} RTOs, Jain {:.3}, {:.2}+{:.2} Mbps",
                    100.0 * o.retransmit_ratio,
                    o.rtos,
                    o.jain,
                    o.goodput_mbps[0],
                    o.goodput_mbps[1]
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("; "));
}
