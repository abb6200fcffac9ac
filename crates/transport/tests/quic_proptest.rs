//! QUIC reliability under faults: with random loss (0–30 % each way), reordering, duplication,
//! random CE marks, a rate-limited bottleneck with a tail-drop queue, a small connection window,
//! ACK-frequency settings and controllers of every kind (window-based, delay-based, model-based),
//! a transfer of up to a few hundred KB completes within a bounded simulated time and the
//! receiver delivers every byte exactly once, in order, and only bytes some packet carried to it
//! (RFC 9000 §2.2: a stream is delivered reliably and in order). The harness checks as it runs
//! that packet numbers are never reused (RFC 9000 §12.3), that no packet carries stream data
//! beyond what the application offered or the flow-control credit the receiver advertised
//! (RFC 9000 §4.1), and that every ACK claims only packets that reached the receiver.

use std::collections::HashSet;

use ccarena_cc::{new_controller, Duration, Params, SimTime};
use ccarena_transport::quic::{AckFrame, QuicConfig, QuicPacket, QuicReceiver, QuicSender, DATA_OVERHEAD_BYTES};
use ccarena_transport::udt::ranges::RangeSet;
use ccarena_transport::{Ecn, SenderEcn};
use proptest::prelude::*;
use crate::support::{Channel, LinkCfg, Rng};

/// Stream bytes per full packet.
const PAYLOAD: u32 = 1200;

/// Generous bound on simulated time: 30 % loss both ways with PTO backoff on a ~250-packet
/// transfer stays well inside it.
const LIMIT: SimTime = SimTime(3_000 * 1_000_000_000);

/// One random scenario.
#[derive(Clone, Debug)]
struct Faults {
    bytes: u64,
    loss_fwd: f64,
    loss_rev: f64,
    reorder: f64,
    reorder_extra_ms: u64,
    dup: f64,
    /// 20 Mbit/s bottleneck with a 30-packet tail-drop queue on the data path.
    bottleneck: bool,
    /// ECN on, and the probability a data packet is CE-marked on the way.
    ce_mark: Option<f64>,
    ack_eliciting_threshold: u32,
    reordering_threshold: u32,
    /// Connection flow-control window, in packets; `None`: unlimited.
    window_packets: Option<u64>,
    flavor: &'static str,
    pacing: bool,
    seed: u64,
}

fn link(f: &Faults, loss: f64, rate: Option<u64>) -> LinkCfg {
    LinkCfg {
        delay: Duration::from_millis(10),
        rate_bps: rate,
        queue_limit: Some(30),
        loss,
        reorder: f.reorder,
        reorder_extra: Duration::from_millis(f.reorder_extra_ms),
        dup: f.dup,
    }
}

fn run(f: &Faults) -> ccarena_transport::quic::QuicSenderStats {
    let mut cfg = QuicConfig::new(PAYLOAD);
    cfg.ack_eliciting_threshold = f.ack_eliciting_threshold;
    cfg.reordering_threshold = f.reordering_threshold;
    cfg.max_data_bytes = f.window_packets.map(|w| w * PAYLOAD as u64);
    cfg.ecn = if f.ce_mark.is_some() { SenderEcn::Classic } else { SenderEcn::Off };
    cfg.pacing = f.pacing;
    let cc = new_controller(f.flavor, &Params::default()).expect("a catalogue flavor");
    let mut sender = QuicSender::new(cfg, cc, SimTime::ZERO);
    let mut receiver = QuicReceiver::new(cfg);
    let mut fwd: Channel<QuicPacket> = Channel::new(link(f, f.loss_fwd, f.bottleneck.then_some(20_000_000)), f.seed);
    let mut rev: Channel<AckFrame> = Channel::new(link(f, f.loss_rev, None), f.seed ^ 0x5EED);
    let mut marks = Rng::new(f.seed ^ 0xC0FF_EE00);
    sender.app_write(f.bytes);

    let mut sent_pns: HashSet<u64> = HashSet::new();
    let mut arrived_pns: HashSet<u64> = HashSet::new();
    // Stream bytes some packet that reached the receiver carried.
    let mut carried = RangeSet::new();
    let mut credit = cfg.max_data_bytes.unwrap_or(u64::MAX);
    let mut delivered = 0u64;
    let mut now = SimTime::ZERO;
    while !sender.is_complete() {
        assert!(now < LIMIT, "{f:?}: not complete by {now:?}: {:?}", sender.stats());
        // Everything due now, in a fixed order: arrivals, then timers, then what each end sends.
        while let Some(mut p) = fwd.pop_due(now) {
            if f.ce_mark.is_some_and(|prob| marks.chance(prob)) {
                p.ecn = Ecn::Ce;
            }
            arrived_pns.insert(p.pn);
            if p.len > 0 {
                carried.insert(p.offset, p.end());
            }
            let got = receiver.on_packet(now, &p);
            delivered += got;
            let prefix = carried.first_range().filter(|r| r.0 == 0).map_or(0, |r| r.1);
            assert!(delivered <= prefix, "{f:?}: delivered {delivered} past the carried prefix {prefix}");
        }
        while let Some(ack) = rev.pop_due(now) {
            for r in ack.ranges() {
                assert!(r.smallest <= r.largest);
                for pn in r.smallest..=r.largest {
                    assert!(arrived_pns.contains(&pn), "{f:?}: ACK claims pn {pn}, which never arrived");
                }
            }
            credit = credit.max(ack.max_data.min(ack.max_stream_data));
            let _ = sender.on_ack(now, &ack); // its outcome is not what this property checks
        }
        if receiver.poll_timeout().is_some_and(|t| t <= now) {
            receiver.handle_timeout(now);
        }
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now);
        }
        while let Some(p) = sender.poll_transmit(now) {
            assert!(sent_pns.insert(p.pn), "{f:?}: packet number {} reused", p.pn);
            assert!(p.end() <= f.bytes, "{f:?}: data past the offered {} bytes", f.bytes);
            assert!(p.end() <= credit, "{f:?}: data to {} past the credit {credit}", p.end());
            fwd.send(now, p, (p.len + DATA_OVERHEAD_BYTES) as u64);
        }
        while let Some(ack) = receiver.poll_ack(now) {
            rev.send(now, ack, ack.wire_bytes() as u64);
        }
        let next = [fwd.next_time(), rev.next_time(), sender.poll_timeout(), receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => now = t.max(now + Duration(1)),
            None if sender.is_complete() => break,
            None => panic!("{f:?}: stalled at {now:?} with nothing scheduled: {:?}", sender.stats()),
        }
    }
    // The last ACK reached the sender: every byte was delivered, once.
    assert_eq!(delivered, f.bytes, "{f:?}: delivered");
    assert_eq!(receiver.stats().delivered_bytes, f.bytes);
    let st = sender.stats();
    assert!(st.bytes_sent >= f.bytes, "{f:?}: sent {} of {}", st.bytes_sent, f.bytes);
    // Packets may still be in flight: a retransmission or a probe whose data an earlier packet
    // delivered first stays outstanding until acknowledged or declared lost (RFC 9002 §A.1).
    *st
}

const FLAVORS: &[&str] = &["reno", "cubic", "bbr", "bbr3", "vegas", "dctcp", "prague", "ledbat"];

fn faults() -> impl Strategy<Value = Faults> {
    (
        (1u64..300_000, 0.0f64..0.3, 0.0f64..0.3, 0.0f64..0.2, prop_oneof![Just(5u64), Just(60)]),
        (0.0f64..0.1, any::<bool>(), proptest::option::of(0.0f64..0.05), prop_oneof![Just(2u32), Just(1), Just(10)]),
        (prop_oneof![Just(1u32), Just(0), Just(3)], proptest::option::of(4u64..64), 0..FLAVORS.len(), any::<bool>(), any::<u64>()),
    )
        .prop_map(|((bytes, lf, lr, ro, rx), (dup, bn, ce, aet), (rt, win, fl, pacing, seed))| Faults {
            bytes,
            loss_fwd: lf,
            loss_rev: lr,
            reorder: ro,
            reorder_extra_ms: rx,
            dup,
            bottleneck: bn,
            ce_mark: ce,
            ack_eliciting_threshold: aet,
            reordering_threshold: rt,
            window_packets: win,
            flavor: FLAVORS[fl],
            pacing,
            seed,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_byte_arrives_once_in_order(f in faults()) {
        run(&f);
    }
}

#[test]
fn a_lossless_path_needs_no_retransmission() {
    let f = Faults {
        bytes: 500_000,
        loss_fwd: 0.0,
        loss_rev: 0.0,
        reorder: 0.0,
        reorder_extra_ms: 0,
        dup: 0.0,
        bottleneck: false,
        ce_mark: None,
        ack_eliciting_threshold: 2,
        reordering_threshold: 1,
        window_packets: None,
        flavor: "cubic",
        pacing: true,
        seed: 1,
    };
    let st = run(&f);
    assert_eq!((st.bytes_retransmitted, st.packets_declared_lost, st.pto_count), (0, 0, 0), "{st:?}");
    assert_eq!(st.bytes_sent, f.bytes);
}
