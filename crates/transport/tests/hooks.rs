//! How the sender drives the congestion controller: which hooks, when, with what.

use std::sync::{Arc, Mutex};

use ccarena_cc::{
    AckSample, CaState, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind,
    RateSample, SimTime,
};
use ccarena_transport::{RecoveryMode, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;

#[derive(Clone, Debug)]
enum Call {
    Init,
    HandshakeRtt(Duration),
    PktsAcked(AckSample),
    CongAvoid(AckSample),
    Ssthresh(LossEvent),
    SetState(CaState),
    Event(CwndEvent),
    CongControl(RateSample),
}

/// Reno, with every hook call logged.
#[derive(Debug)]
struct Recorder {
    inner: Box<dyn CongestionControl>,
    log: Arc<Mutex<Vec<Call>>>,
}

impl Recorder {
    fn push(&self, c: Call) {
        self.log.lock().unwrap().push(c);
    }
}

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn init(&mut self, st: &mut CwndState, now: SimTime) {
        self.push(Call::Init);
        self.inner.init(st, now);
    }
    fn on_handshake_rtt(&mut self, st: &mut CwndState, rtt: Duration, now: SimTime) {
        self.push(Call::HandshakeRtt(rtt));
        self.inner.on_handshake_rtt(st, rtt, now);
    }
    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.push(Call::PktsAcked(*ack));
        self.inner.pkts_acked(st, ack);
    }
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.push(Call::CongAvoid(*ack));
        self.inner.cong_avoid(st, ack);
    }
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.push(Call::Ssthresh(*ev));
        self.inner.ssthresh(st, ev)
    }
    fn set_state(&mut self, st: &mut CwndState, new: CaState, now: SimTime) {
        self.push(Call::SetState(new));
        self.inner.set_state(st, new, now);
    }
    fn cwnd_event(&mut self, st: &mut CwndState, ev: CwndEvent, now: SimTime) {
        self.push(Call::Event(ev));
        self.inner.cwnd_event(st, ev, now);
    }
    fn cong_control(&mut self, st: &mut CwndState, ack: &AckSample, rs: &RateSample) -> bool {
        self.push(Call::CongControl(*rs));
        self.inner.cong_control(st, ack, rs)
    }
}

fn recorded_run(mode: RecoveryMode) -> (Pair, Vec<Call>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let cc = Box::new(Recorder {
        inner: controller_for(mode),
        log: log.clone(),
    });
    let cfg = SenderConfig {
        initial_cwnd_bytes: 20 * M,
        ..sender_cfg(mode)
    };
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(cfg, cc, receiver_cfg(), link, link, 1);
    p.filter = Box::new(|s| {
        if !s.retransmit && [5, 9].contains(&(s.seq / M)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    assert!(p.transfer(120 * M, SimTime(30_000_000_000)));
    p.assert_delivered_exactly(120 * M);
    let calls = log.lock().unwrap().clone();
    (p, calls)
}

#[test]
fn hook_order_and_arguments_during_a_recovery() {
    for mode in [RecoveryMode::NewReno, RecoveryMode::Sack, RecoveryMode::Prr] {
        let (p, calls) = recorded_run(mode);
        assert!(matches!(calls[0], Call::Init), "{mode}: init first");
        assert_eq!(calls.iter().filter(|c| matches!(c, Call::Init)).count(), 1);
        assert!(
            matches!(calls[1], Call::Event(CwndEvent::TxStart)),
            "{mode}: TxStart on the first send"
        );

        let ss: Vec<_> = calls
            .iter()
            .filter_map(|c| {
                if let Call::Ssthresh(e) = c {
                    Some(*e)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(ss.len(), 1, "{mode}: one congestion event");
        assert_eq!(ss[0].kind, LossKind::FastRetransmit);
        assert!(ss[0].flight_size_bytes >= 20 * M);

        let states: Vec<_> = calls
            .iter()
            .filter_map(|c| {
                if let Call::SetState(s) = c {
                    Some(*s)
                } else {
                    None
                }
            })
            .collect();
        assert!(
            states.windows(2).all(|w| w[0] != w[1]),
            "{mode}: set_state only on transitions: {states:?}"
        );
        let rec = states
            .iter()
            .position(|s| *s == CaState::Recovery)
            .expect("Recovery");
        assert_eq!(
            states[rec + 1..].first(),
            Some(&CaState::Open),
            "{mode}: {states:?}"
        );
        assert_eq!(p.sender.ca_state(), CaState::Open);

        let mut acks = 0;
        for c in &calls {
            match c {
                Call::PktsAcked(a) => {
                    acks += 1;
                    assert!(a.bytes_acked > 0, "pkts_acked only when data is delivered");
                    assert!(a.snd_una <= a.snd_nxt);
                    assert_eq!(
                        a.one_way_delay,
                        Some(Duration::from_millis(10)),
                        "clean 10 ms path"
                    );
                    assert!(a.srtt.is_some() && a.min_rtt.is_some());
                }
                Call::CongAvoid(a) => {
                    assert!(
                        !matches!(a.state, CaState::Recovery | CaState::Cwr),
                        "{mode}: cong_avoid in {:?}",
                        a.state
                    );
                    assert!(a.bytes_acked > 0);
                }
                _ => {}
            }
        }
        let rates: Vec<RateSample> = calls
            .iter()
            .filter_map(|c| match c {
                Call::CongControl(r) => Some(*r),
                _ => None,
            })
            .collect();
        assert!(rates
            .windows(2)
            .all(|w| w[0].total_delivered_bytes <= w[1].total_delivered_bytes));
        assert_eq!(
            rates.last().unwrap().total_delivered_bytes,
            120 * M,
            "every byte counted as delivered exactly once"
        );
        let cc_calls = rates.len();
        assert_eq!(
            cc_calls as u64,
            p.sender.stats().acks_received,
            "cong_control on every ACK"
        );
        assert!(acks > 0);
        // RTT samples for the controller: the path is 20 ms plus delayed-ACK waits.
        assert!(p.sender.min_rtt().unwrap() >= Duration::from_millis(20));
    }
}

#[test]
fn cong_avoid_sees_cwnd_limited_in_bulk_slow_start() {
    let (_, calls) = recorded_run(RecoveryMode::Prr);
    let limited = calls
        .iter()
        .filter(|c| matches!(c, Call::CongAvoid(a) if a.cwnd_limited))
        .count();
    assert!(limited > 10, "a bulk sender fills its window: {limited}");
}

#[test]
fn tx_start_after_idle() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let cc = Box::new(Recorder {
        inner: controller_for(RecoveryMode::Sack),
        log: log.clone(),
    });
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(
        sender_cfg(RecoveryMode::Sack),
        cc,
        receiver_cfg(),
        link,
        link,
        1,
    );
    assert!(p.transfer(5 * M, SimTime(10_000_000_000)));
    p.run_until(p.now + Duration::from_secs(1));
    assert!(p.transfer(5 * M, SimTime(20_000_000_000)));
    let starts = log
        .lock()
        .unwrap()
        .iter()
        .filter(|c| matches!(c, Call::Event(CwndEvent::TxStart)))
        .count();
    assert_eq!(starts, 2);
}

#[test]
fn a_controller_that_owns_the_window_keeps_it_through_recovery() {
    let cc = Box::new(FixedRate {
        cwnd_bytes: 30 * M,
        rate_bps: 100_000_000,
    });
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(
        sender_cfg(RecoveryMode::Prr),
        cc,
        receiver_cfg(),
        link,
        link,
        1,
    );
    p.filter = Box::new(|s| {
        if !s.retransmit && [40, 44, 48].contains(&(s.seq / M)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    assert!(p.transfer(200 * M, SimTime(30_000_000_000)));
    p.assert_delivered_exactly(200 * M);
    assert!(p.sender.cc_owns_cwnd());
    let st = p.sender.stats();
    assert_eq!(
        (st.fast_recoveries, st.rto_count, st.segments_retransmitted),
        (1, 0, 3)
    );
    assert!(p.trace.iter().any(|t| t.state == CaState::Recovery));
    assert!(
        p.trace.iter().all(|t| t.cwnd == 30 * M),
        "no PRR or inflation applied"
    );
}

#[test]
fn a_handshake_rtt_is_the_first_rtt_sample_and_reaches_the_controller_after_init() {
    // Linux takes the SYN-ACK's RTT (tcp_ack_update_rtt) before tcp_init_congestion_control: SRTT,
    // RTTVAR (RFC 6298 §2.2: R and R/2), the RTO and the minimum RTT start from it, and the
    // controller hears of it right after init.
    let log = Arc::new(Mutex::new(Vec::new()));
    let cc = Box::new(Recorder { inner: controller_for(RecoveryMode::Linux), log: log.clone() });
    let mut s = ccarena_transport::Sender::new(sender_cfg(RecoveryMode::Linux), cc, SimTime::ZERO);
    assert_eq!((s.srtt(), s.min_rtt(), s.rto()), (None, None, Duration::from_secs(1)));
    let rtt = Duration::from_millis(40);
    s.on_handshake_rtt(rtt, SimTime::ZERO);
    assert_eq!((s.srtt(), s.rttvar(), s.min_rtt()), (Some(rtt), Some(Duration::from_millis(20)), Some(rtt)));
    // RTO = SRTT + max(G, 4·RTTVAR) = 120 ms, raised to the 200 ms floor (not the 1 s initial RTO).
    assert_eq!(s.rto(), Duration::from_millis(200));
    assert_eq!(s.stats().rtt_samples, 0, "not a data RTT sample");
    s.on_handshake_rtt(Duration::ZERO, SimTime::ZERO);
    let calls = log.lock().unwrap().clone();
    assert!(matches!(calls[..], [Call::Init, Call::HandshakeRtt(r)] if r == rtt), "{calls:?}");
}
