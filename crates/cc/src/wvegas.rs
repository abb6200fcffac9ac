//! wVegas, weighted Vegas: the delay-based coupled controller for Multipath TCP (Y. Cao, M. Xu,
//! X. Fu, "Delay-based Congestion Control for Multipath TCP", IEEE ICNP 2012; the algorithm also
//! in the authors' Internet-Draft draft-xu-mptcp-congestion-control, and their module
//! `mptcp_wvegas.c` in the multipath-tcp.org Linux tree).
//!
//! # What it does
//!
//! Every subflow `r` runs TCP Vegas ([`crate::vegas`]) against its own threshold `α_r`, a share
//! of one connection-wide total `α` (ICNP 2012 §III):
//!
//! - **Diff** (§III, Vegas's estimate of the subflow's own packets queued on its path), once
//!   per round trip: `diff_r = (cwnd_r/baseRTT_r − cwnd_r/RTT_r) · baseRTT_r`
//!   ([`crate::vegas::queued_packets`]).
//! - **Weight** (§III): `weight_r = x_r / Σ_k x_k` with `x_k = cwnd_k / RTT_k` the rate of
//!   subflow `k`; the threshold `α_r = weight_r · α`. At a bottleneck that subflows share, they
//!   see one queueing delay `q` and `diff_r = x_r · q`, so every subflow's test
//!   `diff_r < α_r` is the same test `q · Σx < α`: the connection as a whole keeps `α` packets
//!   queued, as one Vegas flow does, whatever its number of subflows (RFC 6356 §2's goal 2).
//!   On disjoint paths the equilibrium `diff_r = α_r` gives every path the same queueing delay
//!   `q_r = α / Σx`: traffic moves off the path whose queue is deeper (§III, "load balance").
//! - **Window** (§III): `diff_r < α_r`: one MSS more over the next round;
//!   `diff_r ≥ α_r + 1`: one MSS less at once; otherwise hold. The one-packet hold band is
//!   Linux's integer comparison of `⌊diff_r⌋` with `α_r`.
//! - **Queue draining** (§III): with `q_r = RTT_r − baseRTT_r` and `q_r^min` the smallest
//!   since the last drain, a round whose `q_r ≥ 2 · q_r^min` (and whose Diff is above the band,
//!   see below) sets
//!   `cwnd_r ← cwnd_r · baseRTT_r / (2 · RTT_r)` and forgets `q_r^min`: a queue that doubled
//!   (another flow arrived) is emptied at once rather than one packet per round.
//! - **Loss**: Reno's halving (`ssthresh = FlightSize/2`), as the Linux module does
//!   (`tcp_reno_ssthresh`), not Vegas's quarter.
//! - **Slow start**: Reno's doubling every round; it ends when `diff_r > γ`, the window then cut
//!   to `min(cwnd, cwnd·baseRTT/RTT + 1 MSS)`, the Linux module's rule (Linux Vegas's).
//!
//! The paper's PDF could not be opened where this was written: the steps above were checked
//! against the abstract, the Internet-Draft's summary and the authors' Linux module, and "§III"
//! (the paper's algorithm section) was not checked page by page.
//!
//! # Choices where the paper leaves room
//!
//! - *Rates*: `x_k = cwnd_k / srtt_k` for every subflow, from the view the connection lends
//!   ([`crate::SubflowView`]); the subflow itself with its current window. Only active subflows
//!   with an RTT sample and a window enter `Σx`. Linux caches each subflow's `cwnd/RTT` when
//!   that subflow last updated its α; the view gives current numbers instead.
//! - *When α_r moves*: at the end of every measured round (as the paper's per-RTT update
//!   reads). Linux moves it only in rounds with `⌊diff⌋ ≥ α_r`.
//! - *No floor on α_r*: Linux keeps every α_r ≥ 2 packets, which makes a connection of `n`
//!   subflows hold at least `2n` packets at a shared bottleneck and so take more than one
//!   Vegas flow's share; here `Σ α_r = α` exactly. A subflow whose weight falls to zero still
//!   holds its window while `diff_r < 1` and keeps at least 2 MSS, so it keeps probing its path.
//! - *α*: default [`DEFAULT_TOTAL_ALPHA`] = 2 packets, the α of ccarena's Vegas: the hold band of
//!   a two-subflow connection, `[α, α + 2)`, is then one Vegas flow's `[α, β] = [2, 4]`.
//!   Linux's module default is 10.
//! - *RTT of a round*: the round's minimum sample, as ccarena's Vegas
//!   ([`RoundRtt`](crate::vegas::RoundRtt); Linux's wVegas takes the mean). The queue-draining
//!   test needs `q_r^min > 0`: with the mean, Linux never sees an exactly empty queue, but with
//!   the minimum an idle path reads `q = 0`, and `0 ≥ 2 · 0` would halve the window of every
//!   idle path.
//! - *When the queue drains*: only in a round whose Diff is above the subflow's band
//!   (`diff_r ≥ α_r + 1`, the rounds that decrease), not in every round as Linux does. A
//!   subflow alone at its equilibrium holds one or two packets, so its queueing delay
//!   "doubles" from one packet to two without any other traffic; draining then halved its
//!   window every few rounds (measured in `crates/sim/tests/mptcp_wvegas.rs`: 2.7 of a clean
//!   10 Mbit/s path used). With the guard the drain still does what §III wants it for: it
//!   empties a queue another flow built (and lets a subflow that joined behind a queue measure
//!   its true BaseRTT, without which it took 4× a Vegas flow's share at a shared bottleneck).
//! - The increase is spread over the round with Reno's byte counting, as in ccarena's Vegas;
//!   Vegas rules apply only in the `Open` state, Reno's elsewhere; a round of fewer than
//!   [`MIN_ROUND_SAMPLES`](crate::vegas::MIN_ROUND_SAMPLES) RTT samples is followed by Reno's
//!   rules (Linux: `cnt_rtt <= 2`); all three are Vegas's own code (`vegas::VegasFrame`,
//!   `vegas::vegas_cong_avoid`).

use crate::reno::{halve_flight, slow_start};
use crate::vegas::{queued_packets, vegas_cong_avoid, Round, VegasFrame, VegasPlan, VegasRules};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndState, Duration, LossEvent, Params, SimTime, SubflowView,
};

/// Default connection-wide α, packets (see the module documentation).
pub const DEFAULT_TOTAL_ALPHA: f64 = 2.0;

/// Default γ, packets: slow start ends when Diff exceeds it (Vegas §3.3; the Linux module's 1).
pub const DEFAULT_GAMMA: f64 = 1.0;

/// wVegas never shrinks cwnd below this many segments by its own rules (Linux: 2).
const MIN_CWND_SEGMENTS: u64 = 2;

/// The parameters wVegas takes: α (`total_alpha`, packets, > 0), γ (`gamma`, packets, ≥ 0) and
/// `drain` (1: §III's queue draining, 0: off).
pub const PARAM_NAMES: &[&str] = &["total_alpha", "gamma", "drain"];

/// What the window does until the next round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    SlowStart,
    Increase,
    Hold,
    /// Not enough samples, or not Open: Reno's rules.
    Reno,
}

impl VegasPlan for Plan {
    const RENO: Plan = Plan::Reno;
}

/// One subflow's wVegas controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Wvegas {
    total_alpha: f64,
    gamma: f64,
    drain: bool,
    frame: VegasFrame<Plan>,
    /// α_r, packets: this subflow's share of `total_alpha` (the whole of it until a round ends).
    alpha_packets: f64,
    /// Smallest queueing delay of a round since the last drain (`None`: none measured > 0).
    min_queue_delay: Option<Duration>,
    /// The last snapshot of the connection's subflows, and this subflow's index in it.
    view: Vec<SubflowView>,
    me: usize,
    last_diff: Option<f64>,
}

impl Wvegas {
    /// A wVegas controller from `params` (names in [`PARAM_NAMES`]; defaults
    /// [`DEFAULT_TOTAL_ALPHA`], [`DEFAULT_GAMMA`], drain on).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for another name; [`CcError::BadParam`] for `total_alpha ≤ 0`,
    /// `gamma < 0` or `drain` not 0 or 1.
    pub fn new(params: &Params) -> Result<Wvegas, CcError> {
        params.expect_only("wvegas", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "wvegas", param, value, reason };
        let total_alpha = params.get_or("total_alpha", DEFAULT_TOTAL_ALPHA);
        if !(total_alpha.is_finite() && total_alpha > 0.0) {
            return Err(bad("total_alpha", total_alpha, "must be a finite number > 0"));
        }
        let gamma = params.get_or("gamma", DEFAULT_GAMMA);
        if !(gamma.is_finite() && gamma >= 0.0) {
            return Err(bad("gamma", gamma, "must be a finite number >= 0"));
        }
        let drain = params.get_or("drain", 1.0);
        if drain != 0.0 && drain != 1.0 {
            return Err(bad("drain", drain, "must be 0 (off) or 1 (on)"));
        }
        Ok(Wvegas {
            total_alpha,
            gamma,
            drain: drain == 1.0,
            frame: VegasFrame::new(Plan::SlowStart),
            alpha_packets: total_alpha,
            min_queue_delay: None,
            view: Vec::new(),
            me: 0,
            last_diff: None,
        })
    }

    /// α_r, packets: this subflow's current threshold.
    pub fn alpha_packets(&self) -> f64 {
        self.alpha_packets
    }

    /// Diff of the last measured round, packets.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    /// `weight_r = x_r / Σ_k x_k` (§III) with this subflow's window `own_cwnd_bytes`; 1
    /// without a view or an RTT of its own (a lone subflow is all of its connection).
    pub fn weight(&self, own_cwnd_bytes: u64) -> f64 {
        let rate = |cwnd: u64, srtt: Duration| cwnd as f64 / srtt.as_nanos().max(1) as f64;
        let Some(own_srtt) = self.view.get(self.me).and_then(|v| v.srtt) else {
            return 1.0;
        };
        let own = rate(own_cwnd_bytes, own_srtt);
        let others: f64 = self
            .view
            .iter()
            .enumerate()
            .filter(|&(k, v)| k != self.me && v.active && v.cwnd_bytes > 0)
            .filter_map(|(_, v)| v.srtt.map(|s| rate(v.cwnd_bytes, s)))
            .sum();
        if own + others > 0.0 {
            own / (own + others)
        } else {
            1.0
        }
    }

    /// §III: if this round's queueing delay is at least twice the smallest since the last
    /// drain, and the round's Diff is above the band (`above_alpha`; see the module
    /// documentation), `cwnd ← cwnd · baseRTT / (2 · RTT)`.
    fn drain_if_doubled(&mut self, st: &mut CwndState, base: Duration, rtt: Duration, above_alpha: bool) {
        let q = rtt - base; // saturating
        if q == Duration::ZERO {
            return;
        }
        let q_min = self.min_queue_delay.map_or(q, |m| m.min(q));
        self.min_queue_delay = Some(q_min);
        if above_alpha && q.as_nanos() >= 2 * q_min.as_nanos() {
            let cut = st.cwnd_bytes as u128 * base.as_nanos() as u128 / (2 * rtt.as_nanos() as u128);
            st.cwnd_bytes = (cut as u64).max(MIN_CWND_SEGMENTS * st.mss_bytes);
            st.ssthresh_bytes = st.ssthresh_bytes.min(st.cwnd_bytes);
            self.min_queue_delay = None;
            self.frame.plan = Plan::Hold;
        }
    }
}

impl VegasRules<Plan> for Wvegas {
    #[inline]
    fn frame(&mut self) -> &mut VegasFrame<Plan> {
        &mut self.frame
    }

    /// The per-round update (§III): Diff, α_r, the window's move, queue draining.
    fn on_round_end(&mut self, st: &mut CwndState, round: &Round, base: Duration) {
        let mss = st.mss_bytes;
        let rtt = round.min_rtt;
        let diff = queued_packets(st.cwnd_packets(), base, rtt);
        self.last_diff = Some(diff);
        if st.in_slow_start() {
            if diff > self.gamma {
                // Linux: cwnd = min(cwnd, target + 1) with target = cwnd · baseRTT / RTT.
                let target = (st.cwnd_bytes as u128 * base.as_nanos() as u128 / rtt.as_nanos().max(1) as u128) as u64;
                st.cwnd_bytes = st.cwnd_bytes.min(target + mss).max(MIN_CWND_SEGMENTS * mss);
                st.ssthresh_bytes = st.cwnd_bytes.saturating_sub(mss).max(MIN_CWND_SEGMENTS * mss);
                self.frame.plan = Plan::Hold;
            } else {
                self.frame.plan = Plan::SlowStart;
            }
            return;
        }
        self.alpha_packets = self.weight(st.cwnd_bytes) * self.total_alpha;
        let above = diff >= self.alpha_packets + 1.0;
        self.frame.plan = if above {
            st.cwnd_bytes = st.cwnd_bytes.saturating_sub(mss).max(MIN_CWND_SEGMENTS * mss);
            // Linux: ssthresh = min(ssthresh, cwnd − 1), so the cut does not re-enter slow start.
            st.ssthresh_bytes = st.ssthresh_bytes.min(st.cwnd_bytes.saturating_sub(mss).max(mss));
            Plan::Hold
        } else if diff < self.alpha_packets {
            Plan::Increase
        } else {
            Plan::Hold
        };
        if self.drain {
            self.drain_if_doubled(st, base, rtt, above);
        }
    }

    fn grow(&mut self, st: &mut CwndState, bytes_acked: u64) {
        match self.frame.plan {
            Plan::SlowStart if st.in_slow_start() => {
                slow_start(st, bytes_acked);
            }
            Plan::Increase => self.frame.increase(st, bytes_acked),
            Plan::SlowStart | Plan::Hold => {}
            Plan::Reno => self.frame.reno_growth(st, bytes_acked),
        }
    }
}

impl CongestionControl for Wvegas {
    fn name(&self) -> &'static str {
        "wvegas"
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        self.frame.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        vegas_cong_avoid(self, st, ack);
    }

    /// Reno's halving, as the Linux module (`tcp_reno_ssthresh`).
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.frame.on_loss();
        halve_flight(st, ev)
    }

    /// Vegas's rules run only in `Open`; the measurement restarts on returning to it.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        self.frame.set_state(new);
    }

    /// `"slow_start"`, `"increase"`, `"hold"` or `"reno"`: the rule for the current round.
    fn mode(&self) -> &'static str {
        match (self.frame.enabled, self.frame.plan) {
            (false, _) | (_, Plan::Reno) => "reno",
            (_, Plan::SlowStart) => "slow_start",
            (_, Plan::Increase) => "increase",
            (_, Plan::Hold) => "hold",
        }
    }

    fn set_coupling_view(&mut self, subflows: &[SubflowView], me: usize) {
        self.view.clear();
        self.view.extend_from_slice(subflows);
        self.me = me;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, PathSim, MSS};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn wvegas(pairs: &[(&str, f64)]) -> Wvegas {
        Wvegas::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    fn view(cwnd_packets: u64, srtt: Duration) -> SubflowView {
        SubflowView {
            cwnd_bytes: cwnd_packets * MSS,
            mss_bytes: MSS,
            srtt: Some(srtt),
            acked_since_loss_bytes: 0,
            acked_between_losses_bytes: 0,
            active: true,
        }
    }

    /// ACKs at explicit times: a window of `window` bytes acknowledged in rounds of 10 ACKs, each
    /// carrying the RTT sample the round asks for.
    struct Feeder {
        now_ns: u64,
        una: u64,
        nxt: u64,
    }

    impl Feeder {
        /// The first ACK, which begins round 0 (its mark: `window` bytes out), and round 0 with
        /// samples of `rtt`, application-limited (the window does not move).
        fn start(cc: &mut Wvegas, st: &mut CwndState, window: u64, rtt: Duration) -> Feeder {
            let mut f = Feeder { now_ns: rtt.as_nanos(), una: 0, nxt: window };
            f.deliver(cc, st, MSS, rtt, false);
            f.round(cc, st, rtt, false);
            f
        }

        fn deliver(&mut self, cc: &mut Wvegas, st: &mut CwndState, bytes: u64, rtt: Duration, limited: bool) {
            let mut a = ack(self.now_ns, bytes, Some(rtt), self.una, self.nxt);
            a.cwnd_limited = limited;
            cc.pkts_acked(st, &a);
            cc.cong_avoid(st, &a);
        }

        /// One round: 10 ACKs up to the round's mark, each with the sample `rtt`; the window
        /// in flight stays the same.
        fn round(&mut self, cc: &mut Wvegas, st: &mut CwndState, rtt: Duration, limited: bool) {
            let mark = self.nxt;
            let step = (mark - self.una) / 10;
            for i in 0..10 {
                let bytes = if i == 9 { mark - self.una } else { step };
                self.una += bytes;
                self.nxt += bytes;
                self.now_ns += rtt.as_nanos() / 10;
                self.deliver(cc, st, bytes, rtt, limited);
            }
        }
    }

    /// A controller in congestion avoidance at `cwnd_packets`, BaseRTT 100 ms measured over a
    /// first round (Diff 0: its plan for the next round is to increase), with `views` lent
    /// (itself first).
    fn in_congestion_avoidance(
        cwnd_packets: u64,
        views: &[SubflowView],
        pairs: &[(&str, f64)],
    ) -> (Wvegas, CwndState, Feeder) {
        let mut cc = wvegas(pairs);
        let mut st = CwndState::new(cwnd_packets * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        cc.set_coupling_view(views, 0);
        let f = Feeder::start(&mut cc, &mut st, cwnd_packets * MSS, ms(100));
        (cc, st, f)
    }

    #[test]
    fn weight_is_the_subflows_rate_over_the_connections() {
        // x = cwnd/srtt: 30/50 and 10/25 packets per ms, 0.6 and 0.4 (ICNP 2012 §III).
        let mut cc = wvegas(&[]);
        assert_eq!(cc.weight(30 * MSS), 1.0, "no view: the whole connection");
        let mut views = vec![view(30, ms(50)), view(10, ms(25))];
        cc.set_coupling_view(&views, 0);
        assert!((cc.weight(30 * MSS) - 0.6).abs() < 1e-12);
        cc.set_coupling_view(&views, 1);
        assert!((cc.weight(10 * MSS) - 0.4).abs() < 1e-12);
        // An inactive subflow, or one without an RTT sample, is not part of Σx.
        views.push(SubflowView { active: false, ..view(50, ms(10)) });
        views.push(SubflowView { srtt: None, ..view(50, ms(10)) });
        cc.set_coupling_view(&views, 0);
        assert!((cc.weight(30 * MSS) - 0.6).abs() < 1e-12);
    }

    #[test]
    fn a_round_sets_alpha_to_the_rate_share_of_the_total_and_steers_diff_toward_it() {
        // Two equal subflows: weight 1/2, α_r = 1/2 · α = 1 packet (α = 2).
        let two = [view(20, ms(100)), view(20, ms(100))];

        // RTT = BaseRTT: Diff 0 < α_r, so one MSS over the round (20 MSS acknowledged), and
        // again over the next.
        let (mut cc, mut st, mut f) = in_congestion_avoidance(20, &two, &[]);
        assert_eq!((cc.last_diff(), cc.alpha_packets(), cc.mode()), (Some(0.0), 1.0, "increase"));
        f.round(&mut cc, &mut st, ms(100), true);
        assert_eq!(st.cwnd_bytes, 21 * MSS, "one MSS in one round");
        assert_eq!((cc.last_diff(), cc.mode()), (Some(0.0), "increase"));

        // Diff = 20 · (1 − 100/108) = 1.48 ∈ [α_r, α_r + 1): hold.
        let (mut cc, mut st, mut f) = in_congestion_avoidance(20, &two, &[]);
        f.round(&mut cc, &mut st, ms(108), false);
        let diff = cc.last_diff().unwrap();
        assert!((diff - 20.0 * (1.0 - 100.0 / 108.0)).abs() < 1e-9, "{diff}");
        assert_eq!((cc.mode(), st.cwnd_bytes), ("hold", 20 * MSS));

        // Diff = 20 · (1 − 100/125) = 4 ≥ α_r + 1: one MSS less at once.
        let (mut cc, mut st, mut f) = in_congestion_avoidance(20, &two, &[]);
        f.round(&mut cc, &mut st, ms(125), false);
        assert!((cc.last_diff().unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(st.cwnd_bytes, 19 * MSS);
        assert!(!st.in_slow_start());

        // The same Diff of 4 is below the whole α = 10 of a lone subflow: it grows.
        let (mut cc, mut st, mut f) = in_congestion_avoidance(20, &two[..1], &[("total_alpha", 10.0)]);
        f.round(&mut cc, &mut st, ms(125), false);
        assert_eq!((cc.alpha_packets(), cc.mode()), (10.0, "increase"));
    }

    #[test]
    fn a_doubled_queueing_delay_drains_the_window_to_base_rtt_over_twice_the_rtt() {
        for drain in [1.0, 0.0] {
            let (mut cc, mut st, mut f) = in_congestion_avoidance(40, &[], &[("drain", drain)]);
            // q = 10 ms: Diff = 40 · 10/110 = 3.6 ≥ α + 1 = 3, one MSS less; q_min = 10 ms.
            f.round(&mut cc, &mut st, ms(110), false);
            assert_eq!(st.cwnd_bytes, 39 * MSS);
            // q = 20 ms = 2 · q_min: one MSS less, then cwnd · 100/(2 · 120) (§III).
            f.round(&mut cc, &mut st, ms(120), false);
            let expect = if drain == 1.0 { 38 * MSS * 100 / 240 } else { 38 * MSS };
            assert_eq!(st.cwnd_bytes, expect, "drain {drain}");
        }
    }

    #[test]
    fn slow_start_ends_when_diff_exceeds_gamma_at_the_expected_window_plus_one() {
        let mut cc = wvegas(&[]);
        let mut st = CwndState::new(20 * MSS, MSS);
        let mut f = Feeder::start(&mut cc, &mut st, 20 * MSS, ms(100));
        // Application-limited ACKs: the window does not grow, so the round's end is exact.
        assert!(st.in_slow_start());
        assert_eq!(cc.mode(), "slow_start");
        // Diff = 20 · (1 − 100/125) = 4 > γ: cwnd = min(20, 20 · 100/125 + 1) = 17 MSS.
        f.round(&mut cc, &mut st, ms(125), false);
        assert_eq!(st.cwnd_bytes, 17 * MSS);
        assert_eq!(st.ssthresh_bytes, 16 * MSS);
        assert_eq!(cc.mode(), "hold");
    }

    #[test]
    fn loss_halves_as_reno() {
        let mut cc = wvegas(&[]);
        let st = CwndState::new(100 * MSS, MSS);
        let ev = LossEvent {
            now: SimTime::ZERO,
            kind: crate::LossKind::FastRetransmit,
            flight_size_bytes: 80 * MSS,
            in_flight_bytes: 80 * MSS,
        };
        assert_eq!(cc.ssthresh(&st, &ev), 40 * MSS);
        assert_eq!(cc.mode(), "reno");
    }

    #[test]
    fn alone_on_a_path_it_holds_about_alpha_packets_queued() {
        for drain in [0.0, 1.0] {
            let mut cc = wvegas(&[("drain", drain)]);
            let mut st = CwndState::new(10 * MSS, MSS);
            let mut path = PathSim::new(ms(50), 100);
            path.run_until(&mut cc, &mut st, 30_000_000_000);
            let (mut queues, mut acked) = (Vec::new(), 0);
            let (t0, una0) = (path.now_ns, path.snd_una);
            while path.now_ns < 40_000_000_000 {
                path.step(&mut cc, &mut st);
                queues.push(path.queue_packets());
            }
            acked += path.snd_una - una0;
            let mean = queues.iter().sum::<u64>() as f64 / queues.len() as f64;
            // The path carries one MSS per pkt_ns.
            let util = acked as f64 / MSS as f64 * path.pkt_ns as f64 / (path.now_ns - t0) as f64;
            eprintln!("drain {drain}: mean queue {mean:.2} packets, utilization {util:.3}");
            assert!((0.5..=4.0).contains(&mean), "drain {drain}: mean queue {mean:.2}");
        }
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Wvegas::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("total_alpha", 0.0)]), Err(CcError::BadParam { param: "total_alpha", .. })));
        assert!(matches!(p(&[("gamma", -1.0)]), Err(CcError::BadParam { param: "gamma", .. })));
        assert!(matches!(p(&[("drain", 0.5)]), Err(CcError::BadParam { param: "drain", .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
    }
}
