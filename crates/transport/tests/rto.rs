//! RFC 6298 retransmission timer as seen through the sender: the estimator's numbers, the
//! min-RTO clamp, Karn's rule, backoff doubling and its reset, timer start/restart/stop, the
//! once-per-episode ssthresh reduction, and Eifel (RFC 3522) spurious-timeout undo.

use ccarena_cc::{CaState, Duration, SimTime};
use ccarena_transport::{RecoveryMode, Sender, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;

fn sender(min_rto_ms: u64, max_rto_s: u64) -> Sender {
    let cfg = SenderConfig {
        min_rto: Duration::from_millis(min_rto_ms),
        max_rto: Duration::from_secs(max_rto_s),
        ..sender_cfg(RecoveryMode::Sack)
    };
    Sender::new(cfg, controller_for(RecoveryMode::Sack), SimTime::ZERO)
}

/// Send one segment at `t`, acknowledge it `rtt_ms` later; returns the ACK time.
fn one_round(s: &mut Sender, t: SimTime, rtt_ms: u64) -> SimTime {
    s.app_write(M);
    let segs = drain(s, t);
    assert_eq!(segs.len(), 1);
    let at = t + Duration::from_millis(rtt_ms);
    let out = s.on_ack(at, &ack_seg(segs[0].end(), &[], segs[0].ts_val));
    assert_eq!(out.rtt, Some(Duration::from_millis(rtt_ms)));
    at
}

#[test]
fn estimator_follows_rfc6298_arithmetic() {
    // min RTO 1 ms so the computed value shows; G = 1 ms.
    let mut s = sender(1, 60);
    assert_eq!(
        s.rto(),
        Duration::from_secs(1),
        "initial RTO before any sample (§2.1)"
    );
    // R1 = 80 ms: SRTT = 80, RTTVAR = 80/2 = 40, RTO = 80 + max(1, 4·40) = 240 ms (§2.2).
    let t = one_round(&mut s, SimTime::ZERO, 80);
    assert_eq!(s.srtt(), Some(Duration::from_millis(80)));
    assert_eq!(s.rttvar(), Some(Duration::from_millis(40)));
    assert_eq!(s.rto(), Duration::from_millis(240));
    // R2 = 120 ms: RTTVAR = 3/4·40 + 1/4·|80 − 120| = 30 + 10 = 40;
    // SRTT = 7/8·80 + 1/8·120 = 70 + 15 = 85; RTO = 85 + 160 = 245 ms (§2.3).
    let t = one_round(&mut s, t, 120);
    assert_eq!(s.rttvar(), Some(Duration::from_millis(40)));
    assert_eq!(s.srtt(), Some(Duration::from_millis(85)));
    assert_eq!(s.rto(), Duration::from_millis(245));
    // R3 = 40 ms: RTTVAR = 3/4·40 + 1/4·|85 − 40| = 30 + 11.25 = 41.25;
    // SRTT = 7/8·85 + 1/8·40 = 74.375 + 5 = 79.375; RTO = 79.375 + 165 = 244.375 ms.
    one_round(&mut s, t, 40);
    assert_eq!(s.rttvar(), Some(Duration::from_micros(41_250)));
    assert_eq!(s.srtt(), Some(Duration::from_micros(79_375)));
    assert_eq!(s.rto(), Duration::from_micros(244_375));
}

#[test]
fn min_rto_clamps_a_small_computed_rto() {
    let mut s = sender(200, 60);
    // R = 10 ms: 10 + 4·5 = 30 ms, clamped to 200 ms (§2.4).
    one_round(&mut s, SimTime::ZERO, 10);
    assert_eq!(s.rto(), Duration::from_millis(200));
}

#[test]
fn timer_starts_on_send_restarts_on_new_ack_stops_when_idle() {
    let mut s = sender(200, 60);
    assert_eq!(s.poll_timeout(), None);
    s.app_write(2 * M);
    let segs = drain(&mut s, SimTime::ZERO);
    assert_eq!(segs.len(), 2);
    assert_eq!(
        s.poll_timeout(),
        Some(ms(1000)),
        "started at the first send with the initial RTO"
    );
    // First segment acked at 500 ms: sample 500 ms, RTO = 500 + 4·250 = 1500 ms, restarted.
    let _ = s.on_ack(ms(500), &ack_seg(M, &[], SimTime::ZERO));
    assert_eq!(s.poll_timeout(), Some(ms(2000)));
    let _ = s.on_ack(ms(600), &ack_seg(2 * M, &[], SimTime::ZERO));
    assert_eq!(s.poll_timeout(), None, "nothing outstanding: stopped");
    assert!(s.is_complete());
}

#[test]
fn karn_no_sample_from_a_retransmitted_segment_and_backoff_kept_until_a_sample() {
    let mut s = sender(200, 60);
    s.app_write(M);
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 1);
    s.handle_timeout(ms(1000));
    let rtx = drain(&mut s, ms(1000));
    assert_eq!(rtx.len(), 1);
    assert!(rtx[0].retransmit && rtx[0].seq == 0);
    assert_eq!(s.rto(), Duration::from_secs(2), "backed off");
    // The ACK for it (1050 ms) is ambiguous: no sample.
    let out = s.on_ack(ms(1050), &ack_seg(M, &[], ms(1000)));
    assert_eq!(out.rtt, None);
    assert_eq!(s.srtt(), None);
    assert_eq!(s.stats().rtt_samples, 0);
    assert_eq!(
        s.rto(),
        Duration::from_secs(2),
        "backoff kept until a valid sample (§5.7)"
    );
    // A fresh segment gives a sample, which clears the backoff: 50 + 4·25 = 150 → 200 ms.
    let t = one_round(&mut s, ms(1050), 50);
    assert_eq!(t, ms(1100));
    assert_eq!(s.srtt(), Some(Duration::from_millis(50)));
    assert_eq!(s.rto(), Duration::from_millis(200));
}

#[test]
fn successive_expiries_double_the_rto_up_to_max_and_reduce_ssthresh_once() {
    let mut s = sender(200, 10);
    s.app_write(4 * M);
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 4);
    let mut deadline = ms(1000);
    let expected_rto = [2, 4, 8, 10, 10];
    for (k, rto_s) in expected_rto.iter().enumerate() {
        assert_eq!(s.poll_timeout(), Some(deadline));
        s.handle_timeout(SimTime(deadline.0 - 1)); // early: harmless
        assert_eq!(s.stats().rto_count, k as u64);
        s.handle_timeout(deadline);
        assert_eq!(s.stats().rto_count, k as u64 + 1);
        assert_eq!(s.ca_state(), CaState::Loss);
        assert_eq!(s.cwnd().cwnd_bytes, M, "loss window");
        // FlightSize 4 MSS at the first expiry: ssthresh = max(2, 2) MSS, not halved again.
        assert_eq!(s.cwnd().ssthresh_bytes, 2 * M);
        assert_eq!(s.rto(), Duration::from_secs(*rto_s));
        let rtx = drain(&mut s, deadline);
        assert_eq!(
            rtx.len(),
            1,
            "one segment (cwnd 1 MSS), the first unacknowledged"
        );
        assert_eq!(rtx[0].seq, 0);
        deadline += Duration::from_secs(*rto_s);
    }
}

#[test]
fn eifel_undoes_a_spurious_timeout() {
    let mut s = sender(200, 60);
    s.app_write(M);
    drain(&mut s, SimTime::ZERO);
    let before = *s.cwnd();
    s.handle_timeout(ms(1000));
    assert_eq!(drain(&mut s, ms(1000)).len(), 1);
    assert_eq!(s.cwnd().cwnd_bytes, M);
    // The ACK echoes the original transmission's timestamp (0): the original arrived.
    let _ = s.on_ack(ms(1010), &ack_seg(M, &[], SimTime::ZERO));
    assert_eq!(s.stats().spurious_rtos, 1);
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!(
        s.cwnd().cwnd_bytes,
        before.cwnd_bytes,
        "cwnd restored (Reno undo_cwnd)"
    );
    assert_eq!(
        s.cwnd().ssthresh_bytes,
        before.ssthresh_bytes,
        "ssthresh restored"
    );
}

#[test]
fn eifel_keeps_a_needed_timeout() {
    let mut s = sender(200, 60);
    s.app_write(M);
    drain(&mut s, SimTime::ZERO);
    s.handle_timeout(ms(1000));
    drain(&mut s, ms(1000));
    // The ACK echoes the retransmission (1000 ms): the original was lost.
    let _ = s.on_ack(ms(1010), &ack_seg(M, &[], ms(1000)));
    assert_eq!(s.stats().spurious_rtos, 0);
    assert_eq!(s.cwnd().ssthresh_bytes, 2 * M);
    assert_eq!(s.cwnd().cwnd_bytes, M);
    assert_eq!(
        s.ca_state(),
        CaState::Open,
        "everything outstanding at the timeout acked"
    );
}

#[test]
fn eifel_detections_in_lossy_reordering_runs_are_all_genuine() {
    // Whenever Eifel declares a timeout spurious, some copy of the segment the timeout
    // retransmitted, sent before the timeout, must really have reached the receiver.
    let mut detections = 0;
    for mode in ccarena_transport::ALL_RECOVERY_MODES {
        for seed in 0..8 {
            let mut fwd = LinkCfg::clean(Duration::from_millis(10));
            fwd.rate_bps = Some(20_000_000);
            fwd.queue_limit = Some(50);
            fwd.loss = 0.1;
            fwd.reorder = 0.05;
            fwd.reorder_extra = Duration::from_millis(300);
            let mut rev = LinkCfg::clean(Duration::from_millis(10));
            rev.loss = 0.1;
            let mut p = Pair::new(
                sender_cfg(mode),
                controller_for(mode),
                receiver_cfg(),
                fwd,
                rev,
                seed,
            );
            p.sender.app_write(200_000);
            p.pump();
            let (mut spurious, mut rtos, mut rto_una, mut rto_time) =
                (0, 0, u64::MAX, SimTime::ZERO);
            while !p.sender.is_complete() && p.step() {
                let st = *p.sender.stats();
                if st.rto_count != rtos {
                    rtos = st.rto_count;
                    if p.sender.snd_una() != rto_una {
                        rto_una = p.sender.snd_una();
                        rto_time = p.now;
                    }
                }
                if st.spurious_rtos != spurious {
                    spurious = st.spurious_rtos;
                    detections += 1;
                    assert!(
                        p.received.iter().any(|&(q, ts)| q == rto_una && ts < rto_time),
                        "{mode} seed {seed}: timeout at {rto_time:?} for {rto_una} undone, but no earlier copy arrived"
                    );
                }
            }
            assert!(p.sender.is_complete());
            p.assert_delivered_exactly(200_000);
        }
    }
    assert!(
        detections > 0,
        "the scenario should produce some spurious timeouts"
    );
}
