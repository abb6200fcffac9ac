//! TCP-LP, TCP Low Priority (Kuzmanovic and Knightly, "TCP-LP: A Distributed Algorithm for Low
//! Priority Data Transfer", IEEE INFOCOM 2003): the `lp` controller, and
//! [`EarlyCongestion`], its inference machinery, which `hstcp-lp` reuses.
//!
//! # What it does
//!
//! TCP-LP uses only the bandwidth standard TCP flows leave unused. It reacts to congestion
//! earlier than they do, from one-way delays, and so always yields first.
//!
//! - **Early congestion indication**: the sender tracks the smallest and largest one-way
//!   delay, d_min and d_max, and a smoothed one-way delay `sd ← (1 − 1/8)·sd + d/8` (the weight of
//!   TCP's srtt). The path is congested when `sd > d_min + δ·(d_max − d_min)`, δ = 0.15: the delay
//!   has climbed 15% of the way from its floor to its ceiling. Since only differences between
//!   one-way delays matter, the unknown offset between the two hosts' clocks cancels.
//! - **Reaction and inference**: on the first indication cwnd is halved and an *inference
//!   phase* of `itt` begins, during which cwnd does not grow. An indication during the inference
//!   phase means the congestion persists despite the halving — cross traffic is present — and
//!   cwnd drops to one segment. When `itt` expires without an indication TCP-LP resumes TCP's
//!   growth.
//! - Everything else (slow start, additive increase, loss recovery, halving on loss) is TCP's.
//!
//! # Choices
//!
//! - `itt` = `inference_rtts` (3) × the smoothed RTT at the indication.
//! - An indication during the inference phase only counts once the one-way delay is that of a
//!   segment sent after the reduction (the earliest segment the ACK acknowledges, whose timestamp a
//!   delayed ACK echoes): the ACKs in between report delays of packets queued before the window
//!   was cut and cannot say whether the halving helped. For the same reason the smoothed delay restarts
//!   from the first such ACK's sample (otherwise its 1/8 gain would carry the pre-reduction queue
//!   into the judgement for another dozen ACKs).
//! - **When indications count.** The threshold is a fraction of the delay range d_max − d_min, and
//!   that range means something only once the sender has seen the path's queue at its worst. In
//!   the initial slow start it has not: d_max is then the largest of the sender's own slow-start
//!   micro-bursts, 15% of which is a fraction of one packet's transmission time, and every
//!   doubling round would read as congestion (TCP-LP would stay at a handful of segments
//!   forever). So indications are acted on only once the connection has had its first congestion
//!   event (ssthresh is finite): by then the first slow start has run into the buffer limit (or a
//!   competitor's losses) and d_max reflects a full queue.
//! - **Window arithmetic of a reaction.** The halving sets ssthresh to the halved window too, so
//!   that growth after the inference phase is additive increase, as the paper specifies. A cut to
//!   one segment is treated as TCP treats a timeout: ssthresh = half the window before the cut,
//!   and growth resumes with slow start up to it.
//! - Indications are acted on in the `Open` and `Disorder` states; during loss recovery the loss
//!   response is in charge.
//! - d_max is the largest one-way delay of the connection (no ageing); d_min the smallest.

use crate::reno::{grow, halve_flight};
use crate::{AckSample, CaState, CcError, CongestionControl, CwndState, Duration, LossEvent, ParamInfo, Params, SimTime};

/// Default δ: congestion when sd > d_min + δ(d_max − d_min).
pub const DEFAULT_DELTA: f64 = 0.15;

/// Default inference time-out, in smoothed RTTs.
pub const DEFAULT_INFERENCE_RTTS: f64 = 3.0;

/// Weight of a new sample in the smoothed one-way delay: 1/8, as TCP's srtt.
const OWD_GAIN: f64 = 0.125;

/// Parameters of the early congestion indication (shared with `hstcp-lp`).
pub const INFERENCE_PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        name: "delta",
        default: DEFAULT_DELTA,
        doc: "δ: early congestion when the smoothed one-way delay exceeds d_min + δ(d_max - d_min) \
              (Kuzmanovic & Knightly 2003); 0 < delta < 1",
    },
    ParamInfo {
        name: "inference_rtts",
        default: DEFAULT_INFERENCE_RTTS,
        doc: "inference time-out itt, in smoothed RTTs: no growth for itt after a reduction; an \
              indication within it cuts cwnd to 1 segment; > 0",
    },
];

/// The `lp` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &INFERENCE_PARAMS;

const PARAM_NAMES: &[&str] = &["delta", "inference_rtts"];

/// What an ACK's one-way delay made [`EarlyCongestion`] do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    /// No indication (or one that cannot be judged yet).
    None,
    /// First indication: cwnd halved, inference phase started.
    Halved,
    /// Indication within the inference phase: cwnd cut to one segment.
    ToOneSegment,
}

/// TCP-LP's early congestion indication and inference phase (the paper's congestion inference), usable on top of any
/// window-growth rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyCongestion {
    delta: f64,
    inference_rtts: f64,
    d_min: Option<Duration>,
    d_max: Duration,
    /// Smoothed one-way delay, ns.
    sowd_ns: Option<f64>,
    /// End of the inference phase.
    inference_until: Option<SimTime>,
    /// snd.nxt at the last reduction.
    reduced_at_seq: u64,
    /// No ACK has yet acknowledged data sent after the last reduction.
    awaiting_fresh: bool,
    halvings: u64,
    cuts_to_one: u64,
}

impl EarlyCongestion {
    /// From the scenario's `delta` and `inference_rtts` (see [`INFERENCE_PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::BadParam`] for a value out of range, naming `flavor`.
    pub fn new(flavor: &'static str, params: &Params) -> Result<EarlyCongestion, CcError> {
        let bad = |param, value, reason| CcError::BadParam { flavor, param, value, reason };
        let delta = params.get_or("delta", DEFAULT_DELTA);
        if !(delta > 0.0 && delta < 1.0) {
            return Err(bad("delta", delta, "must be strictly between 0 and 1"));
        }
        let inference_rtts = params.get_or("inference_rtts", DEFAULT_INFERENCE_RTTS);
        if !(inference_rtts.is_finite() && inference_rtts > 0.0) {
            return Err(bad("inference_rtts", inference_rtts, "must be a finite number > 0"));
        }
        Ok(EarlyCongestion {
            delta,
            inference_rtts,
            d_min: None,
            d_max: Duration::ZERO,
            sowd_ns: None,
            inference_until: None,
            reduced_at_seq: 0,
            awaiting_fresh: false,
            halvings: 0,
            cuts_to_one: 0,
        })
    }

    /// True during the inference phase (no window growth).
    pub fn in_inference(&self, now: SimTime) -> bool {
        self.inference_until.is_some_and(|t| now < t)
    }

    /// The threshold d_min + δ(d_max − d_min), ns, once a delay has been seen.
    pub fn threshold_ns(&self) -> Option<f64> {
        let d_min = self.d_min?.as_nanos() as f64;
        Some(d_min + self.delta * (self.d_max.as_nanos() as f64 - d_min))
    }

    /// Halvings and cuts to one segment so far.
    pub fn reductions(&self) -> (u64, u64) {
        (self.halvings, self.cuts_to_one)
    }

    /// Account `ack`'s one-way delay and react to an indication by changing `st.cwnd_bytes`
    ///. Reacts only in `Open`/`Disorder`.
    pub fn on_ack(&mut self, st: &mut CwndState, ack: &AckSample) -> Reaction {
        let Some(d) = ack.one_way_delay else { return Reaction::None };
        self.d_min = Some(self.d_min.map_or(d, |m| m.min(d)));
        self.d_max = self.d_max.max(d);
        let x = d.as_nanos() as f64;
        // The delay is that of the earliest segment this ACK acknowledges (a delayed ACK echoes
        // the first of its pair, RFC 7323 §4.3): was it sent after the last reduction?
        let after_reduction = ack.snd_una.saturating_sub(ack.bytes_acked) >= self.reduced_at_seq;
        let fresh = self.awaiting_fresh && after_reduction;
        if fresh {
            self.awaiting_fresh = false;
        }
        let sowd = match self.sowd_ns {
            Some(s) if !fresh => s + OWD_GAIN * (x - s),
            _ => x,
        };
        self.sowd_ns = Some(sowd);
        if !matches!(ack.state, CaState::Open | CaState::Disorder) {
            return Reaction::None;
        }
        let Some(threshold) = self.threshold_ns() else { return Reaction::None };
        if sowd <= threshold || st.ssthresh_bytes == u64::MAX {
            return Reaction::None;
        }
        let itt = ack
            .srtt
            .or(ack.rtt)
            .map_or(Duration::ZERO, |r| Duration::from_secs_f64(r.as_secs_f64() * self.inference_rtts));
        let reaction = if self.in_inference(ack.now) {
            if !after_reduction {
                // Still the delays of packets sent before the reduction.
                return Reaction::None;
            }
            st.ssthresh_bytes = (st.cwnd_bytes / 2).max(2 * st.mss_bytes);
            st.cwnd_bytes = st.mss_bytes;
            self.cuts_to_one += 1;
            Reaction::ToOneSegment
        } else {
            st.cwnd_bytes = (st.cwnd_bytes / 2).max(st.mss_bytes);
            st.ssthresh_bytes = st.cwnd_bytes.max(2 * st.mss_bytes);
            self.halvings += 1;
            Reaction::Halved
        };
        self.inference_until = Some(ack.now + itt);
        self.reduced_at_seq = ack.snd_nxt;
        self.awaiting_fresh = true;
        reaction
    }
}

/// The TCP-LP controller: Reno's growth and loss response plus [`EarlyCongestion`].
#[derive(Clone, Debug)]
pub struct Lp {
    eci: EarlyCongestion,
    ca_acc_bytes: u64,
    last_ack: SimTime,
}

impl Lp {
    /// A TCP-LP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Lp, CcError> {
        params.expect_only("lp", PARAM_NAMES)?;
        Ok(Lp { eci: EarlyCongestion::new("lp", params)?, ca_acc_bytes: 0, last_ack: SimTime::ZERO })
    }

    /// The early-congestion state.
    pub fn early_congestion(&self) -> &EarlyCongestion {
        &self.eci
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }

    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.last_ack = ack.now;
        if self.eci.on_ack(st, ack) != Reaction::None {
            self.ca_acc_bytes = 0;
        }
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if !ack.cwnd_limited || self.eci.in_inference(ack.now) {
            return;
        }
        grow(st, &mut self.ca_acc_bytes, ack.bytes_acked);
    }

    /// Reno's: max(FlightSize/2, 2 MSS).
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        halve_flight(st, ev)
    }

    /// `"inference"` during the inference phase, else `"reno"`.
    fn mode(&self) -> &'static str {
        if self.eci.in_inference(self.last_ack) {
            "inference"
        } else {
            "reno"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, MSS};

    fn lp(pairs: &[(&str, f64)]) -> Lp {
        Lp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// An ACK at `t_ms` with one-way delay `owd_ms`, srtt 40 ms, acking up to `una` packets of
    /// `nxt` sent.
    fn owd(t_ms: u64, owd_ms: u64, una: u64, nxt: u64) -> AckSample {
        let mut a = ack(t_ms * 1_000_000, 2 * MSS, Some(ms(40)), una * MSS, nxt * MSS);
        a.one_way_delay = Some(ms(owd_ms));
        a
    }

    #[test]
    fn threshold_is_fifteen_percent_of_the_range() {
        let mut cc = lp(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.pkts_acked(&mut st, &owd(0, 20, 1, 100));
        cc.pkts_acked(&mut st, &owd(1, 120, 2, 100));
        // d_min 20, d_max 120: threshold 35 ms.
        assert_eq!(cc.early_congestion().threshold_ns(), Some(35e6));
    }

    #[test]
    fn first_indication_halves_a_second_after_the_halving_cuts_to_one() {
        let mut cc = lp(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        st.ssthresh_bytes = 80 * MSS; // after a first congestion event
        // Establish d_min = 20 ms and d_max = 60 ms without an indication (sd stays low).
        cc.pkts_acked(&mut st, &owd(0, 20, 1, 100));
        cc.pkts_acked(&mut st, &owd(1, 60, 2, 100));
        assert_eq!(st.cwnd_bytes, 100 * MSS);
        // Delays of 40 ms push sd above 26 ms: halve, inference for 3 × 40 ms.
        let mut t = 2;
        while st.cwnd_bytes == 100 * MSS {
            cc.pkts_acked(&mut st, &owd(t, 40, t, 100));
            t += 1;
            assert!(t < 50);
        }
        assert_eq!(st.cwnd_bytes, 50 * MSS);
        assert_eq!(st.ssthresh_bytes, 50 * MSS, "additive increase after the inference phase");
        assert!(cc.early_congestion().in_inference(SimTime(t * 1_000_000)));
        // No growth during inference.
        let a = owd(t, 20, t, 100);
        cc.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 50 * MSS);
        // More high delays of packets sent before the halving: ignored.
        cc.pkts_acked(&mut st, &owd(t + 1, 40, 99, 100));
        assert_eq!(st.cwnd_bytes, 50 * MSS);
        // High delay of a packet sent after the halving, within itt: cut to one segment.
        cc.pkts_acked(&mut st, &owd(t + 2, 40, 102, 150));
        assert_eq!(st.cwnd_bytes, MSS);
        assert_eq!(st.ssthresh_bytes, 25 * MSS, "as after a timeout: half the window cut");
        assert_eq!(cc.early_congestion().reductions(), (1, 1));
        // The queue drains: low delays bring sd back under the threshold (the repeated cuts
        // while sd is still high leave cwnd at one segment).
        for i in 0..50 {
            cc.pkts_acked(&mut st, &owd(t + 3 + i, 20, 104 + i, 160));
        }
        assert_eq!(st.cwnd_bytes, MSS);
        // After itt without indication growth resumes (slow start below ssthresh).
        let low = owd(t + 300, 20, 160, 170);
        cc.pkts_acked(&mut st, &low);
        assert!(!cc.early_congestion().in_inference(low.now));
        cc.cong_avoid(&mut st, &low);
        assert_eq!(st.cwnd_bytes, 3 * MSS);
    }

    #[test]
    fn no_reaction_before_the_first_congestion_event() {
        let mut cc = lp(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.pkts_acked(&mut st, &owd(0, 20, 1, 100));
        cc.pkts_acked(&mut st, &owd(1, 60, 2, 100));
        for t in 2..40 {
            cc.pkts_acked(&mut st, &owd(t, 60, t, 100));
        }
        assert_eq!(st.cwnd_bytes, 100 * MSS);
        st.ssthresh_bytes = 90 * MSS;
        cc.pkts_acked(&mut st, &owd(41, 60, 41, 100));
        assert_eq!(st.cwnd_bytes, 50 * MSS);
    }

    #[test]
    fn no_reaction_during_loss_recovery() {
        let mut cc = lp(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        st.ssthresh_bytes = 90 * MSS;
        cc.pkts_acked(&mut st, &owd(0, 20, 1, 100));
        cc.pkts_acked(&mut st, &owd(1, 60, 2, 100));
        for t in 2..40 {
            let mut a = owd(t, 60, t, 100);
            a.state = CaState::Recovery;
            cc.pkts_acked(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 100 * MSS);
    }

    #[test]
    fn loss_is_renos() {
        let mut cc = lp(&[]);
        let st = CwndState::new(100 * MSS, MSS);
        let ev = LossEvent { now: SimTime::ZERO, kind: crate::LossKind::FastRetransmit, flight_size_bytes: 80 * MSS, in_flight_bytes: 0 };
        assert_eq!(cc.ssthresh(&st, &ev), 40 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Lp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("delta", 0.0)]), Err(CcError::BadParam { param: "delta", .. })));
        assert!(matches!(p(&[("delta", 1.0)]), Err(CcError::BadParam { param: "delta", .. })));
        assert!(matches!(p(&[("inference_rtts", 0.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
