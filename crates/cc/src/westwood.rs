//! TCP Westwood+ (Mascolo, Casetti, Gerla, Sanadidi, Wang, "TCP Westwood: Bandwidth Estimation
//! for Enhanced Transport over Wireless Links", MobiCom 2001; Grieco and Mascolo, "Performance
//! evaluation and comparison of Westwood+, New Reno, and Vegas TCP congestion control", ACM
//! SIGCOMM CCR 34(2), 2004): the `westwood` controller.
//!
//! # What it does
//!
//! Reno's window growth, with a different reaction to congestion: instead of halving, the
//! sender sets ssthresh to its estimate of the bandwidth it was actually getting times the
//! path's minimum RTT — the window that fills the pipe without a queue ("adaptive decrease",
//! Mascolo et al. 2001; Grieco & Mascolo 2004):
//!
//! - **Bandwidth estimate (BWE)** (Grieco & Mascolo 2004, the "+" of Westwood+): once per RTT
//!   a sample `b_k = d_k/Δ_k` is taken, d_k the bytes acknowledged during the last RTT Δ_k
//!   (duplicate ACKs and SACKs count: they report delivered data); the samples are low-pass
//!   filtered by `b̂_k = α·b̂_(k−1) + (1 − α)·b_k`, α = 0.9. Sampling once per RTT rather than on
//!   every ACK (original Westwood) makes the estimate robust to ACK compression.
//! - **On three duplicate ACKs**: `ssthresh = max(BWE·RTT_min, 2 MSS)`, `cwnd = min(cwnd,
//!   ssthresh)` (the transport's recovery brings cwnd to ssthresh).
//! - **On a timeout**: `ssthresh = max(BWE·RTT_min, 2 MSS)`, `cwnd = 1 MSS`.
//!
//! A loss that is not caused by congestion (a lossy wireless hop) comes while the queue is empty,
//! so BWE·RTT_min is about the current window: the window hardly shrinks, where Reno would halve
//! it for every random loss.
//!
//! # Choices
//!
//! - "Once per RTT": a sample closes on the first ACK at least one smoothed RTT (RFC 6298;
//!   the latest RTT sample before there is one) after the sample started.
//! - The first sample initialises the filter (b̂_1 = b_1), so the estimate does not start at 0.
//! - Before the first sample (or the first RTT measurement) there is no estimate and the
//!   reduction is Reno's (RFC 5681 eq. 4).
//! - Growth is Reno's by composition ([`crate::reno::slow_start`],
//!   [`crate::reno::cong_avoid_ai`]).

use crate::reno::{halve_flight, reno_cong_avoid};
use crate::{
    AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params, SimTime,
};

/// Default filter gain α, dimensionless: weight of the previous estimate in
/// b̂_k = α·b̂_(k−1) + (1 − α)·b_k (Grieco & Mascolo 2004: 0.9).
pub const DEFAULT_FILTER_GAIN: f64 = 0.9;

/// The `westwood` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "filter_gain",
    default: DEFAULT_FILTER_GAIN,
    doc:
        "α of the bandwidth filter b^_k = α·b^_(k-1) + (1 - α)·b_k, dimensionless, one sample per \
          RTT (Grieco & Mascolo 2004); 0 <= filter_gain < 1",
}];

/// The parameter names [`Westwood::new`] accepts.
const PARAM_NAMES: &[&str] = &["filter_gain"];

/// The TCP Westwood+ congestion controller.
#[derive(Clone, Debug)]
pub struct Westwood {
    filter_gain: f64,
    /// Start of the current bandwidth sample; `None` before the first ACK.
    sample_start: Option<SimTime>,
    /// Bytes acknowledged in the current sample.
    sample_bytes: u64,
    /// The filtered bandwidth estimate b̂, bytes per second; `None` before the first sample.
    bwe: Option<f64>,
    /// Smallest RTT of the connection, seconds.
    rtt_min_secs: Option<f64>,
    ca_acc_bytes: u64,
}

impl Westwood {
    /// A Westwood+ controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] when `filter_gain` is not in [0, 1).
    pub fn new(params: &Params) -> Result<Westwood, CcError> {
        params.expect_only("westwood", PARAM_NAMES)?;
        let filter_gain = params.get_or("filter_gain", DEFAULT_FILTER_GAIN);
        if !(0.0..1.0).contains(&filter_gain) {
            return Err(CcError::BadParam {
                flavor: "westwood",
                param: "filter_gain",
                value: filter_gain,
                reason: "must be >= 0 and < 1",
            });
        }
        Ok(Westwood {
            filter_gain,
            sample_start: None,
            sample_bytes: 0,
            bwe: None,
            rtt_min_secs: None,
            ca_acc_bytes: 0,
        })
    }

    /// The filtered bandwidth estimate, bits per second (`None` before the first sample).
    pub fn bwe_bps(&self) -> Option<f64> {
        self.bwe.map(|b| b * 8.0)
    }

    /// BWE·RTT_min, bytes, when both are known.
    fn bdp_estimate_bytes(&self) -> Option<f64> {
        Some(self.bwe? * self.rtt_min_secs?)
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// Count the bytes this ACK reports delivered; close the bandwidth sample once per RTT and
    /// filter it (Grieco & Mascolo 2004).
    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        if let Some(m) = ack.min_rtt.or(ack.rtt) {
            let m = m.as_secs_f64();
            self.rtt_min_secs = Some(self.rtt_min_secs.map_or(m, |x| x.min(m)));
        }
        let Some(start) = self.sample_start else {
            // The first ACK opens the first sample; its bytes were sent before it started.
            self.sample_start = Some(ack.now);
            return;
        };
        self.sample_bytes += ack.bytes_acked;
        let Some(rtt) = ack.srtt.or(ack.rtt) else { return };
        let elapsed = ack.now.saturating_since(start);
        if elapsed.as_nanos() == 0 || elapsed < rtt {
            return;
        }
        let b_k = self.sample_bytes as f64 / elapsed.as_secs_f64();
        self.bwe = Some(match self.bwe {
            None => b_k,
            Some(b) => self.filter_gain * b + (1.0 - self.filter_gain) * b_k,
        });
        self.sample_start = Some(ack.now);
        self.sample_bytes = 0;
    }

    /// Reno: slow start, then one MSS per RTT.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        reno_cong_avoid(st, &mut self.ca_acc_bytes, ack);
    }

    /// ssthresh = max(BWE·RTT_min, 2 MSS) after duplicate ACKs and timeouts alike; Reno's
    /// FlightSize/2 before there is an estimate.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        match self.bdp_estimate_bytes() {
            Some(bytes) => (bytes as u64).max(2 * st.mss_bytes),
            None => halve_flight(st, ev),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, loss, MSS};
    use crate::{Duration, LossKind};

    fn westwood(pairs: &[(&str, f64)]) -> Westwood {
        Westwood::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    /// ACKs of one MSS every `gap` from `start` for `n` ACKs, RTT sample `rtt`, min RTT
    /// `min_rtt`. Returns the time after the last.
    fn acks(
        cc: &mut Westwood,
        st: &mut CwndState,
        start: SimTime,
        gap: Duration,
        n: u64,
        rtt: Duration,
        min_rtt: Duration,
    ) -> SimTime {
        let mut now = start;
        for _ in 0..n {
            now += gap;
            let mut a = ack(now, MSS, rtt);
            a.min_rtt = Some(min_rtt);
            cc.pkts_acked(st, &a);
        }
        now
    }

    #[test]
    fn bandwidth_estimate_is_the_filtered_per_rtt_delivery_rate() {
        let mut cc = westwood(&[]);
        let mut st = ca_state(100);
        let (rtt, gap) = (Duration::from_millis(100), Duration::from_millis(1));
        // 1 MSS per ms = 11.584 Mbps, for 10 RTTs: every sample equals it, so does the estimate.
        let now = acks(&mut cc, &mut st, SimTime::ZERO, gap, 1000, rtt, rtt);
        let rate = MSS as f64 * 8.0 / 1e-3;
        assert!((cc.bwe_bps().unwrap() / rate - 1.0).abs() < 0.011, "{:?}", cc.bwe_bps());
        // The rate halves. The first ACK closes the sample that straddles the change; one full
        // sample later the estimate moved by (1 − α) = 10% of the step, after ten by
        // 1 − 0.9^10 = 65%.
        let now = acks(&mut cc, &mut st, now, Duration::from_millis(2), 51, rtt, rtt);
        let b1 = cc.bwe_bps().unwrap();
        assert!((b1 / rate - 0.95).abs() < 0.01, "after one sample: {}", b1 / rate);
        acks(&mut cc, &mut st, now, Duration::from_millis(2), 450, rtt, rtt);
        let b10 = cc.bwe_bps().unwrap();
        let expect = 1.0 - 0.5 * (1.0 - 0.9f64.powi(10));
        assert!((b10 / rate - expect).abs() < 0.01, "after ten samples: {}", b10 / rate);
    }

    #[test]
    fn ssthresh_is_bwe_times_min_rtt() {
        let mut cc = westwood(&[]);
        let mut st = ca_state(200);
        // Delivering 1 MSS per ms with RTT 150 ms (queue) over a 100 ms path: BWE·RTT_min =
        // 100 packets, so the window comes down to what the pipe holds without a queue.
        acks(
            &mut cc,
            &mut st,
            SimTime::ZERO,
            Duration::from_millis(1),
            1500,
            Duration::from_millis(150),
            Duration::from_millis(100),
        );
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert!(
            (ss as f64 / (100 * MSS) as f64 - 1.0).abs() < 0.02,
            "ssthresh {} packets",
            ss as f64 / MSS as f64
        );
        let ss_rto = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st));
        assert_eq!(ss, ss_rto, "the same rule after a timeout");

        // Random loss with an empty queue (RTT = RTT_min): ssthresh ≈ the current window, where
        // Reno would halve it.
        let mut cc = westwood(&[]);
        let mut st = ca_state(100);
        let rtt = Duration::from_millis(100);
        acks(&mut cc, &mut st, SimTime::ZERO, Duration::from_millis(1), 1500, rtt, rtt);
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert!(ss as f64 >= 0.98 * (100 * MSS) as f64, "{}", ss as f64 / MSS as f64);
    }

    #[test]
    fn reno_reduction_before_any_estimate_and_a_floor_of_two_mss() {
        let mut cc = westwood(&[]);
        let st = ca_state(100);
        assert_eq!(cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st)), 50 * MSS);
        let mut st = ca_state(100);
        acks(
            &mut cc,
            &mut st,
            SimTime::ZERO,
            Duration::from_secs(1),
            5,
            Duration::from_millis(10),
            Duration::from_millis(10),
        );
        assert_eq!(cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st)), 2 * MSS);
    }

    #[test]
    fn growth_is_renos() {
        let mut cc = westwood(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        cc.cong_avoid(&mut st, &ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(10)));
        assert_eq!(st.cwnd_bytes, 12 * MSS);
        let mut st = ca_state(10);
        for _ in 0..10 {
            cc.cong_avoid(&mut st, &ack(SimTime::ZERO, MSS, Duration::from_millis(10)));
        }
        assert_eq!(st.cwnd_bytes, 11 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        for v in [-0.1, 1.0, f64::NAN] {
            let r = Westwood::new(&Params::from_pairs(vec![("filter_gain".into(), v)]));
            assert!(matches!(r, Err(CcError::BadParam { param: "filter_gain", .. })), "{v}");
        }
        assert!(matches!(
            Westwood::new(&Params::from_pairs(vec![("alpha".into(), 1.0)])),
            Err(CcError::UnknownParam { .. })
        ));
        assert_eq!(westwood(&[("filter_gain", 0.0)]).filter_gain, 0.0);
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(westwood(&[]).name(), "westwood");
    }
}
