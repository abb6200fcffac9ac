//! The QUIC sender's loss detection and congestion control against RFC 9002's pseudocode
//! (Appendix A and B), driven by hand-built ACK frames in explicit simulated time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use ccarena_cc::{
    new_controller, AckSample, CaState, CongestionControl, CwndState, Duration, LossEvent, Params, SimTime,
};
use ccarena_transport::quic::{
    AckFrame, EcnCounts, PnRange, QuicConfig, QuicPacket, QuicRtt, QuicSender, MAX_ACK_RANGES,
    PACING_GAIN_QUARTERS, PERSISTENT_CONGESTION_THRESHOLD,
};
use ccarena_transport::udt::ranges::RangeSet;
use ccarena_transport::{Ecn, SenderEcn};

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

fn dur_ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Defaults with 1000-byte packets, unpaced unless a test turns pacing on.
fn cfg() -> QuicConfig {
    let mut c = QuicConfig::new(MSS);
    c.pacing = false;
    c
}

fn cc(flavor: &str) -> Box<dyn CongestionControl> {
    new_controller(flavor, &Params::default()).unwrap()
}

fn bulk(flavor: &str, c: QuicConfig) -> QuicSender {
    let mut s = QuicSender::new(c, cc(flavor), SimTime::ZERO);
    s.app_write(u64::MAX / 4);
    s
}

/// Every packet the sender lets out at `now`.
fn drain(s: &mut QuicSender, now: SimTime) -> Vec<QuicPacket> {
    let mut out = Vec::new();
    while let Some(p) = s.poll_transmit(now) {
        out.push(p);
        assert!(out.len() < 100_000, "runaway sender");
    }
    out
}

/// An ACK frame for the inclusive packet-number ranges `ranges` (any order), no ACK delay, no
/// ECN, unlimited credit.
fn ack(ranges: &[(u64, u64)]) -> AckFrame {
    ack_full(ranges, Duration::ZERO, None)
}

fn ack_full(ranges: &[(u64, u64)], ack_delay: Duration, ecn: Option<EcnCounts>) -> AckFrame {
    let mut rs: Vec<(u64, u64)> = ranges.to_vec();
    rs.sort_by_key(|r| std::cmp::Reverse(r.0));
    assert!(!rs.is_empty() && rs.len() <= MAX_ACK_RANGES);
    let mut arr = [PnRange::default(); MAX_ACK_RANGES];
    for (i, &(lo, hi)) in rs.iter().enumerate() {
        arr[i] = PnRange { smallest: lo, largest: hi };
    }
    AckFrame {
        largest: rs[0].1,
        ack_delay,
        ranges: arr,
        range_count: rs.len() as u8,
        ecn,
        largest_received_at: SimTime::ZERO,
        max_data: u64::MAX,
        max_stream_data: u64::MAX,
        credit_update: false,
    }
}

/// Ten packets at 0 ms (window-limited), all acknowledged at 100 ms (RTT 100 ms: smoothed 100,
/// rttvar 50), then what the grown window lets out at 100 ms.
fn warm(flavor: &str, c: QuicConfig) -> (QuicSender, Vec<QuicPacket>) {
    let mut s = bulk(flavor, c);
    let first = drain(&mut s, ms(0));
    assert_eq!(first.len(), 10);
    let _ = s.on_ack(ms(100), &ack(&[(0, 9)]));
    let second = drain(&mut s, ms(100));
    (s, second)
}

/// A controller that records every AckSample it is given and otherwise behaves as Reno.
#[derive(Debug)]
struct Recorder {
    inner: Box<dyn CongestionControl>,
    samples: Arc<Mutex<Vec<AckSample>>>,
}

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.samples.lock().unwrap().push(*ack);
        self.inner.pkts_acked(st, ack);
    }
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.inner.cong_avoid(st, ack);
    }
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.inner.ssthresh(st, ev)
    }
}

// ---------------------------------------------------------------- RTT estimator (§5, §A.7)

#[test]
fn rtt_estimator_follows_update_rtt() {
    let mut r = QuicRtt::new(dur_ms(333));
    // §6.2.2: before a sample, smoothed = kInitialRtt, rttvar = kInitialRtt / 2.
    assert!(!r.has_sample());
    assert_eq!(
        (r.smoothed(), r.rttvar(), r.latest(), r.min_rtt()),
        (dur_ms(333), Duration(166_500_000), None, None)
    );
    assert_eq!(r.pto_duration(dur_ms(25)), dur_ms(333 + 666 + 25));

    // First sample: ack_delay ignored, smoothed = latest, rttvar = latest / 2.
    r.on_sample(dur_ms(100), dur_ms(10), dur_ms(25));
    assert_eq!((r.smoothed(), r.rttvar(), r.min_rtt()), (dur_ms(100), dur_ms(50), Some(dur_ms(100))));

    // Later sample: 120 ≥ min 100 + delay 10, so adjusted = 110;
    // rttvar = 3/4·50 + 1/4·|100 − 110| = 40; smoothed = 7/8·100 + 1/8·110 = 101.25.
    r.on_sample(dur_ms(120), dur_ms(10), dur_ms(25));
    assert_eq!(r.latest(), Some(dur_ms(120)));
    assert_eq!(r.rttvar(), dur_ms(40));
    assert_eq!(r.smoothed(), Duration(101_250_000));
    assert_eq!(r.min_rtt(), Some(dur_ms(100)));

    // ack_delay is capped at max_ack_delay (§5.3): 500 ms counts as 25, adjusted = 175.
    let mut a = r;
    a.on_sample(dur_ms(200), dur_ms(500), dur_ms(25));
    let dev = 175_000_000u64.abs_diff(101_250_000);
    assert_eq!(a.rttvar(), Duration((3 * 40_000_000 + dev) / 4));
    assert_eq!(a.smoothed(), Duration((7 * 101_250_000 + 175_000_000) / 8));

    // The min_rtt guard: 105 < min 100 + delay 10, so the delay is not subtracted.
    let mut b = r;
    b.on_sample(dur_ms(105), dur_ms(10), dur_ms(25));
    assert_eq!(b.smoothed(), Duration((7 * 101_250_000 + 105_000_000) / 8));

    // min_rtt is the raw minimum, never adjusted for ack delay (§5.2).
    let mut c = r;
    c.on_sample(dur_ms(90), dur_ms(20), dur_ms(25));
    assert_eq!(c.min_rtt(), Some(dur_ms(90)));
    // 90 < 90 + 20: unadjusted.
    assert_eq!(c.smoothed(), Duration((7 * 101_250_000 + 90_000_000) / 8));

    // PTO: smoothed + max(4·rttvar, kGranularity) + max_ack_delay.
    assert_eq!(r.pto_duration(dur_ms(25)), Duration(101_250_000 + 160_000_000 + 25_000_000));
    let mut tiny = QuicRtt::new(dur_ms(333));
    tiny.on_sample(Duration(100_000), Duration::ZERO, Duration::ZERO);
    assert_eq!(tiny.pto_duration(Duration::ZERO), Duration(100_000 + 1_000_000), "kGranularity floor");
}

#[test]
fn sender_takes_rtt_from_the_largest_acknowledged_only_when_newly_acked() {
    let mut s = bulk("reno", cfg());
    assert_eq!((s.srtt(), s.rttvar(), s.min_rtt()), (None, None, None));
    drain(&mut s, ms(0));
    let o = s.on_ack(ms(100), &ack_full(&[(0, 1), (3, 3)], dur_ms(5), None));
    assert_eq!(o.rtt, Some(dur_ms(100)));
    assert_eq!(s.srtt(), Some(dur_ms(100)));
    // Largest (3) already acknowledged: newly acking 2 below it gives no sample.
    let o = s.on_ack(ms(150), &ack(&[(0, 3)]));
    assert_eq!(o.rtt, None);
    assert_eq!(o.packets_newly_acked, 1);
    assert_eq!(s.stats().rtt_samples, 1);
    // An ACK of nothing new changes nothing.
    let o = s.on_ack(ms(160), &ack(&[(0, 3)]));
    assert_eq!((o.rtt, o.packets_newly_acked), (None, 0));
    assert_eq!(s.stats().acks_received, 3);
}

// ---------------------------------------------------------------- loss detection (§6.1, §A.10)

#[test]
fn packet_threshold_declares_only_packets_three_below_the_largest() {
    let mut s = bulk("reno", cfg());
    let sent = drain(&mut s, ms(0));
    assert_eq!(sent.iter().map(|p| p.pn).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
    let o = s.on_ack(ms(100), &ack(&[(3, 3)]));
    assert_eq!((o.packets_newly_lost, o.bytes_newly_lost), (1, M), "pn 0 only: 3 ≥ 0 + 3");
    assert_eq!(s.stats().packets_declared_lost, 1);
    assert_eq!(s.pending_retransmit_bytes(), M);
    // pn 1 and 2 wait for the time threshold: 0 + 9/8·100 ms.
    assert_eq!(s.loss_time(), Some(SimTime(112_500_000)));
    assert_eq!(s.in_flight_bytes(), 8 * M);
    assert_eq!(s.ca_state(), CaState::Recovery);
    // The lost data goes first, in a new packet number (§7.3.2's one packet on entering recovery).
    let p = s.poll_transmit(ms(100)).unwrap();
    assert_eq!((p.pn, p.offset, p.len, p.retransmit), (10, 0, MSS, true));
    assert_eq!(s.stats().packets_retransmitted, 1);
    assert!(s.poll_transmit(ms(100)).is_none(), "in flight 9 packets > cwnd 5");
}

#[test]
fn time_threshold_loss_fires_from_the_loss_timer() {
    let mut s = QuicSender::new(cfg(), cc("reno"), SimTime::ZERO);
    s.app_write(2 * M);
    assert_eq!(drain(&mut s, ms(0)).len(), 2);
    let o = s.on_ack(ms(100), &ack(&[(1, 1)]));
    assert_eq!(o.packets_newly_lost, 0, "1 < 0 + 3 and sent only 100 ms ago");
    // loss_delay = 9/8 · max(latest 100, smoothed 100) = 112.5 ms after pn 0's send time.
    assert_eq!(s.poll_timeout(), Some(SimTime(112_500_000)));
    s.handle_timeout(SimTime(112_499_999));
    assert_eq!(s.stats().packets_declared_lost, 0, "not due yet");
    s.handle_timeout(SimTime(112_500_000));
    assert_eq!(s.stats().packets_declared_lost, 1);
    assert_eq!(s.in_flight_bytes(), 0);
    assert_eq!(s.loss_time(), None);
    assert_eq!(s.ca_state(), CaState::Recovery);
    let p = s.poll_transmit(SimTime(112_500_000)).unwrap();
    assert_eq!((p.pn, p.offset, p.retransmit), (2, 0, true));
    // Its ACK completes the transfer and ends recovery (sent after it began).
    assert!(!s.is_complete());
    let _ = s.on_ack(ms(300), &ack(&[(1, 2)]));
    assert!(s.is_complete());
    assert_eq!(s.ca_state(), CaState::Open);
}

// ---------------------------------------------------------------- PTO (§6.2, §A.8–A.9)

#[test]
fn pto_backs_off_exponentially_sends_probes_past_cwnd_and_resets_on_ack() {
    let (mut s, second) = warm("reno", cfg());
    assert_eq!(second.len() as u64 * M, s.cwnd().cwnd_bytes, "window full");
    let pto = dur_ms(100 + 4 * 50 + 25);
    assert_eq!(s.pto(), pto);
    assert_eq!(s.poll_timeout(), Some(ms(100) + pto));
    s.handle_timeout(ms(100) + pto);
    assert_eq!((s.pto_count(), s.stats().pto_count), (1, 1));
    assert_eq!(s.pto(), pto.saturating_mul(2));
    let probes = drain(&mut s, ms(100) + pto);
    assert_eq!(probes.len(), 2, "two probes, whatever cwnd says");
    assert!(probes.iter().all(|p| !p.retransmit && p.len == MSS), "new data first");
    assert!(s.in_flight_bytes() > s.cwnd().cwnd_bytes);
    let t2 = ms(100) + pto + pto.saturating_mul(2);
    assert_eq!(s.poll_timeout(), Some(t2), "from the last probe, doubled");
    s.handle_timeout(t2);
    assert_eq!(s.pto_count(), 2);
    assert_eq!(s.pto(), pto.saturating_mul(4));
    assert_eq!(drain(&mut s, t2).len(), 2);
    assert_eq!(s.stats().probes_sent, 4);
    // A PTO changes no window (§6.2).
    assert_eq!(s.cwnd().cwnd_bytes, 12 * M);
    // An ACK that newly acknowledges resets the backoff.
    let _ = s.on_ack(t2 + dur_ms(10), &ack(&[(0, 10)]));
    assert_eq!(s.pto_count(), 0);
}

#[test]
fn probes_resend_the_oldest_unacknowledged_data_then_ping() {
    let mut s = QuicSender::new(cfg(), cc("reno"), SimTime::ZERO);
    s.app_write(3 * M);
    assert_eq!(drain(&mut s, ms(0)).len(), 3);
    let _ = s.on_ack(ms(100), &ack(&[(0, 0)]));
    let t = ms(100) + s.pto();
    // The timer counts from the last ack-eliciting packet (sent at 0).
    assert_eq!(s.poll_timeout(), Some(ms(0) + s.pto()));
    s.handle_timeout(t);
    let probes = drain(&mut s, t);
    // Nothing new or lost: the oldest unacknowledged bytes, in order, marked as resent.
    assert_eq!(
        probes.iter().map(|p| (p.offset, p.len, p.retransmit)).collect::<Vec<_>>(),
        vec![(M, MSS, true), (2 * M, MSS, true)]
    );
    assert_eq!(s.stats().bytes_probe_resent, 2 * M);
    assert_eq!(s.stats().packets_declared_lost, 0, "nothing is marked lost");
    // Everything acknowledged but a probe still in flight: the next probe is a PING.
    let _ = s.on_ack(t + dur_ms(100), &ack(&[(0, 3)]));
    assert!(s.is_complete());
    assert_eq!(s.in_flight_bytes(), M);
    let t2 = t + s.pto();
    s.handle_timeout(t2);
    let pings = drain(&mut s, t2);
    assert_eq!(pings.len(), 2);
    assert!(pings.iter().all(|p| p.len == 0));
    assert_eq!(s.stats().pings_sent, 2);
    assert_eq!(s.in_flight_bytes(), M + 2, "a PING counts 1 byte in flight");
}

// ---------------------------------------------------------------- persistent congestion (§7.6)

/// After the first round, one packet at 200 ms and one at 200 ms + `span`, then three at
/// 200 ms + `span` + 10 ms; the last is acknowledged alone 100 ms later, declaring the first two
/// lost. Returns the sender and cwnd before that ACK. Checks the persistent congestion duration
/// at the loss with the RFC's estimator fed the same samples.
fn two_losses_apart(span: Duration) -> (QuicSender, u64) {
    let mut s = QuicSender::new(cfg(), cc("reno"), SimTime::ZERO);
    s.app_write(10 * M);
    drain(&mut s, ms(0));
    let _ = s.on_ack(ms(100), &ack(&[(0, 9)]));
    let t0 = ms(200);
    s.app_write(M);
    assert_eq!(drain(&mut s, t0).len(), 1);
    let t1 = t0 + span;
    s.app_write(M);
    assert_eq!(drain(&mut s, t1).len(), 1);
    let t2 = t1 + dur_ms(10);
    s.app_write(3 * M);
    assert_eq!(drain(&mut s, t2).len(), 3);
    let cwnd_before = s.cwnd().cwnd_bytes;
    let o = s.on_ack(t2 + dur_ms(100), &ack(&[(14, 14)]));
    assert_eq!(o.packets_newly_lost, 2, "pn 10 and 11 by the packet threshold");
    let mut rtt = QuicRtt::new(cfg().initial_rtt);
    rtt.on_sample(dur_ms(100), Duration::ZERO, cfg().max_ack_delay);
    rtt.on_sample(dur_ms(100), Duration::ZERO, cfg().max_ack_delay);
    let pc = rtt.pto_duration(cfg().max_ack_delay).saturating_mul(PERSISTENT_CONGESTION_THRESHOLD);
    assert_eq!(pc, dur_ms(3 * (100 + 150 + 25)), "the duration the tests below straddle");
    (s, cwnd_before)
}

#[test]
fn persistent_congestion_collapses_cwnd_to_the_minimum_window() {
    let pc = dur_ms(3 * (100 + 150 + 25));
    let (s, _) = two_losses_apart(pc + Duration(1));
    assert_eq!(s.stats().persistent_congestions, 1);
    assert_eq!(s.cwnd().cwnd_bytes, 2 * M, "kMinimumWindow = 2 packets");
    assert_eq!(s.ca_state(), CaState::Loss);
}

#[test]
fn a_span_just_under_the_persistent_congestion_duration_only_reduces() {
    let pc = dur_ms(3 * (100 + 150 + 25));
    let (s, cwnd_before) = two_losses_apart(pc);
    assert_eq!(s.stats().persistent_congestions, 0, "the span must exceed the duration");
    assert_eq!(s.cwnd().cwnd_bytes, (cwnd_before / 2).max(2 * M));
    assert_eq!(s.ca_state(), CaState::Recovery);
    assert_eq!(s.stats().loss_congestion_events, 1);
}

#[test]
fn packets_sent_before_the_first_rtt_sample_do_not_make_persistent_congestion() {
    // Lost packets 0 and 1 span far more than the duration but predate every RTT sample.
    let mut s = QuicSender::new(cfg(), cc("reno"), SimTime::ZERO);
    s.app_write(M);
    drain(&mut s, ms(0));
    s.app_write(4 * M);
    drain(&mut s, ms(5000));
    let _ = s.on_ack(ms(5100), &ack(&[(4, 4)]));
    assert_eq!(s.stats().packets_declared_lost, 2);
    assert_eq!(s.stats().persistent_congestions, 0);
}

// ---------------------------------------------------------------- recovery period (§7.3.2, B.6)

#[test]
fn recovery_period_reduces_once_and_ends_when_a_later_packet_is_acked() {
    let (mut s, second) = warm("reno", cfg());
    assert_eq!(second.first().unwrap().pn, 10);
    assert_eq!(s.cwnd().cwnd_bytes, 12 * M);
    // pn 10 lost (13 ≥ 10 + 3): reduction, cwnd = max(12/2, 2) packets.
    let _ = s.on_ack(ms(200), &ack(&[(0, 9), (13, 13)]));
    assert_eq!(s.ca_state(), CaState::Recovery);
    assert_eq!(s.cwnd().cwnd_bytes, 6 * M);
    assert_eq!(s.cwnd().ssthresh_bytes, 6 * M);
    // §7.3.2: one packet goes out on entering recovery even though in flight > cwnd.
    let rtx = drain(&mut s, ms(200));
    assert_eq!(rtx.len(), 1);
    assert!(rtx[0].retransmit);
    // pn 11, sent before the recovery start, is lost: no second reduction, and no growth from
    // the ACKs of packets sent before recovery.
    let o = s.on_ack(ms(201), &ack(&[(0, 9), (13, 14)]));
    assert_eq!(o.packets_newly_lost, 1);
    assert_eq!(s.cwnd().cwnd_bytes, 6 * M);
    assert_eq!(s.stats().loss_congestion_events, 1);
    assert_eq!(s.stats().packets_declared_lost, 2);
    // The retransmission (sent at 200 ms, after the start) acknowledged: recovery is over.
    let _ = s.on_ack(ms(300), &ack(&[(0, 9), (12, 22)]));
    assert_eq!(s.ca_state(), CaState::Open);
    // A later loss of a packet sent after the recovery start reduces again.
    let more = drain(&mut s, ms(300));
    assert!(!more.is_empty());
    let first = more[0].pn;
    let _ = s.on_ack(ms(400), &ack(&[(0, 9), (12, 22), (first + 3, first + 3)]));
    assert_eq!(s.stats().loss_congestion_events, 2);
}

#[test]
fn reno_halves_and_cubic_keeps_seven_tenths() {
    for (flavor, lo, hi) in [("reno", 0.5, 0.5), ("cubic", 0.69, 0.71)] {
        let (mut s, _) = warm(flavor, cfg());
        let before = s.cwnd().cwnd_bytes;
        let _ = s.on_ack(ms(200), &ack(&[(0, 9), (13, 13)]));
        let after = s.cwnd().cwnd_bytes;
        let ratio = after as f64 / before as f64;
        assert!((lo..=hi).contains(&ratio), "{flavor}: {before} → {after} ({ratio})");
        assert_eq!(after, s.cwnd().ssthresh_bytes, "{flavor}: cwnd = ssthresh");
    }
}

// ---------------------------------------------------------------- flow control (RFC 9000 §4)

#[test]
fn flow_control_limits_new_data_and_resumes_when_credit_rises() {
    let mut c = cfg();
    c.max_data_bytes = Some(3500);
    let mut s = bulk("reno", c);
    let sent = drain(&mut s, ms(0));
    assert_eq!(sent.iter().map(|p| p.len).collect::<Vec<_>>(), vec![MSS, MSS, MSS, 500]);
    assert_eq!(s.next_stream_offset(), 3500);
    let mut a = ack(&[(0, 3)]);
    a.max_data = 7000;
    let _ = s.on_ack(ms(100), &a);
    assert_eq!(s.flow_credit(), 7000);
    let sent = drain(&mut s, ms(100));
    assert_eq!(sent.iter().map(|p| p.len as u64).sum::<u64>(), 3500);
    assert_eq!(sent.last().unwrap().offset + sent.last().unwrap().len as u64, 7000);
    // A frame with a lower limit (reordered) never takes credit back.
    let mut b = ack(&[(0, 4)]);
    b.max_data = 5000;
    let _ = s.on_ack(ms(110), &b);
    assert_eq!(s.flow_credit(), 7000);

    // The stream limit binds the same way; the smaller of the two wins.
    let mut c = cfg();
    c.max_stream_data_bytes = Some(2000);
    c.max_data_bytes = Some(10_000);
    let mut s = bulk("reno", c);
    assert_eq!(drain(&mut s, ms(0)).len(), 2);
    let mut a = ack(&[(0, 1)]);
    a.max_stream_data = 2500;
    let _ = s.on_ack(ms(100), &a);
    let sent = drain(&mut s, ms(100));
    assert_eq!(sent.iter().map(|p| (p.offset, p.len)).collect::<Vec<_>>(), vec![(2000, 500)]);
}

// ---------------------------------------------------------------- ECN (§7.1, RFC 9000 §13.4.1)

#[test]
fn ce_count_rise_reduces_once_per_recovery_period() {
    let mut c = cfg();
    c.ecn = SenderEcn::Classic;
    let (mut s, second) = warm("reno", c);
    assert!(second.iter().all(|p| p.ecn == Ecn::Ect0));
    let counts = |ce| Some(EcnCounts { ect0: 20, ect1: 0, ce });
    let _ = s.on_ack(ms(200), &ack_full(&[(0, 11)], Duration::ZERO, counts(1)));
    assert_eq!(s.ca_state(), CaState::Cwr);
    assert_eq!(s.cwnd().cwnd_bytes, 6 * M);
    assert_eq!(s.stats().ecn_congestion_events, 1);
    // More CE for packets sent before the reduction: no second one.
    let _ = s.on_ack(ms(201), &ack_full(&[(0, 13)], Duration::ZERO, counts(2)));
    assert_eq!(s.stats().ecn_congestion_events, 1);
    assert_eq!(s.cwnd().cwnd_bytes, 6 * M);
    assert_eq!(s.stats().ce_packets_reported, 2);
    // The same count again is no new mark (and Cwr grows nothing for Reno).
    let _ = s.on_ack(ms(202), &ack_full(&[(0, 17)], Duration::ZERO, counts(2)));
    assert_eq!(s.stats().ce_packets_reported, 2);
    assert_eq!(s.cwnd().cwnd_bytes, 6 * M);
    // Packets sent after the reduction, acknowledged with a new CE: a new period and reduction.
    let later = drain(&mut s, ms(210));
    assert_eq!(later.len(), 2, "in flight 4 packets of a 6-packet window");
    let last = later.last().unwrap().pn;
    let _ = s.on_ack(ms(300), &ack_full(&[(0, last)], Duration::ZERO, counts(3)));
    assert_eq!(s.stats().ecn_congestion_events, 2);
    assert_eq!(s.ca_state(), CaState::Cwr);
}

#[test]
fn ce_feedback_reaches_the_controller_as_ece_and_estimated_bytes() {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let rec = Recorder { inner: cc("reno"), samples: samples.clone() };
    let mut c = cfg();
    c.ecn = SenderEcn::L4s;
    let mut s = QuicSender::new(c, Box::new(rec), SimTime::ZERO);
    s.app_write(u64::MAX / 4);
    let sent = drain(&mut s, ms(0));
    assert!(sent.iter().all(|p| p.ecn == Ecn::Ect1));
    // 4 packets of 1000 B newly acknowledged, 3 newly CE: 3 × 1000 B.
    let _ =
        s.on_ack(ms(100), &ack_full(&[(0, 3)], Duration::ZERO, Some(EcnCounts { ect0: 0, ect1: 1, ce: 3 })));
    // 2 packets newly acknowledged, CE count up by 5: capped at the 2000 B acknowledged.
    let _ =
        s.on_ack(ms(101), &ack_full(&[(0, 5)], Duration::ZERO, Some(EcnCounts { ect0: 0, ect1: 1, ce: 8 })));
    // No rise: no ECE.
    let _ =
        s.on_ack(ms(102), &ack_full(&[(0, 6)], Duration::ZERO, Some(EcnCounts { ect0: 0, ect1: 2, ce: 8 })));
    let v = samples.lock().unwrap();
    assert_eq!(
        v.iter().map(|a| (a.ece, a.ce_bytes)).collect::<Vec<_>>(),
        vec![(true, 3 * M), (true, 2 * M), (false, 0)]
    );
    // Controllers' sequence view: snd_nxt counts every byte sent, snd_una the oldest outstanding.
    assert_eq!(v[0].snd_una, 4 * M);
    assert!(v.windows(2).all(|w| w[0].snd_una <= w[1].snd_una && w[0].snd_nxt <= w[1].snd_nxt));
    assert_eq!(v[0].prior_in_flight_bytes, 10 * M);
    assert_eq!(v[0].in_flight_bytes, 6 * M);
}

// ---------------------------------------------------------------- pacing (§7.7)

#[test]
fn pacing_spaces_packets_at_five_quarters_cwnd_over_srtt() {
    let mut c = cfg();
    c.pacing = true;
    let mut s = bulk("reno", c);
    assert_eq!(drain(&mut s, ms(0)).len(), 10, "no pacing before the first RTT sample");
    let _ = s.on_ack(ms(100), &ack(&[(0, 9)]));
    let cwnd = s.cwnd().cwnd_bytes;
    let expect = cwnd * 8 * PACING_GAIN_QUARTERS * 1_000_000_000 / (4 * 100_000_000);
    assert_eq!(s.pacing_rate_bps(), Some(expect));
    assert_eq!(expect, 1_200_000, "1.25 · 12000 B · 8 / 100 ms");
    let mut t = ms(100);
    let gap = Duration::transmission(M, expect);
    for i in 0..5 {
        let p = s.poll_transmit(t).expect("released");
        assert_eq!(p.sent_at, t);
        assert!(s.poll_transmit(t).is_none(), "packet {i}: next one waits for the pacer");
        assert_eq!(s.poll_timeout(), Some(t + gap));
        t += gap;
    }
}

// ---------------------------------------------------------------- spurious loss

#[test]
fn a_packet_declared_lost_then_acknowledged_is_a_spurious_loss() {
    let (mut s, _) = warm("reno", cfg());
    let _ = s.on_ack(ms(200), &ack(&[(0, 9), (13, 13)]));
    assert_eq!(s.pending_retransmit_bytes(), M);
    // pn 10 arrives late after all.
    let o = s.on_ack(ms(205), &ack(&[(0, 10), (13, 13)]));
    assert_eq!(o.packets_newly_acked, 0);
    assert_eq!(s.stats().spurious_losses, 1);
    assert_eq!(s.pending_retransmit_bytes(), 0, "its data is not sent again");
    // Counted once.
    let _ = s.on_ack(ms(206), &ack(&[(0, 10), (13, 14)]));
    assert_eq!(s.stats().spurious_losses, 1);
}

// ---------------------------------------------------------------- whole transfers

/// A tiny network: a 10 Mbit/s bottleneck with a 60-packet queue (tail drop), 20 ms one-way
/// delay each way, every `drop_every`-th packet lost besides, and a receiver that acknowledges
/// every packet at once with up to 32 ranges. Runs until the transfer of `bytes` completes or
/// `max_acks` ACKs; returns the sender.
fn run_path(flavor: &str, c: QuicConfig, bytes: u64, drop_every: u64, max_acks: u64) -> QuicSender {
    let mut s = QuicSender::new(c, cc(flavor), SimTime::ZERO);
    s.app_write(bytes);
    let link_bps = 10_000_000u64;
    let prop = dur_ms(20);
    let mut link_free = SimTime::ZERO;
    let mut in_queue: BTreeMap<SimTime, u64> = BTreeMap::new(); // departure → count, for the queue limit
    let mut acks: BTreeMap<(SimTime, u64), SimTime> = BTreeMap::new(); // (ACK arrival, pn) → received at
    let mut received: BTreeSet<u64> = BTreeSet::new();
    let mut now = SimTime::ZERO;
    let mut n_acks = 0;
    let mut n_sent = 0u64;
    while !s.is_complete() && n_acks < max_acks {
        s.handle_timeout(now);
        while let Some(p) = s.poll_transmit(now) {
            n_sent += 1;
            in_queue.retain(|d, _| *d > now);
            let queued: u64 = in_queue.values().sum();
            if n_sent.is_multiple_of(drop_every) || queued >= 60 {
                continue;
            }
            let depart = link_free.max(now) + Duration::transmission(p.len.max(1) as u64 + 50, link_bps);
            link_free = depart;
            *in_queue.entry(depart).or_default() += 1;
            let arrive = depart + prop;
            acks.insert((arrive + prop, p.pn), arrive);
        }
        let next_ack = acks.keys().next().map(|k| k.0);
        let next = match (next_ack, s.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("a stalled sender"),
        };
        assert!(next >= now, "time runs forward");
        now = next;
        while let Some((&(t, pn), &rx)) = acks.iter().next() {
            if t > now {
                break;
            }
            acks.remove(&(t, pn));
            received.insert(pn);
            let mut ranges: Vec<(u64, u64)> = Vec::new();
            for &q in received.iter().rev() {
                let full = ranges.len() == MAX_ACK_RANGES;
                match ranges.last_mut() {
                    Some(r) if r.0 == q + 1 => r.0 = q,
                    _ if full => break,
                    _ => ranges.push((q, q)),
                }
            }
            let mut a = ack(&ranges);
            a.largest_received_at = rx;
            let _ = s.on_ack(now, &a);
            n_acks += 1;
        }
    }
    s
}

#[test]
fn transfers_complete_over_a_lossy_bottleneck() {
    for flavor in ["reno", "cubic"] {
        for pacing in [false, true] {
            let mut c = cfg();
            c.pacing = pacing;
            let s = run_path(flavor, c, 2_000 * M, 97, 1_000_000);
            assert!(s.is_complete(), "{flavor} pacing={pacing}");
            let st = s.stats();
            assert!(st.packets_declared_lost >= 20, "{flavor}: {st:?}");
            assert!(st.bytes_retransmitted >= st.bytes_declared_lost - st.spurious_losses * M, "{st:?}");
            assert!(st.loss_congestion_events >= 1);
            assert_eq!(s.in_flight_bytes(), 0);
        }
    }
}

#[test]
fn bbr_runs_hundreds_of_acks_and_sets_its_pacing_rate() {
    let s = run_path("bbr", cfg(), u64::MAX / 4, 211, 600);
    assert_eq!(s.cc_name(), "bbr");
    assert!(s.stats().acks_received >= 600);
    let rate = s.cwnd().pacing_rate_bps.expect("BBR sets a pacing rate");
    assert!(rate > 0);
    assert_eq!(s.pacing_rate_bps(), Some(rate), "the controller's rate is used");
    assert!(s.cc_owns_cwnd());
    assert!(!s.cc_mode().is_empty());
    assert!(s.cwnd().cwnd_bytes >= 2 * M);
    let done = run_path("bbr", cfg(), 500 * M, 211, 1_000_000);
    assert!(done.is_complete());
}

// ---------------------------------------------------------------- range helpers

#[test]
fn range_set_interval_helpers() {
    let mut r = RangeSet::new();
    r.insert(0, 10);
    r.insert(20, 30);
    assert!(r.contains_range(2, 10) && r.contains_range(5, 5) && !r.contains_range(5, 11));
    assert_eq!(r.first_gap(0, 40), Some((10, 20)));
    assert_eq!(r.first_gap(25, 40), Some((30, 40)));
    assert_eq!(r.first_gap(12, 15), Some((12, 15)));
    assert_eq!(r.first_gap(20, 30), None);
    r.remove(5, 25);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![(0, 5), (25, 30)]);
    assert_eq!(r.len(), 10);
    r.remove(1, 2);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![(0, 1), (2, 5), (25, 30)]);
    assert_eq!(r.first_range(), Some((0, 1)));
    r.remove(0, 100);
    assert!(r.is_empty());
}

// ---------------------------------------------------------------- hostile ACK frames

/// A frame with `ranges` exactly as given (any order, overlaps, `count` possibly beyond the
/// array), `largest` as given, a huge ACK delay and absurd credit and ECN counts.
fn raw_ack(largest: u64, ranges: &[(u64, u64)], count: u8) -> AckFrame {
    let mut arr = [PnRange::default(); MAX_ACK_RANGES];
    for (slot, &(lo, hi)) in arr.iter_mut().zip(ranges) {
        *slot = PnRange { smallest: lo, largest: hi };
    }
    AckFrame {
        largest,
        ack_delay: Duration(u64::MAX),
        ranges: arr,
        range_count: count,
        ecn: Some(EcnCounts { ect0: u64::MAX, ect1: u64::MAX, ce: u64::MAX }),
        largest_received_at: SimTime(u64::MAX),
        max_data: u64::MAX,
        max_stream_data: u64::MAX,
        credit_update: true,
    }
}

#[test]
fn malformed_acks_do_not_panic() {
    let mut c = cfg();
    c.ecn = SenderEcn::Classic;
    let (mut s, _) = warm("cubic", c);
    let next = s.next_pn();
    assert!(next > 12);
    let before = *s.stats();
    // Ignored whole: a largest at or beyond the next packet number, no range, or every range
    // beyond what was sent; nothing is acknowledged and no RTT sample is taken.
    for a in [
        raw_ack(next, &[(0, next)], 1),
        raw_ack(u64::MAX, &[(0, u64::MAX)], 1),
        raw_ack(5, &[(0, 5)], 0),
        raw_ack(5, &[(next, next + 9)], 1),
        raw_ack(5, &[(7, 3)], 1), // a range that ends before it starts
    ] {
        let o = s.on_ack(ms(150), &a);
        assert_eq!((o.packets_newly_acked, o.rtt), (0, None), "{a:?}");
    }
    assert_eq!(s.stats().rtt_samples, before.rtt_samples);
    // A range count beyond MAX_ACK_RANGES, ranges ascending and overlapping, largest not the
    // first range's: clipped, never a panic, and each packet acknowledged once.
    let ascending: Vec<(u64, u64)> = (0..MAX_ACK_RANGES as u64).map(|i| (10 + i / 3, 11 + i / 2)).collect();
    let o = s.on_ack(ms(160), &raw_ack(11, &ascending, 200));
    assert!(o.packets_newly_acked <= 2, "{o:?}");
    let again = s.on_ack(ms(161), &raw_ack(11, &[(10, 11), (10, 11), (0, 20)], 3));
    assert_eq!(again.packets_newly_acked, 0, "packets 10 and 11 were already acknowledged: {again:?}");
    // Everything sent so far, with a duplicate and an out-of-order range: each packet once.
    let last = s.next_pn() - 1;
    let o = s.on_ack(ms(200), &raw_ack(last, &[(12, last), (0, last), (12, 12)], 3));
    assert_eq!(o.packets_newly_acked, last + 1 - 12, "{o:?}");
    assert_eq!(s.in_flight_bytes(), 0);
    // The huge ACK delay is capped at max_ack_delay (RFC 9002 §5.3): the RTT stays finite.
    assert!(s.srtt().unwrap() < dur_ms(1000), "{:?}", s.srtt());
    // And the sender goes on sending.
    assert!(!drain(&mut s, ms(200)).is_empty());
}

#[test]
fn sanitize_ack_keeps_well_formed_frames_and_clips_the_rest() {
    use ccarena_transport::quic::sender::sanitize_ack;
    let good = ack(&[(0, 3), (6, 9), (20, 20)]);
    assert_eq!(sanitize_ack(&good), Some(good));
    // Adjacent ranges keep every number they acknowledge.
    assert_eq!(sanitize_ack(&ack(&[(0, 4), (5, 9)])).unwrap().ranges(), ack(&[(0, 4), (5, 9)]).ranges());
    // Ascending and overlapping: each clipped below its predecessor, or dropped.
    let bad = raw_ack(99, &[(5, 9), (7, 20), (0, 6), (3, 4)], 4);
    let clean = sanitize_ack(&bad).unwrap();
    assert_eq!(clean.ranges(), &[PnRange { smallest: 5, largest: 9 }, PnRange { smallest: 0, largest: 4 }]);
    assert_eq!(clean.largest, 9);
    assert_eq!(sanitize_ack(&raw_ack(1, &[(3, 2)], 1)), None);
    assert_eq!(sanitize_ack(&raw_ack(1, &[(0, 1)], 0)), None);
    assert_eq!(sanitize_ack(&raw_ack(1, &[(0, 1)], 255)).unwrap().range_count, 1);
}
