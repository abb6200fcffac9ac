//! Accurate ECN (RFC 9768) end to end: the IP ECN codepoints, the receiver's counters and ACK
//! triggers, the sender's decoding of ACE and the AccECN option under ACE wrap, ACK loss and ACK
//! reordering, and the sender's reaction (ECT(1), no CWR, at most one reduction per round trip).

use std::sync::{Arc, Mutex};

use ccarena_cc::{AckSample, CongestionControl, CwndState, Duration, LossEvent, RateSample, SimTime};
use ccarena_transport::accecn::{AccEcnDecoder, ACCECN_CEP_INIT};
use ccarena_transport::receiver::ACCECN_CE_PER_ACK;
use ccarena_transport::{
    AccEcnFeedback, AccEcnOption, AckSegment, DataSegment, Ecn, EcnMode, Receiver, ReceiverConfig, RecoveryMode,
    SenderConfig, SenderEcn,
};
use proptest::prelude::*;
use crate::support::*;

const M: u64 = MSS as u64;

// ---- codepoints (RFC 3168 §5, RFC 9331 §5.1) ----

#[test]
fn codepoints_have_the_ip_header_bits_and_marking_turns_ect_into_ce() {
    let all = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
    for (bits, e) in all.iter().enumerate() {
        assert_eq!(e.bits(), bits as u8);
        assert_eq!(Ecn::from_bits(bits as u8), *e);
        assert_eq!(Ecn::from_bits(0b1111_1100 | bits as u8), *e, "only the low two bits count");
    }
    assert_eq!(Ecn::NotEct.marked(), Ecn::NotEct, "a Not-ECT packet is never marked");
    assert_eq!(Ecn::Ect0.marked(), Ecn::Ce);
    assert_eq!(Ecn::Ect1.marked(), Ecn::Ce);
    assert_eq!(Ecn::Ce.marked(), Ecn::Ce, "marking twice changes nothing");
    let ect: Vec<bool> = all.iter().map(|e| e.is_ect()).collect();
    assert_eq!(ect, [false, true, true, true]);
    let l4s: Vec<bool> = all.iter().map(|e| e.is_l4s()).collect();
    assert_eq!(l4s, [false, true, false, true], "ECT(1) and CE are L4S");
    let ce: Vec<bool> = all.iter().map(|e| e.is_ce()).collect();
    assert_eq!(ce, [false, false, false, true]);
}

#[test]
fn senders_set_the_codepoint_of_their_ecn_mode_and_never_on_retransmissions() {
    for (ecn, want) in [(SenderEcn::Off, Ecn::NotEct), (SenderEcn::Classic, Ecn::Ect0), (SenderEcn::L4s, Ecn::Ect1)] {
        assert_eq!(ecn.codepoint(), want);
        let cfg = SenderConfig { ecn, ..sender_cfg(RecoveryMode::Prr) };
        let mut s = ccarena_transport::Sender::new(cfg, controller_for(RecoveryMode::Prr), SimTime::ZERO);
        s.app_write(4 * M);
        let segs = drain(&mut s, SimTime::ZERO);
        assert!(segs.iter().all(|x| x.ecn == want), "{ecn:?}");
        s.handle_timeout(SimTime(2_000_000_000));
        let rtx = drain(&mut s, SimTime(2_000_000_000));
        assert!(rtx[0].retransmit && rtx[0].ecn == Ecn::NotEct, "RFC 3168 §6.1.5");
    }
}

// ---- the receiver (RFC 9768 §3.2.1, §3.2.2.5.1) ----

fn accecn_receiver(mode: EcnMode) -> Receiver {
    Receiver::new(ReceiverConfig { ecn: mode, ..receiver_cfg() })
}

fn seg(n: u64, ecn: Ecn) -> DataSegment {
    DataSegment { seq: n * M, len: MSS, ts_val: SimTime(n * 1_000_000), ecn, cwr: false, retransmit: false }
}

#[test]
fn counters_start_at_the_rfc_values_and_count_bytes_per_codepoint() {
    let mut r = accecn_receiver(EcnMode::AccEcn);
    let _ = r.on_segment(ms(0), &seg(0, Ecn::Ect1));
    let _ = r.on_segment(ms(1), &seg(1, Ecn::Ect0));
    let a = r.poll_ack(ms(1)).expect("two full segments");
    assert!(!a.ece, "AccECN receivers never set ECE");
    let fb = a.accecn.expect("AccECN feedback");
    // r.cep starts at 5, r.e0b and r.e1b at 1, r.ceb at 0.
    assert_eq!(fb.ace, 5);
    assert_eq!(fb.option, Some(AccEcnOption { e0b: 1 + MSS, ceb: 0, e1b: 1 + MSS }));
    // A CE mark after a non-CE segment: ACK at once (change-triggered), ACE 6.
    let _ = r.on_segment(ms(2), &seg(2, Ecn::Ce));
    let fb = r.poll_ack(ms(2)).expect("change-triggered ACK").accecn.unwrap();
    assert_eq!(fb.ace, 6);
    assert_eq!(fb.option.unwrap().ceb, MSS);
    assert_eq!((r.stats().ce_segments, r.stats().ce_bytes), (1, M));
}

#[test]
fn ce_marks_trigger_acks_so_ace_cannot_wrap_between_acks() {
    let mut r = accecn_receiver(EcnMode::AccEcn);
    let _ = r.on_segment(ms(0), &seg(0, Ecn::Ce));
    assert!(r.poll_ack(ms(0)).is_some(), "first CE: change-triggered");
    // A run of CE marks: an ACK at least every ACCECN_CE_PER_ACK marks, whatever the delayed-ACK
    // policy says.
    let mut since_ack = 0;
    let mut last_ace = (ACCECN_CEP_INIT + 1) % 8;
    for n in 1..40 {
        let _ = r.on_segment(ms(n), &DataSegment { len: 100, ..seg(n, Ecn::Ce) });
        since_ack += 1;
        if let Some(a) = r.poll_ack(ms(n)) {
            let ace = a.accecn.unwrap().ace as u64;
            assert_eq!((ace + 8 - last_ace) % 8, since_ack);
            last_ace = ace;
            since_ack = 0;
        }
        assert!(since_ack < ACCECN_CE_PER_ACK as u64);
    }
}

#[test]
fn the_ace_only_mode_sends_no_option_and_classic_modes_send_no_accecn() {
    let mut r = accecn_receiver(EcnMode::AccEcnAceOnly);
    let _ = r.on_segment(ms(0), &seg(0, Ecn::Ce));
    assert_eq!(r.poll_ack(ms(0)).unwrap().accecn, Some(AccEcnFeedback { ace: 6, option: None }));
    for mode in [EcnMode::Off, EcnMode::Classic, EcnMode::Dctcp] {
        let mut r = accecn_receiver(mode);
        let _ = r.on_segment(ms(0), &seg(0, Ecn::Ce));
        r.handle_timeout(ms(100));
        let a = r.poll_ack(ms(100)).expect("at once or at the delayed-ACK deadline");
        assert_eq!(a.accecn, None);
        assert_eq!(a.ece, mode != EcnMode::Off);
        assert_eq!(r.stats().ce_bytes, M, "CE bytes are counted in every mode");
    }
}

#[test]
fn cwr_does_not_clear_accecn_feedback() {
    let mut r = accecn_receiver(EcnMode::AccEcn);
    let _ = r.on_segment(ms(0), &seg(0, Ecn::Ce));
    let a = r.poll_ack(ms(0)).unwrap().accecn.unwrap();
    let _ = r.on_segment(ms(1), &DataSegment { cwr: true, ..seg(1, Ecn::Ect1) });
    let _ = r.on_segment(ms(2), &seg(2, Ecn::Ect1));
    let b = r.poll_ack(ms(2)).unwrap().accecn.unwrap();
    assert_eq!(a.ace, b.ace);
    assert_eq!(a.option.unwrap().ceb, b.option.unwrap().ceb);
}

// ---- receiver → sender decoding, as properties ----

/// Feed `segs` (payload bytes, CE?) in order, 1 ms apart, ECT(1) unless CE, to a receiver in
/// `mode`; return it and every ACK it sent (the last one flushing the delayed ACK).
fn run_receiver(mode: EcnMode, segs: &[(u32, bool)]) -> (Receiver, Vec<AckSegment>) {
    let mut r = accecn_receiver(mode);
    let mut acks = Vec::new();
    let mut seq = 0u64;
    for (i, &(len, ce)) in segs.iter().enumerate() {
        let now = ms(i as u64);
        let ecn = if ce { Ecn::Ce } else { Ecn::Ect1 };
        let _ = r.on_segment(now, &DataSegment { seq, len, ts_val: now, ecn, cwr: false, retransmit: false });
        seq += len as u64;
        acks.extend(r.poll_ack(now));
    }
    let end = ms(segs.len() as u64 + 1_000);
    r.handle_timeout(end);
    acks.extend(r.poll_ack(end));
    (r, acks)
}

/// Decode `acks` in the order given, as a sender whose snd.una follows the cumulative ACKs.
/// Returns the decoder and the sum of the CE bytes each ACK fed back.
fn decode(acks: &[&AckSegment]) -> (AccEcnDecoder, u64) {
    let mut d = AccEcnDecoder::new();
    let mut una = 0u64;
    let mut bytes = 0u64;
    for a in acks {
        let superseded = a.ack < una;
        let newly = a.ack.saturating_sub(una);
        una = una.max(a.ack);
        bytes += d.on_ack(&a.accecn.expect("AccECN ACK"), newly, superseded, M).ce_bytes;
    }
    (d, bytes)
}

fn segments() -> impl Strategy<Value = Vec<(u32, bool)>> {
    (0u32..=100).prop_flat_map(|p| {
        prop::collection::vec((1u32..=MSS, 0u32..100).prop_map(move |(len, x)| (len, x < p)), 1..300)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// No ACK lost, ACKs reordered at random (adjacent swaps): the CE bytes fed back add up to
    /// exactly the bytes the receiver got CE-marked, and the packets too.
    #[test]
    fn no_ack_lost_the_sender_learns_every_marked_byte(segs in segments(), swaps in prop::collection::vec(any::<bool>(), 300)) {
        let (r, acks) = run_receiver(EcnMode::AccEcn, &segs);
        let mut order: Vec<&AckSegment> = acks.iter().collect();
        for i in 1..order.len() {
            if swaps[i % swaps.len()] {
                order.swap(i - 1, i);
            }
        }
        // The newest ACK is processed last or overtakes older ones: either way its counters win.
        let (d, bytes) = decode(&order);
        prop_assert_eq!(bytes, r.stats().ce_bytes);
        prop_assert_eq!(d.ce_bytes(), r.stats().ce_bytes);
        prop_assert_eq!(d.ce_packets(), r.stats().ce_segments);
    }

    /// ACKs lost at random (the last one arrives): the byte counters still give the exact total.
    /// With full-sized marked segments, the packet count too, however far ACE wrapped.
    #[test]
    fn lost_acks_do_not_lose_marked_bytes(segs in segments(), keep in prop::collection::vec(0u8..100, 300), keep_pct in 0u8..100, full in any::<bool>()) {
        let segs: Vec<(u32, bool)> = if full { segs.iter().map(|&(_, ce)| (MSS, ce)).collect() } else { segs };
        let (r, acks) = run_receiver(EcnMode::AccEcn, &segs);
        let n = acks.len();
        let kept: Vec<&AckSegment> = acks.iter().enumerate().filter(|(i, _)| *i == n - 1 || keep[i % keep.len()] < keep_pct).map(|(_, a)| a).collect();
        let (d, bytes) = decode(&kept);
        prop_assert_eq!(bytes, r.stats().ce_bytes);
        if full {
            prop_assert_eq!(d.ce_packets(), r.stats().ce_segments);
        } else {
            prop_assert!(d.ce_packets() <= r.stats().ce_segments);
            prop_assert_eq!(d.ce_packets() % 8, r.stats().ce_segments % 8, "ACE's residue is exact");
        }
    }

    /// The 24-bit byte counters wrap many times over a long run; as long as fewer than 2^24
    /// marked bytes pass between processed ACKs, every delta is exact.
    #[test]
    fn byte_counters_decode_exactly_across_24_bit_wraps(incs in prop::collection::vec(0u64..(1 << 24), 1..100)) {
        let mut d = AccEcnDecoder::new();
        let (mut ceb, mut cep) = (0u64, ACCECN_CEP_INIT);
        let mut sum = 0u64;
        for inc in incs {
            ceb += inc;
            cep += inc.div_ceil(M);
            let fb = AccEcnFeedback {
                ace: (cep % 8) as u8,
                option: Some(AccEcnOption { e0b: 1, ceb: (ceb % (1 << 24)) as u32, e1b: 1 }),
            };
            let x = d.on_ack(&fb, inc.max(1), false, M);
            prop_assert_eq!(x.ce_bytes, inc);
            sum += x.ce_bytes;
        }
        prop_assert_eq!(sum, ceb);
    }

    /// ACE alone (RFC 9768 §3.2.2.5, Appendix A.2): the decoded count is congruent to the true
    /// one mod 8, never below it when the ACK acknowledged at least as many packets as were
    /// marked, never above the packets acknowledged, and exact when fewer than 8 were.
    #[test]
    fn ace_only_decoding_is_conservative_under_wrap(start in 0u64..1000, marks in 0u64..200, extra in 0u64..200) {
        let d_pkts = marks + extra;
        let mut d = AccEcnDecoder::new();
        // Bring s.cep to `start` marks first.
        let _ = d.on_ack(&AccEcnFeedback { ace: ((ACCECN_CEP_INIT + start) % 8) as u8, option: None }, start * M, false, M);
        let before = d.ce_packets();
        let fb = AccEcnFeedback { ace: ((ACCECN_CEP_INIT + before + marks) % 8) as u8, option: None };
        let x = d.on_ack(&fb, d_pkts * M, false, M);
        prop_assert_eq!(x.ce_packets % 8, marks % 8);
        prop_assert!(x.ce_packets >= marks);
        prop_assert!(x.ce_packets <= d_pkts.max(marks % 8));
        if d_pkts < 8 {
            prop_assert_eq!(x.ce_packets, marks);
        }
        prop_assert_eq!(x.ce_bytes, x.ce_packets * M);
    }

    /// ACE alone with no ACK lost: the receiver's ACK triggers keep every step below 8, so the
    /// packet count is exact.
    #[test]
    fn ace_only_with_every_ack_counts_every_mark(segs in segments()) {
        let (r, acks) = run_receiver(EcnMode::AccEcnAceOnly, &segs);
        let all: Vec<&AckSegment> = acks.iter().collect();
        let (d, _) = decode(&all);
        prop_assert_eq!(d.ce_packets(), r.stats().ce_segments);
    }
}

// ---- the sender's reaction ----

/// Reno, summing the CE bytes and counting the ECE flags of every ACK sample.
#[derive(Debug)]
struct CeTally {
    inner: Box<dyn CongestionControl>,
    ce_bytes: Arc<Mutex<(u64, u64)>>,
}

impl CongestionControl for CeTally {
    fn name(&self) -> &'static str {
        "ce-tally"
    }
    fn init(&mut self, st: &mut CwndState, now: SimTime) {
        self.inner.init(st, now);
    }
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.inner.cong_avoid(st, ack);
    }
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.inner.ssthresh(st, ev)
    }
    fn cong_control(&mut self, st: &mut CwndState, ack: &AckSample, rs: &RateSample) -> bool {
        let mut t = self.ce_bytes.lock().unwrap();
        t.0 += ack.ce_bytes;
        t.1 += u64::from(ack.ece);
        assert_eq!(ack.ece, ack.ce_bytes > 0, "ECE is 'some bytes marked'");
        self.inner.cong_control(st, ack, rs)
    }
}

fn l4s_pair(marked: impl Fn(u64) -> bool + 'static, rev: LinkCfg, fwd_loss: f64) -> (Pair, Arc<Mutex<(u64, u64)>>) {
    let tally = Arc::new(Mutex::new((0, 0)));
    let cc = Box::new(CeTally { inner: controller_for(RecoveryMode::Prr), ce_bytes: tally.clone() });
    let scfg = SenderConfig { ecn: SenderEcn::L4s, ..sender_cfg(RecoveryMode::Prr) };
    let rcfg = ReceiverConfig { ecn: EcnMode::AccEcn, ..receiver_cfg() };
    let fwd = LinkCfg { loss: fwd_loss, ..LinkCfg::clean(Duration::from_millis(10)) };
    let mut p = Pair::new(scfg, cc, rcfg, fwd, rev, 7);
    p.filter = Box::new(move |s| if !s.retransmit && marked(s.seq / M) { Fate::MarkCe } else { Fate::Deliver });
    (p, tally)
}

#[test]
fn an_l4s_sender_sends_ect1_never_cwr_and_reduces_at_most_once_per_round_trip() {
    // Every 4th segment from 40 on is marked: a steady marking rate, many marks per RTT.
    let (mut p, tally) = l4s_pair(|n| n >= 40 && n % 4 == 0, LinkCfg::clean(Duration::from_millis(10)), 0.0);
    assert!(p.transfer(400 * M, SimTime(20_000_000_000)));
    p.run_until(p.now + Duration::from_secs(1));
    p.assert_delivered_exactly(400 * M);
    assert!(p.sent_log.iter().all(|(_, s)| s.ecn == Ecn::Ect1), "ECT(1) data");
    assert!(p.sent_log.iter().all(|(_, s)| !s.cwr), "no CWR flag in AccECN mode");
    assert!(p.ack_log.iter().all(|(_, a)| !a.ece && a.accecn.is_some()));
    let st = *p.sender.stats();
    let r = *p.receiver.stats();
    assert_eq!(r.ce_segments, (40..400).filter(|n| n % 4 == 0).count() as u64);
    assert_eq!((st.accecn_ce_bytes, st.accecn_ce_packets), (r.ce_bytes, r.ce_segments));
    assert_eq!(tally.lock().unwrap().0, r.ce_bytes, "the controller saw every marked byte");
    // Marks arrive on most round trips, but each reduction holds for a round trip (~20 ms).
    let ecn_acks = tally.lock().unwrap().1;
    assert!(st.ecn_reductions >= 2 && st.ecn_reductions < ecn_acks, "{} reductions for {ecn_acks} marking ACKs", st.ecn_reductions);
    let entered: Vec<SimTime> = p
        .trace
        .windows(2)
        .filter(|w| w[1].state == ccarena_cc::CaState::Cwr && w[0].state != ccarena_cc::CaState::Cwr)
        .map(|w| w[1].now)
        .collect();
    for w in entered.windows(2) {
        assert!(w[1] - w[0] >= Duration::from_millis(20), "two reductions within a round trip: {w:?}");
    }
}

#[test]
fn lost_data_and_reordered_acks_still_deliver_every_marked_byte_to_the_controller() {
    let rev = LinkCfg {
        reorder: 0.2,
        reorder_extra: Duration::from_millis(3),
        ..LinkCfg::clean(Duration::from_millis(10))
    };
    let (mut p, tally) = l4s_pair(|n| n % 3 == 0, rev, 0.02);
    assert!(p.transfer(300 * M, SimTime(60_000_000_000)));
    p.run_until(p.now + Duration::from_secs(5));
    p.assert_delivered_exactly(300 * M);
    let r = *p.receiver.stats();
    assert!(r.ce_segments >= 80, "most marked segments arrive");
    assert_eq!(p.sender.stats().accecn_ce_bytes, r.ce_bytes);
    assert_eq!(tally.lock().unwrap().0, r.ce_bytes);
}
