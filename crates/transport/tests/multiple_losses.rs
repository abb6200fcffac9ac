//! Three segments dropped from one window (cwnd 20 segments; segments 3, 7 and 11 lost once):
//! how each recovery mode copes.

use ccarena_cc::{CaState, Duration, SimTime};
use ccarena_transport::{RecoveryMode, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;
const SEGMENTS: u64 = 80;

fn run(mode: RecoveryMode) -> Pair {
    let cfg = SenderConfig {
        initial_cwnd_bytes: 20 * M,
        ..sender_cfg(mode)
    };
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(cfg, controller_for(mode), receiver_cfg(), link, link, 7);
    p.filter = Box::new(|seg| {
        if !seg.retransmit && [3, 7, 11].contains(&(seg.seq / M)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    assert!(
        p.transfer(SEGMENTS * M, SimTime(60_000_000_000)),
        "{mode} did not complete"
    );
    p.assert_delivered_exactly(SEGMENTS * M);
    p
}

#[test]
fn tahoe_falls_back_to_slow_start_from_one_segment() {
    let p = run(RecoveryMode::Tahoe);
    let st = p.sender.stats();
    assert!(st.fast_recoveries >= 1, "{st:?}");
    let first_loss = p
        .trace
        .iter()
        .find(|t| t.state == CaState::Loss)
        .expect("entered Loss");
    assert_eq!(first_loss.cwnd, M, "cwnd = 1 MSS on fast retransmit");
    // ssthresh = FlightSize/2; slow start on the ACKs of segments 0..2 grew the flight a little
    // beyond the initial 20 before the third duplicate ACK.
    assert!(
        (10 * M..=12 * M).contains(&first_loss.ssthresh),
        "{}",
        first_loss.ssthresh
    );
    assert!(
        p.trace.iter().all(|t| t.state != CaState::Recovery),
        "tahoe has no fast recovery"
    );
}

#[test]
fn reno_needs_more_than_one_episode_or_a_timeout() {
    let p = run(RecoveryMode::Reno);
    let st = p.sender.stats();
    assert!(st.fast_recoveries >= 2 || st.rto_count >= 1, "{st:?}");
    // Each Reno episode ends on the first ACK of new data with cwnd = ssthresh.
    let exits: Vec<_> = p
        .trace
        .windows(2)
        .filter(|w| w[0].state == CaState::Recovery && w[1].state != CaState::Recovery)
        .collect();
    assert!(!exits.is_empty());
    for w in exits {
        assert!(
            w[1].ack > w[0].ack,
            "left recovery on an ACK that advanced snd.una"
        );
        assert_eq!(w[1].cwnd, w[1].ssthresh);
    }
}

fn one_episode(mode: RecoveryMode) {
    let p = run(mode);
    let st = p.sender.stats();
    assert_eq!((st.fast_recoveries, st.rto_count), (1, 0), "{mode}: {st:?}");
    assert_eq!(
        st.segments_retransmitted, 3,
        "{mode}: exactly the three lost segments"
    );
    assert_eq!(p.receiver.stats().duplicate_bytes, 0);
    // Recovery lasted until everything sent before it was acknowledged (recover = 20 MSS at
    // least, since 20 segments were in flight).
    let exit = p
        .trace
        .windows(2)
        .find(|w| w[0].state == CaState::Recovery && w[1].state != CaState::Recovery)
        .expect("left recovery");
    assert!(
        exit[1].ack >= 20 * M,
        "{mode}: left recovery at {}",
        exit[1].ack
    );
}

#[test]
fn newreno_repairs_all_three_in_one_episode() {
    one_episode(RecoveryMode::NewReno);
}

#[test]
fn sack_repairs_all_three_in_one_episode() {
    one_episode(RecoveryMode::Sack);
}

#[test]
fn prr_repairs_all_three_in_one_episode() {
    one_episode(RecoveryMode::Prr);
}

#[test]
fn prr_ends_recovery_at_ssthresh() {
    let p = run(RecoveryMode::Prr);
    let w = p
        .trace
        .windows(2)
        .find(|w| w[0].state == CaState::Recovery && w[1].state != CaState::Recovery)
        .unwrap();
    assert_eq!(w[1].cwnd, w[1].ssthresh);
    assert!(w[1].ssthresh < w[0].cwnd.max(20 * M), "reduced");
}
