//! LTCP, Layered TCP (Bhandarkar, Jain, Reddy, "Improving TCP performance in high bandwidth
//! high RTT links using layered congestion control", PFLDnet 2005; "LTCP: Improving the
//! Performance of TCP in Highspeed Networks", ACM SIGCOMM CCR 36(1), 2006;
//! draft-bhandarkar-ltcp-00): the `ltcp` controller.
//!
//! # What it does
//!
//! LTCP is two-dimensional congestion control (Bhandarkar et al.):
//!
//! - **Macroscopic control — layers.** The flow runs at a number of layers K. Layers are added
//!   while no congestion is seen: layer K + 1 is added when the window reaches the threshold
//!   `W_(K+1)`; after a window reduction the flow drops back to the layer its window is in.
//! - **Microscopic control — per-ACK AIMD at layer K.** Each layer behaves like one virtual
//!   Reno flow: the window grows by K packets per RTT (K/cwnd per packet acknowledged), and a
//!   congestion event costs the flow what one virtual flow would lose — half of its share
//!   W/K — so the decrease factor is `β_K = 1/(2K)`: `cwnd ← cwnd·(1 − 1/(2K))`.
//!
//! At layer 1 (small windows) this is exactly Reno: +1 per RTT, halve on loss.
//!
//! **Layer thresholds.** The window at which layer K + 1 is added is chosen so that, in the
//! absence of congestion, every layer is climbed in the same number of RTTs δ: layer K spans K·δ
//! packets, climbed at K packets per RTT. Hence `W_2 = W_L` (the low window, below which LTCP is
//! TCP) and `W_(K+1) = W_K + K·δ`, i.e. `W_K = W_L + δ·(K(K−1)/2 − 1)` for K ≥ 2, and the number
//! of layers grows as the square root of the window, `K ≈ sqrt(2W/δ)`. With these thresholds a
//! reduction by 1/(2K) never drops the flow more than one layer (the paper's design constraint),
//! and the window lost at a congestion event, W/(2K), is regained in `W/(2K²)` ≈ δ/4 RTTs at any
//! window — the reason LTCP scales (Reno needs W/2 RTTs).
//!
//! # Where each rule comes from, and what could not be checked
//!
//! The framework is the papers' and the draft's (draft-bhandarkar-ltcp-01 §1–§3, CCR 2006 §2):
//! two-dimensional control — macroscopic: layers are *added while no congestion is seen* and
//! *dropped after a window reduction*; microscopic: at K layers the window grows by K packets per
//! RTT and a reduction drops at most one layer. The exact threshold sequence and decrease factor
//! of the papers' "design choice" (CCR 2006 §3) could not be retrieved while writing this file
//! (only the abstracts and the draft's front matter were reachable); the ones used here — a
//! constant δ RTTs per layer, and the virtual-flow decrease 1/(2K) — are this implementation's
//! reading, derived from the stated constraints, and are exposed as parameters (`low_window`,
//! `delta`).
//!
//! **The number of layers is state, not a function of the window.** Layers are a record of
//! congestion-free growth: the flow starts at one layer, adds layer K + 1 when its window reaches
//! W_(K+1) *in congestion avoidance*, and drops to the layer of its reduced window after a
//! congestion event. Slow start is standard TCP and adds no layers, so the congestion event that
//! ends the first slow start is met at one layer and halves the window, as TCP's does.
//! (Computing K from the window alone made that first event cost 1/(2K) of a window that slow
//! start had pushed to twice what the path holds — at 1 Gbps and 180 ms, K ≈ 90 and a 0.6%
//! reduction — so the flow stayed far above the path, losing a fifth of its packets, for a
//! minute and more: ccarena issue 19, seed 001.)
//!
//! # Consequence worth knowing
//!
//! At K layers a congestion event gives back only W/(2K) — 3% at 100 Mbps and 100 ms, under 1% at
//! 1 Gbps and 180 ms — so a drop-tail queue the flow fills stays within a few percent of full.
//! Flows that join later at one layer send into that nearly full queue, lose several percent of
//! their packets where the big flow loses a fraction of a percent, and can stay at a few packets
//! of window for minutes: this follows from the decrease rule and drop-tail, not from a fault.
//!
//! # Choices
//!
//! - Increase is counted per byte acknowledged (RFC 3465), K packets per window of data.
//! - In congestion avoidance every layer whose threshold the window has reached is added at once;
//!   at a congestion event K is the layers reached, capped at the layer the current window is in
//!   (a loss while slow start regrows after a timeout is met at that window's layer).
//! - Slow start is standard slow start ([`crate::reno::slow_start`]).

use crate::growth::PerRttIncrease;
use crate::reno::cwnd_limited_slow_start_first;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params};

/// Default low window W_L, packets: the window at which layer 2 is added; LTCP is Reno below it.
pub const DEFAULT_LOW_WINDOW: f64 = 50.0;

/// Default δ, RTTs: the congestion-free time to climb one layer (layer K spans K·δ packets).
pub const DEFAULT_DELTA: f64 = 15.0;

/// The `ltcp` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "low_window",
        default: DEFAULT_LOW_WINDOW,
        doc: "W_L, packets: the window at which layer 2 is added; one layer (Reno) below it; >= 1",
    },
    ParamInfo {
        name: "delta",
        default: DEFAULT_DELTA,
        doc: "δ, RTTs: congestion-free time to climb one layer; layer K spans K·δ packets, \
              W_(K+1) = W_K + K·δ; > 0",
    },
];

/// The parameter names [`Ltcp::new`] accepts.
const PARAM_NAMES: &[&str] = &["low_window", "delta"];

/// The LTCP congestion controller.
#[derive(Clone, Debug)]
pub struct Ltcp {
    low_window: f64,
    delta: f64,
    /// Layers reached: added in congestion avoidance, dropped at a congestion event.
    layers: u32,
    growth: PerRttIncrease,
}

impl Ltcp {
    /// An LTCP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Ltcp, CcError> {
        params.expect_only("ltcp", PARAM_NAMES)?;
        let low_window = params.get_or("low_window", DEFAULT_LOW_WINDOW);
        if !(low_window.is_finite() && low_window >= 1.0) {
            return Err(bad("low_window", low_window, "must be a finite number >= 1"));
        }
        let delta = params.get_or("delta", DEFAULT_DELTA);
        if !(delta.is_finite() && delta > 0.0) {
            return Err(bad("delta", delta, "must be a finite number > 0"));
        }
        Ok(Ltcp { low_window, delta, layers: 1, growth: PerRttIncrease::new() })
    }

    /// W_K, packets: the window at which layer K is added (K ≥ 2); 0 for K = 1.
    pub fn threshold(&self, k: u32) -> f64 {
        if k <= 1 {
            return 0.0;
        }
        let k = k as f64;
        self.low_window + self.delta * (k * (k - 1.0) / 2.0 - 1.0)
    }

    /// K, the number of layers at a window of `w` packets: the largest K with W_K ≤ w.
    pub fn layers_at(&self, w: f64) -> u32 {
        if w < self.low_window {
            return 1;
        }
        // W_K ≤ w  ⇔  K(K − 1)/2 ≤ (w − W_L)/δ + 1; solve the quadratic, then fix rounding.
        let x = (w - self.low_window) / self.delta + 1.0;
        let mut k = ((1.0 + (1.0 + 8.0 * x).sqrt()) / 2.0).floor().max(2.0) as u32;
        while k > 2 && self.threshold(k) > w {
            k -= 1;
        }
        while self.threshold(k + 1) <= w {
            k += 1;
        }
        k
    }

    /// β_K = 1/(2K), the fraction of the window removed at a congestion event at layer K.
    pub fn decrease(k: u32) -> f64 {
        1.0 / (2.0 * k.max(1) as f64)
    }

    /// The number of layers reached (1 until congestion avoidance climbs past W_2).
    pub fn layers(&self) -> u32 {
        self.layers
    }
}

impl CongestionControl for Ltcp {
    fn name(&self) -> &'static str {
        "ltcp"
    }

    /// Slow start below ssthresh (no layers are added meanwhile); above it K packets per RTT,
    /// after adding every layer whose threshold the window has reached.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        self.layers = self.layers.max(self.layers_at(st.cwnd_packets()));
        self.growth.apply(st, self.layers as f64, acked);
    }

    /// ssthresh = cwnd·(1 − 1/(2K)), at least 2 MSS, K the layers reached in congestion
    /// avoidance (capped at the layer the current window is in); then K drops to the layer of
    /// the reduced window.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let k = self.layers.min(self.layers_at(st.cwnd_packets()));
        let ss = ((st.cwnd_bytes as f64 * (1.0 - Ltcp::decrease(k))) as u64).max(2 * st.mss_bytes);
        self.layers = self.layers_at(ss as f64 / st.mss_bytes as f64).min(k);
        ss
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "ltcp", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{self, ack, ca_state, loss, rtts_to_regain, MSS};
    use crate::{Duration, LossKind, SimTime};

    const RTT: Duration = Duration::from_millis(100);

    fn ltcp(pairs: &[(&str, f64)]) -> Ltcp {
        Ltcp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    /// A window of `packets` in congestion avoidance with every layer it reaches added.
    fn climbed(cc: &mut Ltcp, packets: u64) -> CwndState {
        let mut st = ca_state(packets);
        cc.cong_avoid(&mut st, &ack(SimTime::ZERO, 0, RTT));
        st
    }

    /// One RTT of 100 ms ([`testing::one_rtt`]): the packets cwnd grew by.
    fn one_rtt(cc: &mut Ltcp, st: &mut CwndState) -> f64 {
        let before = st.cwnd_packets();
        testing::one_rtt(cc, st, RTT);
        st.cwnd_packets() - before
    }

    #[test]
    fn layers_grow_with_the_window() {
        let cc = ltcp(&[]);
        // W_2 = 50, W_3 = 80, W_4 = 125, W_5 = 185, W_6 = 260, ...: layer K spans K·δ.
        assert_eq!(
            (2..=6).map(|k| cc.threshold(k)).collect::<Vec<_>>(),
            vec![50.0, 80.0, 125.0, 185.0, 260.0]
        );
        for k in 2..200 {
            assert_eq!(cc.threshold(k + 1) - cc.threshold(k), k as f64 * 15.0);
        }
        for (w, k) in
            [(10.0, 1), (49.9, 1), (50.0, 2), (79.0, 2), (80.0, 3), (200.0, 5), (1000.0, 11)]
        {
            assert_eq!(cc.layers_at(w), k, "w = {w}");
        }
        // K is the largest layer whose threshold the window reached, at every window.
        let mut prev = 1;
        for i in 0..20_000 {
            let w = i as f64 * 0.7;
            let k = cc.layers_at(w);
            assert!(k >= prev);
            assert!(k == 1 || cc.threshold(k) <= w);
            assert!(cc.threshold(k + 1) > w);
            prev = k;
        }
        // K ≈ sqrt(2W/δ) for large windows.
        let k = cc.layers_at(80_000.0) as f64;
        assert!((k / (2.0 * 80_000.0 / 15.0f64).sqrt() - 1.0).abs() < 0.02, "K = {k}");
    }

    #[test]
    fn per_rtt_increase_equals_the_number_of_layers() {
        let mut cc = ltcp(&[]);
        for (w, k) in [(30u64, 1.0), (60, 2.0), (200, 5.0), (1000, 11.0), (5000, 26.0)] {
            let mut st = ca_state(w);
            let grown = one_rtt(&mut cc, &mut st);
            assert_eq!(cc.layers() as f64, k, "w = {w}");
            assert!((grown - k).abs() < 0.05 * k, "w = {w}: grew {grown}, K = {k}");
        }
    }

    #[test]
    fn decrease_depends_on_the_layer_and_drops_at_most_one_layer() {
        let mut cc = ltcp(&[]);
        assert_eq!(Ltcp::decrease(1), 0.5);
        assert_eq!(Ltcp::decrease(4), 0.125);
        for (w, k) in [(30u64, 1u32), (100, 3), (1000, 11)] {
            let st = climbed(&mut cc, w);
            let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
            let expect = (w * MSS) as f64 * (1.0 - 1.0 / (2.0 * k as f64));
            assert_eq!(ss, expect as u64, "w = {w}");
        }
        // From any window above W_3, one decrease leaves the flow at most one layer lower.
        for i in 0..5000 {
            let w = 80.0 + i as f64 * 3.7;
            let k = cc.layers_at(w);
            let after = cc.layers_at(w * (1.0 - Ltcp::decrease(k)));
            assert!(after + 1 >= k, "w = {w}: layer {k} -> {after}");
        }
    }

    #[test]
    fn recovery_time_is_about_delta_over_four_rtts_at_any_window() {
        let mut cc = ltcp(&[]);
        for w0 in [1_000u64, 10_000, 50_000] {
            let mut st = climbed(&mut cc, w0);
            let rtts = rtts_to_regain(&mut cc, &mut st, w0 * MSS, RTT);
            assert!((3..=6).contains(&rtts), "w = {w0}: {rtts} RTTs");
        }
    }

    #[test]
    fn slow_start_adds_no_layers_so_its_first_loss_halves_the_window() {
        let mut cc = ltcp(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        while st.cwnd_bytes < 2_000 * MSS {
            cc.cong_avoid(&mut st, &ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(100)));
        }
        assert!(st.in_slow_start());
        assert_eq!(cc.layers(), 1);
        let w = st.cwnd_bytes;
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(ss, w / 2);
        // Congestion avoidance from there adds the layers of the halved window at once.
        st.cwnd_bytes = ss;
        st.ssthresh_bytes = ss;
        one_rtt(&mut cc, &mut st);
        assert_eq!(cc.layers(), cc.layers_at(st.cwnd_packets()));
        assert!(cc.layers() >= 10);
        // After a timeout the layers are those of the reduced window; a loss while slow start
        // regrows is met at the layer of the window it happens at.
        let k = cc.layers();
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st));
        assert_eq!(cc.layers(), cc.layers_at(ss as f64 / MSS as f64));
        assert!(cc.layers() + 1 >= k);
        let mut st = CwndState::new(20 * MSS, MSS);
        st.ssthresh_bytes = ss;
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(ss, 10 * MSS);
        assert_eq!(cc.layers(), 1);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Ltcp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        for (name, v) in [("low_window", 0.0), ("delta", 0.0), ("delta", f64::NAN)] {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "ltcp", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("k", 1.0)]), Err(CcError::UnknownParam { .. })));
        let cc = p(&[("low_window", 20.0), ("delta", 5.0)]).unwrap();
        assert_eq!(cc.threshold(3), 30.0);
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(ltcp(&[]).name(), "ltcp");
    }
}
