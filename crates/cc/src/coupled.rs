//! Coupled congestion control for Multipath TCP: the subflows of one connection share one
//! increase so that the connection takes no more than a single TCP flow would at a shared
//! bottleneck, and moves traffic off congested paths (RFC 6356 §2's three goals).
//!
//! The interface: an MPTCP connection (the transport's `mptcp` module) owns one sender per
//! subflow, each with its own controller. Before every hook of subflow `me`'s controller that
//! can change its window (an ACK, a timeout), the connection lends that controller a snapshot of
//! every subflow ([`SubflowView`]) through [`crate::CongestionControl::set_coupling_view`]. A
//! coupled controller ([`new_coupled_controller`]) grows like Reno in slow start and replaces
//! Reno's congestion-avoidance increase by its coupled one (and BALIA its decrease too); other
//! controllers ignore the view (`uncoupled`: every subflow its own flavor, as Linux runs MPTCP).
//! The cc crate stays free of the transport: the view is plain numbers.
//!
//! The fourth coupling, wVegas ([`Coupling::Wvegas`]), is delay-based: each subflow runs Vegas
//! against a share of one connection-wide α; its controller is [`crate::wvegas::Wvegas`],
//! which [`new_coupled_controller`] builds and which reads the same view.
//!
//! # The three couplings
//!
//! All three keep Reno's slow start ([`crate::reno::cwnd_limited_slow_start_first`]) and add, per
//! ACK of `bytes_acked` bytes on subflow `r` in congestion avoidance, `bytes_acked · MSS_r · c_r`
//! bytes to `cwnd_r`, where `c_r` (1/bytes) is the coupling's increase per byte acknowledged,
//! computed on every ACK from the view. With windows `w` in bytes, RTTs `τ` (any unit: every
//! formula below is invariant to the RTT's scale) and `x = w/τ`, over the set `S` of subflows in
//! the sums (active, with an RTT sample; the subflow itself always):
//!
//! - **LIA** (RFC 6356 §3): `c_r = min(α/w_total, 1/w_r)` with
//!   `α = w_total · max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)²`. Decrease: Reno's halving.
//! - **OLIA** (Khalili et al., CoNEXT 2012 / IEEE/ACM ToN 2013, §5 eq. 5):
//!   `c_r = (w_r/τ_r²) / (Σ_k w_k/τ_k)² + α_r/w_r`, where `M` is the set of subflows with the
//!   largest window, `B` those with the largest `ℓ_k/τ_k²` (`ℓ_k`: bytes acknowledged between
//!   the subflow's last two losses, or since its last loss if more), and
//!   `α_r = 1/(|S|·|B∖M|)` for `r ∈ B∖M`, `−1/(|S|·|M|)` for `r ∈ M` when `B∖M ≠ ∅`, 0
//!   otherwise: window moves from the largest windows to the best paths that lack one. `c_r` may
//!   be negative (the window of a max-window path then shrinks by one MSS per `1/|c_r|` bytes
//!   acknowledged). Decrease: Reno's halving.
//! - **BALIA** (Peng, Walid, Hwang, Low, IEEE/ACM ToN 24(1) 2016, §VI):
//!   `c_r = x_r/(τ_r (Σ_k x_k)²) · ((1+α_r)/2) · ((4+α_r)/5)` with `α_r = max_k x_k / x_r`.
//!   Decrease on a congestion event: `w_r/2 · min(α_r, 1.5)` (RFC 5681's FlightSize standing for
//!   `w_r`, as in Reno's halving, so a lone subflow halves exactly as Reno).
//!
//! A window in packets of `MSS_r` and a window in bytes give the same per-byte formulas (each
//! `c_r` has the dimension of 1/window, times `MSS_r` per MSS acknowledged), which is why the
//! couplings are written here in bytes. With one subflow in `S` each reduces to Reno's
//! `c = 1/cwnd`; the growth is then bit-for-bit Reno's.
//!
//! The increase is counted as Reno counts it ([`crate::reno::cong_avoid_ai`]): one MSS each time
//! the bytes acknowledged reach the *effective window* `1/c_r`, the bytes counted toward the next
//! MSS carried between ACKs so that small increases add up rather than round away.

use std::str::FromStr;

use crate::reno::{cong_avoid_ai, cwnd_limited_slow_start_first, halve_flight};
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, Params};

/// How an MPTCP connection couples its subflows' windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coupling {
    /// Every subflow runs its own flavor, unaware of the others (Linux's MPTCP today).
    Uncoupled,
    /// Linked Increases Algorithm (RFC 6356 §3).
    Lia,
    /// Opportunistic LIA (Khalili, Gast, Popovic, Le Boudec, "MPTCP is not Pareto-Optimal",
    /// CoNEXT 2012, §5).
    Olia,
    /// Balanced LIA (Peng, Walid, Hwang, Low, "Multipath TCP: Analysis, Design, and
    /// Implementation", IEEE/ACM ToN 24(1), 2016, §VI).
    Balia,
    /// Weighted Vegas (Cao, Xu, Fu, "Delay-based Congestion Control for Multipath TCP", IEEE
    /// ICNP 2012): each subflow runs Vegas against its rate's share of one connection-wide α
    /// ([`crate::wvegas`]).
    Wvegas,
}

impl Coupling {
    /// Every coupling, in the order the scenario reference lists them.
    pub const ALL: [Coupling; 5] =
        [Coupling::Lia, Coupling::Olia, Coupling::Balia, Coupling::Wvegas, Coupling::Uncoupled];

    /// The name a scenario spells (`"lia"`).
    pub fn name(self) -> &'static str {
        match self {
            Coupling::Uncoupled => "uncoupled",
            Coupling::Lia => "lia",
            Coupling::Olia => "olia",
            Coupling::Balia => "balia",
            Coupling::Wvegas => "wvegas",
        }
    }

    /// The flavor a coupled connection's subflows name, the controller its source couples:
    /// `"reno"` for LIA, OLIA and BALIA, `"vegas"` for wVegas; `None` for `Uncoupled` (any).
    pub fn subflow_flavor(self) -> Option<&'static str> {
        match self {
            Coupling::Uncoupled => None,
            Coupling::Lia | Coupling::Olia | Coupling::Balia => Some("reno"),
            Coupling::Wvegas => Some("vegas"),
        }
    }
}

impl FromStr for Coupling {
    type Err = String;

    fn from_str(s: &str) -> Result<Coupling, String> {
        Coupling::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown coupling '{s}': use lia, olia, balia, wvegas or uncoupled"))
    }
}

pub use crate::SubflowView;

/// The controller of one subflow of a coupled connection (`coupling` one of LIA, OLIA, BALIA;
/// see the module documentation for each one's increase and decrease; or wVegas, see
/// [`crate::wvegas`]), with `params` its parameters (LIA, OLIA, BALIA have none; wVegas's are
/// [`crate::wvegas::PARAM_NAMES`]).
///
/// # Errors
/// [`CcError::BadParam`] for [`Coupling::Uncoupled`], which has no controller of its own (the
/// caller builds each subflow's flavor with [`crate::new_controller`]);
/// [`CcError::UnknownParam`] for any parameter.
pub fn new_coupled_controller(coupling: Coupling, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    if coupling == Coupling::Wvegas {
        return Ok(Box::new(crate::wvegas::Wvegas::new(params)?));
    }
    Ok(Box::new(CoupledController::new(coupling, params)?))
}

/// One subflow's controller under LIA, OLIA or BALIA: Reno's slow start, the coupling's
/// congestion-avoidance increase computed from the last [`SubflowView`]s the connection lent it,
/// Reno's halving (LIA, OLIA) or BALIA's decrease. Without a view, or before its own subflow
/// has an RTT sample, it grows exactly as Reno.
#[derive(Debug, Clone)]
pub struct CoupledController {
    coupling: Coupling,
    /// Bytes acknowledged toward the next one-MSS increase (Reno's byte counter).
    inc_acc_bytes: u64,
    /// Bytes acknowledged toward the next one-MSS decrease while OLIA's increase is negative.
    dec_acc_bytes: u64,
    /// The last snapshot of the connection's subflows, and this subflow's index in it.
    view: Vec<SubflowView>,
    me: usize,
    /// Scratch list of the subflows in the sums, reused so an ACK allocates nothing.
    paths: Vec<Path>,
}

/// A subflow that enters the sums, as numbers the formulas use.
#[derive(Debug, Clone, Copy)]
struct Path {
    /// Window, bytes (as an integer for OLIA's exact max-window set).
    w_bytes: u64,
    /// Smoothed RTT, ns (at least 1).
    tau_ns: u64,
    /// OLIA's ℓ: max(ℓ1, ℓ2), bytes.
    ell_bytes: u64,
    /// `w_bytes` and `tau_ns` as floats, converted once per ACK: the formulas read each
    /// several times, and an unsigned conversion is a dozen instructions.
    w: f64,
    tau: f64,
}

impl Path {
    fn new(w_bytes: u64, tau_ns: u64, ell_bytes: u64) -> Path {
        Path { w_bytes, tau_ns, ell_bytes, w: exact_f64(w_bytes), tau: exact_f64(tau_ns) }
    }

    fn w(&self) -> f64 {
        self.w
    }

    fn tau(&self) -> f64 {
        self.tau
    }

    /// Rate `x = w/τ`, bytes per ns.
    fn x(&self) -> f64 {
        self.w() / self.tau()
    }

    /// `τ²` as an exact integer (saturating), for comparing `ℓ/τ²` without rounding.
    fn tau_sq(&self) -> u128 {
        (self.tau_ns as u128).saturating_mul(self.tau_ns as u128)
    }
}

impl CoupledController {
    /// A controller for `coupling`; see [`new_coupled_controller`] for the errors.
    ///
    /// # Errors
    /// As [`new_coupled_controller`].
    pub fn new(coupling: Coupling, params: &Params) -> Result<CoupledController, CcError> {
        if coupling == Coupling::Uncoupled {
            return Err(CcError::BadParam {
                flavor: "uncoupled",
                param: "coupling",
                value: f64::NAN,
                reason: "'uncoupled' has no coupled controller: every subflow runs its own flavor \
                         (build it with new_controller)",
            });
        }
        if coupling == Coupling::Wvegas {
            return Err(CcError::BadParam {
                flavor: "wvegas",
                param: "coupling",
                value: f64::NAN,
                reason: "wVegas couples Vegas, not Reno's increase: build it with new_coupled_controller",
            });
        }
        params.expect_only(coupling.name(), &[])?;
        Ok(CoupledController {
            coupling,
            inc_acc_bytes: 0,
            dec_acc_bytes: 0,
            view: Vec::new(),
            me: 0,
            paths: Vec::new(),
        })
    }

    /// The coupling this controller runs.
    pub fn coupling(&self) -> Coupling {
        self.coupling
    }

    /// Call `f(is_me, view, w_bytes, tau_ns)` for each subflow that enters the sums, in view
    /// order (`w_bytes` and `tau_ns` at least 1); false, with no call, without a view or before
    /// this subflow's first RTT sample (then the coupling grows as Reno). This subflow's window
    /// is `own_cwnd_bytes` (the window now, not the snapshot's).
    fn for_each_path(&self, own_cwnd_bytes: u64, mut f: impl FnMut(bool, &SubflowView, u64, u64)) -> bool {
        let Some(own_srtt) = self.view.get(self.me).and_then(|v| v.srtt) else {
            return false;
        };
        for (k, v) in self.view.iter().enumerate() {
            let (w_bytes, srtt) = if k == self.me {
                (own_cwnd_bytes, own_srtt)
            } else {
                match v.srtt {
                    // A subflow with a zero window sends nothing: it adds nothing to the sums
                    // and would make BALIA's α = max x / x infinite were it `me`.
                    Some(srtt) if v.active && v.cwnd_bytes > 0 => (v.cwnd_bytes, srtt),
                    _ => continue,
                }
            };
            f(k == self.me, v, w_bytes.max(1), srtt.as_nanos().max(1));
        }
        true
    }

    /// Fill `self.paths` with the subflows that enter the sums and return this subflow's index
    /// among them; `None` as [`CoupledController::for_each_path`] gives no path.
    fn gather(&mut self, own_cwnd_bytes: u64) -> Option<usize> {
        let mut paths = std::mem::take(&mut self.paths);
        paths.clear();
        let mut me_idx = None;
        let found = self.for_each_path(own_cwnd_bytes, |is_me, v, w_bytes, tau_ns| {
            if is_me {
                me_idx = Some(paths.len());
            }
            let ell_bytes = v.acked_since_loss_bytes.max(v.acked_between_losses_bytes);
            paths.push(Path::new(w_bytes, tau_ns, ell_bytes));
        });
        self.paths = paths;
        if found {
            me_idx
        } else {
            None
        }
    }

    /// RFC 6356 §3: `min(α/w_total, 1/w_r)` with `α = w_total · max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)²`,
    /// in one pass over the view (LIA reads no ℓ and needs no path list: this runs on every ACK
    /// of every subflow). `None`: grow as Reno.
    fn lia_increase(&self, own_cwnd_bytes: u64) -> Option<f64> {
        // Each sum adds in view order, as three passes would.
        let (mut total, mut best, mut sum, mut own_w) = (-0.0f64, 0.0f64, -0.0f64, 1.0f64);
        let found = self.for_each_path(own_cwnd_bytes, |is_me, _, w_bytes, tau_ns| {
            let (w, tau) = (exact_f64(w_bytes), exact_f64(tau_ns));
            total += w;
            best = best.max(w / (tau * tau));
            sum += w / tau;
            if is_me {
                own_w = w;
            }
        });
        if !found {
            return None;
        }
        let alpha = total * best / (sum * sum);
        Some((alpha / total).min(1.0 / own_w))
    }

    /// The coupling's congestion-avoidance increase per byte acknowledged, per MSS: `c_r` in
    /// 1/bytes (the window grows by `bytes_acked · MSS · c_r`). `None`: grow as Reno.
    fn increase_per_byte(&mut self, own_cwnd_bytes: u64) -> Option<f64> {
        if self.coupling == Coupling::Lia {
            return self.lia_increase(own_cwnd_bytes);
        }
        let me = self.gather(own_cwnd_bytes)?;
        let p = &self.paths;
        let c = match self.coupling {
            Coupling::Olia => olia_increase(p, me),
            Coupling::Balia => balia_increase(p, p[me]),
            Coupling::Lia | Coupling::Uncoupled | Coupling::Wvegas => {
                unreachable!("LIA is computed above; CoupledController::new builds neither 'uncoupled' nor 'wvegas'")
            }
        };
        Some(c)
    }

    /// Grow (or, for a negative `c`, shrink) cwnd by `bytes_acked · MSS · c` bytes, in whole-MSS
    /// steps counted in bytes as Reno counts them.
    fn apply(&mut self, st: &mut CwndState, c: f64, bytes_acked: u64) {
        if !c.is_finite() || c == 0.0 {
            return;
        }
        // One MSS per `1/|c|` bytes acknowledged. The float-to-int cast saturates, so a vanishing
        // `c` gives an effective window no ACK stream reaches rather than an overflow.
        let w_eff = ((1.0 / c.abs()).round() as u64).max(1);
        if c > 0.0 {
            // Bytes counted toward a step at a larger effective window are worth at most one step
            // at this one: never a burst of increases because another subflow's window fell.
            self.inc_acc_bytes = self.inc_acc_bytes.min(w_eff);
            cong_avoid_ai(st, w_eff, &mut self.inc_acc_bytes, bytes_acked);
        } else {
            self.dec_acc_bytes = self.dec_acc_bytes.min(w_eff) + bytes_acked;
            if self.dec_acc_bytes >= w_eff {
                let steps = self.dec_acc_bytes / w_eff;
                self.dec_acc_bytes -= steps * w_eff;
                st.cwnd_bytes = st.cwnd_bytes.saturating_sub(steps * st.mss_bytes).max(st.mss_bytes);
                // OLIA moves window off this path inside congestion avoidance; a window pushed
                // below ssthresh must not re-enter slow start on the next ACK.
                st.ssthresh_bytes = st.ssthresh_bytes.min(st.cwnd_bytes);
            }
        }
    }

    /// BALIA's `α_r = max_k x_k / x_r` for this subflow with window `own_cwnd_bytes`; 1 when
    /// the view does not allow it (no view, no RTT yet), which makes the decrease Reno's.
    fn balia_alpha(&mut self, own_cwnd_bytes: u64) -> f64 {
        match self.gather(own_cwnd_bytes) {
            Some(me) => {
                let x_max = self.paths.iter().map(Path::x).fold(0.0, f64::max);
                x_max / self.paths[me].x()
            }
            None => 1.0,
        }
    }
}

/// `x as f64`, exactly as that cast rounds, for `x` below 2⁶³ (every window and RTT here) by the
/// signed conversion: one instruction where the unsigned one is about a dozen on x86-64.
#[inline]
fn exact_f64(x: u64) -> f64 {
    if x <= i64::MAX as u64 {
        x as i64 as f64
    } else {
        x as f64
    }
}

/// Khalili et al. §5 eq. 5: `(w_r/τ_r²)/(Σ_k w_k/τ_k)² + α_r/w_r`, α_r from the max-window set
/// `M` and the best-path set `B` (largest `ℓ/τ²`).
///
/// `B` ranks paths by `ℓ_k/τ_k²`: a TCP flow's rate on a path is `∝ √ℓ/τ` (ℓ ≈ 1/loss rate), so
/// these are the paths where a single TCP would do best, the notion of best path of the paper's
/// fluid model; the authors' Linux implementation ranks by the same quantity. Both sets compare
/// exact integers, so paths alike in every number tie, as the sets intend.
fn olia_increase(p: &[Path], me: usize) -> f64 {
    let r = p[me];
    let sum: f64 = p.iter().map(Path::x).sum();
    let first = r.w() / (r.tau() * r.tau()) / (sum * sum);

    let max_w = p.iter().map(|k| k.w_bytes).max().unwrap_or(0);
    let in_m = |k: &Path| k.w_bytes == max_w;
    // `a` ranks above `b` iff ℓ_a/τ_a² > ℓ_b/τ_b², i.e. ℓ_a·τ_b² > ℓ_b·τ_a².
    let key = |a: &Path, b: &Path| {
        ((a.ell_bytes as u128).saturating_mul(b.tau_sq())).cmp(&(b.ell_bytes as u128).saturating_mul(a.tau_sq()))
    };
    let best = *p.iter().max_by(|a, b| key(a, b)).expect("the subflow itself is always in the sums");
    let in_b = |k: &Path| key(k, &best) == std::cmp::Ordering::Equal;

    let n = p.len() as f64;
    let collected = p.iter().filter(|k| in_b(k) && !in_m(k)).count() as f64;
    let m_count = p.iter().filter(|k| in_m(k)).count() as f64;
    let alpha = if collected == 0.0 {
        0.0
    } else if in_b(&r) && !in_m(&r) {
        1.0 / (n * collected)
    } else if in_m(&r) {
        -1.0 / (n * m_count)
    } else {
        0.0
    };
    first + alpha / r.w()
}

/// Peng et al. §VI: `x_r/(τ_r (Σ_k x_k)²) · ((1+α_r)/2) · ((4+α_r)/5)`, `α_r = max_k x_k / x_r`.
fn balia_increase(p: &[Path], r: Path) -> f64 {
    let sum: f64 = p.iter().map(Path::x).sum();
    let x_max = p.iter().map(Path::x).fold(0.0, f64::max);
    let alpha = x_max / r.x();
    r.x() / (r.tau() * sum * sum) * ((1.0 + alpha) / 2.0) * ((4.0 + alpha) / 5.0)
}

impl CongestionControl for CoupledController {
    fn name(&self) -> &'static str {
        self.coupling.name()
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        match self.increase_per_byte(st.cwnd_bytes) {
            Some(c) => self.apply(st, c, acked),
            // Reno's increase: one MSS per window acknowledged.
            None => {
                let w = st.cwnd_bytes;
                cong_avoid_ai(st, w, &mut self.inc_acc_bytes, acked);
            }
        }
    }

    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.inc_acc_bytes = 0;
        self.dec_acc_bytes = 0;
        match self.coupling {
            Coupling::Balia => {
                let alpha = self.balia_alpha(st.cwnd_bytes);
                // w − (w/2)·min(α, 1.5) = w·(1 − min(α, 1.5)/2); α ≥ 1 by definition, and at
                // α = 1 this is Reno's FlightSize/2 to the byte.
                let keep = 1.0 - alpha.clamp(1.0, 1.5) / 2.0;
                let ss = (ev.flight_size_bytes as f64 * keep).floor() as u64;
                ss.max(2 * st.mss_bytes)
            }
            _ => halve_flight(st, ev),
        }
    }

    fn set_coupling_view(&mut self, subflows: &[SubflowView], me: usize) {
        self.view.clear();
        self.view.extend_from_slice(subflows);
        self.me = me;
    }
}
