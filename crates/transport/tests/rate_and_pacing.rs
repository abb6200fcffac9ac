//! Delivery-rate samples (draft-cheng-iccrg-delivery-rate-estimation) and pacing.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::{RecoveryMode, Sender, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;

fn paced_pair(rate_bps: u64, mss: u32) -> Pair {
    let scfg = SenderConfig {
        mss_bytes: mss,
        ..sender_cfg(RecoveryMode::Prr)
    };
    let rcfg = ccarena_transport::ReceiverConfig {
        mss_bytes: mss,
        ..receiver_cfg()
    };
    let cc = Box::new(FixedRate {
        cwnd_bytes: 1000 * mss as u64,
        rate_bps,
    });
    let link = LinkCfg::clean(Duration::from_millis(10));
    Pair::new(scfg, cc, rcfg, link, link, 3)
}

#[test]
fn paced_stream_yields_delivery_rate_samples_at_the_pacing_rate() {
    let rate = 10_000_000;
    let mut p = paced_pair(rate, MSS);
    // 1.5 MB at 10 Mbps: 1.2 s of steady sending.
    assert!(p.transfer(1_500 * M, SimTime(5_000_000_000)));
    let samples: Vec<_> = p
        .trace
        .iter()
        .filter(|t| t.now > ms(100) && t.now < ms(1_100))
        .filter_map(|t| t.rate)
        .filter(|r| r.interval > Duration::ZERO && !r.is_app_limited)
        .collect();
    assert!(samples.len() > 400, "{} samples", samples.len());
    for r in &samples {
        let err = (r.delivery_rate_bps as f64 - rate as f64).abs() / rate as f64;
        assert!(
            err < 0.02,
            "sample {} bps is not within 2% of {rate}",
            r.delivery_rate_bps
        );
        assert!(
            r.interval >= Duration::from_millis(20),
            "interval at least min RTT"
        );
    }
}

#[test]
fn segments_sent_while_the_application_is_idle_give_app_limited_samples() {
    let mut s = Sender::new(
        sender_cfg(RecoveryMode::Sack),
        controller_for(RecoveryMode::Sack),
        SimTime::ZERO,
    );
    s.app_write(4 * M);
    let first = drain(&mut s, SimTime::ZERO);
    assert_eq!(first.len(), 4);
    // Nothing more to send, window (10) not full: the connection is now app-limited, so what is
    // sent next carries the mark until the 4 segments in flight are delivered.
    s.app_write(2 * M);
    let second = drain(&mut s, ms(1));
    assert_eq!(second.len(), 2);
    let _ = s.on_ack(ms(20), &ack_seg(2 * M, &[], SimTime::ZERO));
    assert!(
        !s.last_rate_sample().unwrap().is_app_limited,
        "measured over a segment sent before"
    );
    let _ = s.on_ack(ms(21), &ack_seg(5 * M, &[], SimTime::ZERO));
    let rs = *s.last_rate_sample().unwrap();
    assert!(
        rs.is_app_limited,
        "measured over a segment sent while app-limited"
    );
    assert_eq!(rs.newly_acked_bytes, 3 * M);
    assert_eq!(rs.total_delivered_bytes, 5 * M);
    assert_eq!(s.delivered_bytes(), 5 * M);
}

#[test]
fn pacing_spaces_segments_by_their_serialization_time() {
    // 1500-byte payloads at 12 Mbps: exactly 1 ms apart.
    let mut s = Sender::new(
        SenderConfig {
            mss_bytes: 1500,
            initial_cwnd_bytes: 15_000,
            ..sender_cfg(RecoveryMode::Prr)
        },
        Box::new(FixedRate {
            cwnd_bytes: 150_000,
            rate_bps: 12_000_000,
        }),
        SimTime::ZERO,
    );
    s.app_write(10 * 1500);
    let mut t = SimTime::ZERO;
    for i in 0..10u64 {
        let seg = s.poll_transmit(t).expect("released");
        assert_eq!(seg.seq, i * 1500);
        assert_eq!(s.poll_transmit(t), None, "the next one waits");
        if i < 9 {
            let release = s
                .poll_timeout()
                .expect("release time reported while data waits");
            assert_eq!(release, t + Duration::from_millis(1));
            assert_eq!(
                s.poll_transmit(SimTime(release.0 - 1)),
                None,
                "not a nanosecond early"
            );
            t = release;
        }
    }
    // Nothing waiting: only the RTO remains.
    assert_eq!(s.poll_timeout(), Some(SimTime::ZERO + s.rto()));
}

#[test]
fn pacing_in_a_running_connection_holds_the_rate() {
    let rate = 12_000_000;
    let mut p = paced_pair(rate, 1500);
    assert!(p.transfer(300 * 1500, SimTime(5_000_000_000)));
    let gaps: Vec<u64> = p
        .sent_log
        .windows(2)
        .map(|w| w[1].0 .0 - w[0].0 .0)
        .collect();
    assert_eq!(gaps.len(), 299);
    assert!(
        gaps.iter().all(|g| *g == 1_000_000),
        "every gap is exactly 1 ms"
    );
}

#[test]
fn no_pacing_wakeup_is_reported_when_the_window_blocks() {
    // cwnd 2 segments, 8 Mbps: 1000 B every 1 ms.
    let mut s = Sender::new(
        SenderConfig {
            mss_bytes: 1000,
            ..sender_cfg(RecoveryMode::Prr)
        },
        Box::new(FixedRate {
            cwnd_bytes: 2_000,
            rate_bps: 8_000_000,
        }),
        SimTime::ZERO,
    );
    s.app_write(100_000);
    assert!(s.poll_transmit(SimTime::ZERO).is_some());
    assert_eq!(s.poll_transmit(SimTime::ZERO), None);
    assert_eq!(
        s.poll_timeout(),
        Some(ms(1)),
        "second segment waits for pacing"
    );
    assert!(s.poll_transmit(ms(1)).is_some());
    assert_eq!(s.poll_transmit(ms(1)), None);
    // Window full: waiting for an ACK, not for the pacer; only the RTO is reported, so a
    // caller that sleeps until poll_timeout() does not spin.
    assert_eq!(s.poll_timeout(), Some(SimTime::ZERO + s.rto()));
}
