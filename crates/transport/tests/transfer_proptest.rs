//! Reliability under faults: for every recovery mode, random loss (0–30 % each way), reordering
//! and duplication, a transfer of up to a few hundred KB completes within a bounded simulated
//! time, and the receiver delivers every byte exactly once, in order, and only bytes that some
//! segment actually carried to it (checked by the harness as it runs). The scenarios also vary
//! DupThresh, ECN with random CE marks, immediate-ACK receivers, a bottleneck queue, and a paced
//! controller that owns the window.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::RecoveryMode;
use proptest::prelude::*;
use crate::support::{controller_for, receiver_cfg_for, sender_cfg, Fate, FixedRate, LinkCfg, Pair, Rng, MSS};

/// Generous bound on simulated time. The worst case is 30 % loss on both paths with Tahoe: RTO
/// backoffs of a few seconds (max_rto is 4 s here) on a ~300-segment transfer.
const LIMIT: SimTime = SimTime(3_000 * 1_000_000_000);

fn link(delay_ms: u64, f: &Faults, rate: Option<u64>, loss: f64) -> LinkCfg {
    LinkCfg {
        delay: Duration::from_millis(delay_ms),
        rate_bps: rate,
        queue_limit: Some(50),
        loss,
        reorder: f.reorder,
        reorder_extra: Duration::from_millis(f.reorder_extra_ms),
        dup: f.dup,
    }
}

/// One random scenario.
#[derive(Clone, Debug)]
struct Faults {
    bytes: u64,
    loss_fwd: f64,
    loss_rev: f64,
    reorder: f64,
    reorder_extra_ms: u64,
    dup: f64,
    /// 20 Mbps bottleneck with a 50-packet drop-tail queue on the data path.
    bottleneck: bool,
    dupthresh: u32,
    /// ECN on both ends, and the probability a data segment is CE-marked.
    ce_mark: Option<f64>,
    /// Receiver acknowledges every segment at once.
    no_delayed_ack: bool,
    /// A paced controller that owns the window (cong_control) instead of the Reno family.
    paced_owner: bool,
    seed: u64,
}

fn run(mode: RecoveryMode, f: Faults) {
    let mut scfg = sender_cfg(mode);
    scfg.max_rto = Duration::from_secs(4);
    scfg.dupthresh = f.dupthresh;
    scfg.ecn = if f.ce_mark.is_some() { ccarena_transport::SenderEcn::Classic } else { ccarena_transport::SenderEcn::Off };
    let mut rcfg = receiver_cfg_for(mode);
    rcfg.ecn = if f.ce_mark.is_some() { ccarena_transport::EcnMode::Classic } else { ccarena_transport::EcnMode::Off };
    if f.no_delayed_ack {
        rcfg.delayed_ack = Duration::ZERO;
    }
    let cc = if f.paced_owner {
        Box::new(FixedRate {
            cwnd_bytes: 64 * MSS as u64,
            rate_bps: 20_000_000,
        })
    } else {
        controller_for(mode)
    };
    let rate = f.bottleneck.then_some(20_000_000);
    let mut p = Pair::new(
        scfg,
        cc,
        rcfg,
        link(10, &f, rate, f.loss_fwd),
        link(10, &f, None, f.loss_rev),
        f.seed,
    );
    if let Some(prob) = f.ce_mark {
        let mut rng = Rng::new(f.seed ^ 0xC0FF_EE00);
        p.filter = Box::new(move |_| {
            if rng.chance(prob) {
                Fate::MarkCe
            } else {
                Fate::Deliver
            }
        });
    }
    let done = p.transfer(f.bytes, LIMIT);
    assert!(
        done,
        "{mode} {f:?}: not complete by {:?}: una {} nxt {} state {:?} stats {:?}",
        p.now,
        p.sender.snd_una(),
        p.sender.snd_nxt(),
        p.sender.ca_state(),
        p.sender.stats()
    );
    p.assert_delivered_exactly(f.bytes);
    assert_eq!(p.sender.in_flight_bytes(), 0);
    assert_eq!(
        p.sender.poll_timeout(),
        None,
        "no timer left once everything is acknowledged"
    );
    // Conservation at the sender: every byte sent once, plus retransmissions.
    let st = p.sender.stats();
    assert_eq!(st.bytes_sent, f.bytes + st.bytes_retransmitted);
}

fn faults() -> impl Strategy<Value = Faults> {
    (
        (
            1u64..300_000,
            0.0f64..0.3,
            0.0f64..0.3,
            0.0f64..0.2,
            prop_oneof![Just(15u64), Just(100)],
        ),
        (
            0.0f64..0.1,
            any::<bool>(),
            1u32..=5,
            proptest::option::of(0.0f64..0.05),
        ),
        (any::<bool>(), prop::bool::weighted(0.2), any::<u64>()),
    )
        .prop_map(
            |((bytes, lf, lr, ro, rx), (dup, bn, dt, ce), (nda, po, seed))| Faults {
                bytes,
                loss_fwd: lf,
                loss_rev: lr,
                reorder: ro,
                reorder_extra_ms: rx,
                dup,
                bottleneck: bn,
                dupthresh: dt,
                ce_mark: ce,
                no_delayed_ack: nda,
                paced_owner: po,
                seed,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn tahoe_delivers_everything(f in faults()) { run(RecoveryMode::Tahoe, f) }

    #[test]
    fn reno_delivers_everything(f in faults()) { run(RecoveryMode::Reno, f) }

    #[test]
    fn newreno_delivers_everything(f in faults()) { run(RecoveryMode::NewReno, f) }

    #[test]
    fn sack_delivers_everything(f in faults()) { run(RecoveryMode::Sack, f) }

    #[test]
    fn prr_delivers_everything(f in faults()) { run(RecoveryMode::Prr, f) }

    #[test]
    fn linux_delivers_everything(f in faults()) { run(RecoveryMode::Linux, f) }
}

#[test]
fn lossless_transfer_has_no_retransmissions() {
    for mode in ccarena_transport::ALL_RECOVERY_MODES {
        let mut p = Pair::simple(mode, Duration::from_millis(10));
        assert!(p.transfer(500_000, SimTime(10_000_000_000)));
        p.assert_delivered_exactly(500_000);
        let st = p.sender.stats();
        assert_eq!(
            (st.bytes_retransmitted, st.rto_count, st.fast_recoveries),
            (0, 0, 0),
            "{mode}"
        );
        assert_eq!(p.receiver.stats().duplicate_bytes, 0);
    }
}
