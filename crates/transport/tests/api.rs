//! Public API details: parsing, validation, completion, application limits, segment sizes.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::{ReceiverConfig, RecoveryMode, Sender, SenderConfig, ALL_RECOVERY_MODES};
use crate::support::*;

const M: u64 = MSS as u64;

#[test]
fn recovery_mode_names() {
    let names: Vec<_> = ALL_RECOVERY_MODES.iter().map(|m| m.as_str()).collect();
    assert_eq!(names, ["tahoe", "reno", "newreno", "sack", "prr", "linux"]);
    for m in ALL_RECOVERY_MODES {
        assert_eq!(m.as_str().parse::<RecoveryMode>().unwrap(), m);
    }
    let e = "Reno".parse::<RecoveryMode>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown recovery mode 'Reno' (choose one of: tahoe, reno, newreno, sack, prr, linux)"
    );
    assert!(RecoveryMode::Sack.uses_sack() && RecoveryMode::Prr.uses_sack());
    assert!(!RecoveryMode::NewReno.uses_sack());
}

#[test]
fn config_validation_names_the_field() {
    let ok = sender_cfg(RecoveryMode::Prr);
    assert_eq!(ok.validate(), Ok(()));
    let bad = SenderConfig {
        initial_cwnd_bytes: 10,
        ..ok
    };
    assert_eq!(bad.validate().unwrap_err().field, "initial_cwnd_bytes");
    let bad = SenderConfig { dupthresh: 0, ..ok };
    assert_eq!(
        bad.validate().unwrap_err().to_string(),
        "dupthresh: must be at least 1"
    );
    let bad = SenderConfig {
        max_rto: Duration::from_millis(100),
        ..ok
    };
    assert_eq!(bad.validate().unwrap_err().field, "max_rto");
    let bad = ReceiverConfig {
        ack_every_segments: 0,
        ..receiver_cfg()
    };
    assert_eq!(bad.validate().unwrap_err().field, "ack_every_segments");
}

#[test]
#[should_panic(expected = "invalid SenderConfig: mss_bytes")]
fn sender_new_rejects_an_invalid_config() {
    let cfg = SenderConfig {
        mss_bytes: 0,
        ..sender_cfg(RecoveryMode::Prr)
    };
    let _ = Sender::new(cfg, controller_for(RecoveryMode::Prr), SimTime::ZERO);
}

#[test]
fn segments_are_mss_sized_and_the_last_is_short() {
    let mut s = Sender::new(
        sender_cfg(RecoveryMode::Sack),
        controller_for(RecoveryMode::Sack),
        SimTime::ZERO,
    );
    assert!(!s.is_complete(), "nothing offered yet");
    s.app_write(2 * M + 500);
    let segs = drain(&mut s, SimTime::ZERO);
    let lens: Vec<_> = segs.iter().map(|x| (x.seq, x.len)).collect();
    assert_eq!(lens, vec![(0, MSS), (M, MSS), (2 * M, 500)]);
    assert!(segs
        .iter()
        .all(|x| x.ts_val == SimTime::ZERO && !x.retransmit));
    assert_eq!(
        (s.snd_una(), s.snd_nxt(), s.bytes_offered()),
        (0, 2 * M + 500, 2 * M + 500)
    );
    assert_eq!(s.in_flight_bytes(), 2 * M + 500);
    let _ = s.on_ack(ms(20), &ack_seg(2 * M + 500, &[], SimTime::ZERO));
    assert!(s.is_complete());
    assert_eq!(s.in_flight_bytes(), 0);
}

#[test]
fn app_stop_caps_the_stream_at_what_was_sent() {
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(
        sender_cfg(RecoveryMode::Prr),
        controller_for(RecoveryMode::Prr),
        receiver_cfg(),
        link,
        link,
        1,
    );
    p.sender.app_write(u64::MAX / 4);
    p.pump();
    p.run_until(ms(100));
    assert!(!p.sender.is_complete());
    p.sender.app_stop();
    let total = p.sender.snd_nxt();
    assert_eq!(p.sender.bytes_offered(), total);
    p.run_until(ms(1000));
    assert!(p.sender.is_complete());
    p.assert_delivered_exactly(total);
    // Bulk offers saturate rather than overflow.
    p.sender.app_write(u64::MAX);
    p.sender.app_write(u64::MAX);
    assert_eq!(p.sender.bytes_offered(), u64::MAX);
}

#[test]
fn stop_before_anything_is_complete() {
    let mut s = Sender::new(
        sender_cfg(RecoveryMode::Reno),
        controller_for(RecoveryMode::Reno),
        SimTime::ZERO,
    );
    s.app_stop();
    assert!(s.is_complete());
    assert_eq!(s.poll_transmit(SimTime::ZERO), None);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn acks_for_unsent_data_and_old_acks_are_harmless() {
    let mut s = Sender::new(
        sender_cfg(RecoveryMode::Sack),
        controller_for(RecoveryMode::Sack),
        SimTime::ZERO,
    );
    s.app_write(4 * M);
    drain(&mut s, SimTime::ZERO);
    let out = s.on_ack(ms(20), &ack_seg(100 * M, &[], SimTime::ZERO));
    assert_eq!(out.bytes_newly_acked, 0);
    assert_eq!(s.snd_una(), 0);
    let _ = s.on_ack(ms(20), &ack_seg(2 * M, &[], SimTime::ZERO));
    let out = s.on_ack(ms(21), &ack_seg(M, &[], SimTime::ZERO));
    assert_eq!(out, Default::default());
    assert_eq!(s.snd_una(), 2 * M);
    assert_eq!(
        s.stats().dupacks_received,
        0,
        "an old ACK is not a duplicate"
    );
}

#[test]
fn non_sack_modes_ignore_sack_blocks() {
    for mode in [
        RecoveryMode::Tahoe,
        RecoveryMode::Reno,
        RecoveryMode::NewReno,
    ] {
        let mut s = Sender::new(sender_cfg(mode), controller_for(mode), SimTime::ZERO);
        s.app_write(10 * M);
        drain(&mut s, SimTime::ZERO);
        let out = s.on_ack(ms(20), &ack_seg(0, &[(M, 9 * M)], SimTime::ZERO));
        assert_eq!(out.bytes_newly_sacked, 0, "{mode}");
        assert_eq!(s.in_flight_bytes(), 10 * M, "{mode}");
        assert_eq!(
            s.stats().fast_recoveries,
            0,
            "{mode}: one dupack is not a loss"
        );
    }
}

#[test]
fn sender_keeps_within_the_advertised_window_and_the_send_buffer() {
    // RFC 9293 §3.8.6: never more than the window outstanding, whatever cwnd (10 MSS) allows.
    let cfg = SenderConfig {
        initial_rwnd_bytes: Some(3 * M),
        ..sender_cfg(RecoveryMode::Prr)
    };
    let mut s = Sender::new(cfg, controller_for(RecoveryMode::Prr), SimTime::ZERO);
    s.app_write(100 * M);
    assert_eq!(drain(&mut s, ms(0)).len(), 3, "the handshake's window bounds the first flight");
    // ACK of 1 segment advertising 5: the edge moves to 1 + 5 = 6, three more segments.
    let mut a = ack_seg(M, &[], ms(0));
    a.rwnd_bytes = 5 * M;
    let _ = s.on_ack(ms(10), &a);
    assert_eq!(drain(&mut s, ms(10)).len(), 3);
    assert_eq!(s.snd_nxt(), 6 * M);
    // The send buffer: 4 segments unacknowledged at most.
    let cfg = SenderConfig {
        sndbuf_bytes: Some(4 * M),
        ..sender_cfg(RecoveryMode::Prr)
    };
    let mut s = Sender::new(cfg, controller_for(RecoveryMode::Prr), SimTime::ZERO);
    s.app_write(100 * M);
    assert_eq!(drain(&mut s, ms(0)).len(), 4);
    let _ = s.on_ack(ms(10), &ack_seg(2 * M, &[], ms(0)));
    assert_eq!(drain(&mut s, ms(10)).len(), 2);
    assert_eq!(s.snd_nxt() - s.snd_una(), 4 * M);
}
