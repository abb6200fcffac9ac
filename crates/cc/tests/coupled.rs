//! The coupled MPTCP controllers (LIA, OLIA, BALIA) against their sources, in explicit time.
//!
//! The per-ACK increase is measured, not assumed: a controller in congestion avoidance gets
//! 1-byte ACKs until its window moves by one MSS, and the bytes that took is the effective
//! window `MSS/d`, where `d` is the source's increase in packets per packet acknowledged,
//! computed here in the source's own units (windows in packets, RTTs in seconds).
//! RFC 6356 §2's goals are checked in a small deterministic round-based AIMD model at the end.

use ccarena_cc::coupled::{new_coupled_controller, Coupling, SubflowView};
use ccarena_cc::{
    new_controller, AckSample, CaState, CcError, CongestionControl, CwndState, Duration, LossEvent, LossKind, Params,
    SimTime,
};

const MSS: u64 = 1448;

fn ack(bytes: u64) -> AckSample {
    AckSample {
        now: SimTime::ZERO,
        bytes_acked: bytes,
        rtt: None,
        min_rtt: None,
        srtt: None,
        one_way_delay: None,
        prior_in_flight_bytes: 0,
        in_flight_bytes: 0,
        snd_una: 0,
        snd_nxt: 0,
        ece: false,
        ce_bytes: 0,
        cwnd_limited: true,
        state: CaState::Open,
    }
}

fn loss(flight_bytes: u64) -> LossEvent {
    LossEvent {
        now: SimTime::ZERO,
        kind: LossKind::FastRetransmit,
        flight_size_bytes: flight_bytes,
        in_flight_bytes: flight_bytes,
    }
}

/// A path as the tests describe it: window in packets, RTT in ms, OLIA's ℓ in packets.
#[derive(Clone, Copy)]
struct P {
    w_pkts: u64,
    rtt_ms: u64,
    ell_pkts: u64,
}

fn p(w_pkts: u64, rtt_ms: u64) -> P {
    P { w_pkts, rtt_ms, ell_pkts: 0 }
}

fn pl(w_pkts: u64, rtt_ms: u64, ell_pkts: u64) -> P {
    P { w_pkts, rtt_ms, ell_pkts }
}

fn views(paths: &[P]) -> Vec<SubflowView> {
    paths
        .iter()
        .map(|q| SubflowView {
            cwnd_bytes: q.w_pkts * MSS,
            mss_bytes: MSS,
            srtt: Some(Duration::from_millis(q.rtt_ms)),
            acked_since_loss_bytes: q.ell_pkts * MSS,
            acked_between_losses_bytes: 0,
            active: true,
        })
        .collect()
}

fn coupled(c: Coupling) -> Box<dyn CongestionControl> {
    new_coupled_controller(c, &Params::default()).unwrap()
}

/// Bytes acknowledged (in 1-byte ACKs) until subflow `me` of `paths`, in congestion avoidance,
/// moves its window by one MSS, and the direction it moved (+1 or −1).
fn bytes_to_one_mss(c: Coupling, paths: &[P], me: usize) -> (u64, i64) {
    let mut cc = coupled(c);
    let w0 = paths[me].w_pkts * MSS;
    let mut st = CwndState::new(w0, MSS);
    st.ssthresh_bytes = w0;
    let v = views(paths);
    for n in 1..=50_000_000u64 {
        cc.set_coupling_view(&v, me);
        cc.cong_avoid(&mut st, &ack(1));
        if st.cwnd_bytes != w0 {
            let dir = if st.cwnd_bytes > w0 { 1 } else { -1 };
            assert_eq!(st.cwnd_bytes.abs_diff(w0), MSS, "the window moves in whole MSS");
            return (n, dir);
        }
    }
    panic!("no change of window after 50 MB acknowledged");
}

/// Assert the measured effective window matches `d` (packets per packet acknowledged).
fn assert_increase(c: Coupling, paths: &[P], me: usize, d_pkts_per_pkt: f64) {
    let (n, dir) = bytes_to_one_mss(c, paths, me);
    let expected = MSS as f64 / d_pkts_per_pkt.abs();
    assert_eq!(dir, if d_pkts_per_pkt > 0.0 { 1 } else { -1 }, "{c:?} me={me}: direction");
    assert!(
        (n as f64 - expected).abs() <= 1.0,
        "{c:?} me={me}: one MSS after {n} bytes, source's formula says {expected:.1} (d = {d_pkts_per_pkt:.6})"
    );
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// RFC 6356 §3 in packets: d = min(α/w_total, 1/w_i), α = w_total·max(w/rtt²)/(Σ w/rtt)².
fn lia_d(paths: &[P], me: usize) -> f64 {
    let total: f64 = paths.iter().map(|q| q.w_pkts as f64).sum();
    let best = paths.iter().map(|q| q.w_pkts as f64 / secs(q.rtt_ms).powi(2)).fold(0.0, f64::max);
    let sum: f64 = paths.iter().map(|q| q.w_pkts as f64 / secs(q.rtt_ms)).sum();
    let alpha = total * best / sum.powi(2);
    (alpha / total).min(1.0 / paths[me].w_pkts as f64)
}

/// Khalili et al. eq. 5 in packets, with α_r given by the test case.
fn olia_d(paths: &[P], me: usize, alpha_r: f64) -> f64 {
    let r = paths[me];
    let sum: f64 = paths.iter().map(|q| q.w_pkts as f64 / secs(q.rtt_ms)).sum();
    (r.w_pkts as f64 / secs(r.rtt_ms).powi(2)) / sum.powi(2) + alpha_r / r.w_pkts as f64
}

/// Peng et al. in packets: x_r/(τ_r (Σx)²)·((1+α)/2)·((4+α)/5), α = max x / x_r.
fn balia_d(paths: &[P], me: usize) -> f64 {
    let x: Vec<f64> = paths.iter().map(|q| q.w_pkts as f64 / secs(q.rtt_ms)).collect();
    let sum: f64 = x.iter().sum();
    let alpha = x.iter().cloned().fold(0.0, f64::max) / x[me];
    x[me] / (secs(paths[me].rtt_ms) * sum * sum) * ((1.0 + alpha) / 2.0) * ((4.0 + alpha) / 5.0)
}

#[test]
fn lia_increase_per_ack_matches_rfc6356_formula() {
    let two = [p(10, 10), p(20, 40)];
    let three = [p(8, 50), p(30, 20), p(12, 100)];
    for me in 0..2 {
        assert_increase(Coupling::Lia, &two, me, lia_d(&two, me));
    }
    for me in 0..3 {
        assert_increase(Coupling::Lia, &three, me, lia_d(&three, me));
    }
    // The increase on two paths is well below Reno's 1/w: the connection is as aggressive as
    // one TCP on its best path, not two.
    assert!(lia_d(&two, 0) < 0.5 / 10.0);
}

#[test]
fn lia_increase_is_capped_at_renos_on_a_long_rtt_path() {
    // A big window on a 1 s path beside a 10 ms path: α/w_total exceeds 1/w_me, and RFC 6356
    // caps the increase at what a TCP on that path would do.
    let paths = [p(100, 10), p(200, 1000)];
    let total = 300.0;
    let alpha = total * (100.0 / 0.01f64.powi(2)) / (100.0 / 0.01 + 200.0 / 1.0f64).powi(2);
    assert!(alpha / total > 1.0 / 200.0, "the cap must bind in this case");
    assert_increase(Coupling::Lia, &paths, 1, 1.0 / 200.0);
    let (n, _) = bytes_to_one_mss(Coupling::Lia, &paths, 1);
    assert_eq!(n, 200 * MSS, "exactly Reno's one MSS per window acknowledged");
}

#[test]
fn olia_best_path_with_small_window_gains_and_max_window_path_loses() {
    // Path 0: 20 packets at 10 ms, 1000 packets between losses (best: largest ℓ/τ², not max
    // window). Path 1: 30 packets at 100 ms, 50 packets between losses (max window, not best).
    // B∖M = {0}: α_0 = 1/(2·1), α_1 = −1/(2·1).
    let paths = [pl(20, 10, 1000), pl(30, 100, 50)];
    assert_increase(Coupling::Olia, &paths, 0, olia_d(&paths, 0, 0.5));
    let d1 = olia_d(&paths, 1, -0.5);
    assert!(d1 < 0.0, "the max-window path's window shrinks here (d = {d1})");
    assert_increase(Coupling::Olia, &paths, 1, d1);
}

#[test]
fn olia_alpha_is_zero_when_the_best_paths_have_the_largest_windows() {
    // The best path (largest ℓ/τ²) already has the max window: B∖M = ∅, α = 0 everywhere, and
    // the increase is the first term alone.
    let paths = [pl(30, 10, 1000), pl(20, 100, 50)];
    for me in 0..2 {
        assert_increase(Coupling::Olia, &paths, me, olia_d(&paths, me, 0.0));
    }
}

#[test]
fn olia_alpha_splits_over_the_sets_sizes() {
    // Three paths: two share the max window (M, |M| = 2), the third is best (B∖M = {2}).
    // α_2 = 1/(3·1); α_0 = α_1 = −1/(3·2).
    let paths = [pl(40, 20, 100), pl(40, 30, 100), pl(10, 20, 900)];
    assert_increase(Coupling::Olia, &paths, 2, olia_d(&paths, 2, 1.0 / 3.0));
    assert_increase(Coupling::Olia, &paths, 0, olia_d(&paths, 0, -1.0 / 6.0));
    assert_increase(Coupling::Olia, &paths, 1, olia_d(&paths, 1, -1.0 / 6.0));
    // One max-window path (M = {0}) and two equally best ones (B∖M = {1, 2}, same ℓ and RTT):
    // α_1 = α_2 = 1/(3·2); α_0 = −1/(3·1).
    let paths = [pl(40, 30, 100), pl(10, 20, 900), pl(15, 20, 900)];
    assert_increase(Coupling::Olia, &paths, 1, olia_d(&paths, 1, 1.0 / 6.0));
    assert_increase(Coupling::Olia, &paths, 2, olia_d(&paths, 2, 1.0 / 6.0));
    assert_increase(Coupling::Olia, &paths, 0, olia_d(&paths, 0, -1.0 / 3.0));
}

#[test]
fn olia_shrinking_window_leaves_congestion_avoidance_intact() {
    // A max-window path whose window OLIA takes down must not fall into slow start.
    let paths = [pl(20, 10, 1000), pl(30, 100, 50)];
    let mut cc = coupled(Coupling::Olia);
    let mut st = CwndState::new(30 * MSS, MSS);
    st.ssthresh_bytes = 30 * MSS;
    let mut v = views(&paths);
    for _ in 0..200 {
        v[1].cwnd_bytes = st.cwnd_bytes;
        cc.set_coupling_view(&v, 1);
        cc.cong_avoid(&mut st, &ack(MSS));
        assert!(!st.in_slow_start() || st.cwnd_bytes == st.ssthresh_bytes);
    }
    assert!(st.cwnd_bytes < 30 * MSS, "the window went down");
    assert_eq!(st.ssthresh_bytes, st.cwnd_bytes);
}

#[test]
fn balia_increase_per_ack_matches_peng_et_al() {
    // x = (1000, 500) packets/s: α_0 = 1, α_1 = 2.
    let two = [p(10, 10), p(20, 40)];
    // x = (160, 1500, 120): α = (9.4, 1, 12.5).
    let three = [p(8, 50), p(30, 20), p(12, 100)];
    for me in 0..2 {
        assert_increase(Coupling::Balia, &two, me, balia_d(&two, me));
    }
    for me in 0..3 {
        assert_increase(Coupling::Balia, &three, me, balia_d(&three, me));
    }
}

#[test]
fn balia_decrease_is_half_times_min_alpha_and_one_and_a_half() {
    let two = [p(10, 10), p(20, 40)]; // α_0 = 1, α_1 = 2
    let slow = [p(10, 10), p(16, 20)]; // x = (1000, 800): α_1 = 1.25
    let cases: [(&[P], usize, f64); 3] = [(&two, 0, 1.0), (&two, 1, 1.5), (&slow, 1, 1.25)];
    for (paths, me, factor) in cases {
        let mut cc = coupled(Coupling::Balia);
        let w = paths[me].w_pkts * MSS;
        let st = CwndState::new(w, MSS);
        cc.set_coupling_view(&views(paths), me);
        let flight = 40 * MSS;
        let ss = cc.ssthresh(&st, &loss(flight));
        let expected = (flight as f64 * (1.0 - factor / 2.0)).floor() as u64;
        assert_eq!(ss, expected, "me={me}: w − (w/2)·min(α, 1.5) with min(α, 1.5) = {factor}");
    }
}

#[test]
fn lia_and_olia_halve_like_reno() {
    let paths = [p(10, 10), p(20, 40)];
    for c in [Coupling::Lia, Coupling::Olia] {
        let mut cc = coupled(c);
        cc.set_coupling_view(&views(&paths), 1);
        let st = CwndState::new(20 * MSS, MSS);
        assert_eq!(cc.ssthresh(&st, &loss(21 * MSS)), 21 * MSS / 2, "{c:?}");
        assert_eq!(cc.ssthresh(&st, &loss(3 * MSS)), 2 * MSS, "{c:?}: at least 2 MSS");
    }
}

#[test]
fn slow_start_is_renos_with_any_view() {
    let paths = [p(10, 10), p(40, 40), p(5, 200)];
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        let mut cc = coupled(c);
        let mut reno = new_controller("reno", &Params::default()).unwrap();
        let mut st = CwndState::new(10 * MSS, MSS);
        st.ssthresh_bytes = 25 * MSS + 700;
        let mut st_reno = st;
        for bytes in [MSS, 2 * MSS, 4 * MSS, 500, 3 * MSS, 2 * MSS, 2 * MSS, 2 * MSS, 2 * MSS, 2 * MSS, 2 * MSS] {
            cc.set_coupling_view(&views(&paths), 0);
            cc.cong_avoid(&mut st, &ack(bytes));
            reno.cong_avoid(&mut st_reno, &ack(bytes));
            if st_reno.in_slow_start() {
                assert_eq!(st, st_reno, "{c:?} after an ACK of {bytes}");
            }
        }
        assert!(st.cwnd_bytes >= st.ssthresh_bytes, "{c:?}: the ACKs took slow start to ssthresh");
    }
}

/// Drive `cc` and Reno through the same ACKs and losses; `view` gives the view before each hook.
fn same_as_reno(c: Coupling, view: impl Fn(u64) -> (Vec<SubflowView>, usize)) {
    let mut cc = coupled(c);
    let mut reno = new_controller("reno", &Params::default()).unwrap();
    let mut st = CwndState::new(10 * MSS, MSS);
    let mut st_reno = st;
    let sizes = [MSS, 2 * MSS, 700, MSS, 3 * MSS, 100];
    for i in 0..20_000usize {
        let (v, me) = view(st.cwnd_bytes);
        cc.set_coupling_view(&v, me);
        if i % 3_000 == 2_999 {
            let ev = loss(st.cwnd_bytes);
            let (a, b) = (cc.ssthresh(&st, &ev), reno.ssthresh(&st_reno, &ev));
            assert_eq!(a, b, "{c:?}: ssthresh at step {i}");
            st.cwnd_bytes = a;
            st.ssthresh_bytes = a;
            st_reno.cwnd_bytes = b;
            st_reno.ssthresh_bytes = b;
        } else {
            let a = ack(sizes[i % sizes.len()]);
            cc.cong_avoid(&mut st, &a);
            reno.cong_avoid(&mut st_reno, &a);
        }
        assert_eq!(st, st_reno, "{c:?}: step {i}");
    }
    assert!(st.cwnd_bytes > 40 * MSS, "the run reached congestion avoidance and grew there");
}

#[test]
fn a_lone_subflow_is_exactly_reno() {
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        same_as_reno(c, |w| {
            let mut v = views(&[pl(1, 37, 100)]);
            v[0].cwnd_bytes = w;
            (v, 0)
        });
    }
}

#[test]
fn subflows_outside_the_sums_leave_a_lone_subflow_reno() {
    // The others are inactive (failed) or have no RTT sample yet: they do not enter the sums.
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        same_as_reno(c, |w| {
            let mut v = views(&[p(50, 10), pl(1, 37, 100), p(80, 5)]);
            v[0].active = false;
            v[2].srtt = None;
            v[1].cwnd_bytes = w;
            (v, 1)
        });
    }
}

#[test]
fn a_subflow_without_rtt_sample_or_view_grows_like_reno() {
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        // No view at all (never lent one).
        same_as_reno(c, |_| (Vec::new(), 0));
        // Its own RTT unknown, others fully known.
        same_as_reno(c, |_| {
            let mut v = views(&[p(50, 10), p(10, 37)]);
            v[1].srtt = None;
            (v, 1)
        });
    }
}

#[test]
fn names_and_construction_errors() {
    for (c, name) in [(Coupling::Lia, "lia"), (Coupling::Olia, "olia"), (Coupling::Balia, "balia")] {
        assert_eq!(coupled(c).name(), name);
        let params = Params::from_pairs(vec![("alpha".to_string(), 1.0)]);
        match new_coupled_controller(c, &params) {
            Err(CcError::UnknownParam { flavor, param, .. }) => {
                assert_eq!(flavor, name);
                assert_eq!(param, "alpha");
            }
            other => panic!("{c:?}: expected UnknownParam, got {other:?}"),
        }
    }
    match new_coupled_controller(Coupling::Uncoupled, &Params::default()) {
        Err(e @ CcError::BadParam { flavor: "uncoupled", .. }) => {
            assert!(e.to_string().contains("new_controller"), "{e}");
        }
        other => panic!("expected BadParam, got {other:?}"),
    }
    // wVegas: its own controller (crates/cc/src/wvegas.rs), named and parsed like the others,
    // coupling Vegas where the others couple Reno.
    let wvegas = new_coupled_controller(Coupling::Wvegas, &Params::default()).unwrap();
    assert_eq!(wvegas.name(), "wvegas");
    assert_eq!("wvegas".parse::<Coupling>(), Ok(Coupling::Wvegas));
    assert_eq!(Coupling::Wvegas.subflow_flavor(), Some("vegas"));
    assert_eq!(Coupling::Lia.subflow_flavor(), Some("reno"));
    assert!(Coupling::ALL.iter().all(|c| c.name().parse::<Coupling>() == Ok(*c)));
    let params = Params::from_pairs(vec![("alpha".to_string(), 1.0)]);
    assert!(matches!(new_coupled_controller(Coupling::Wvegas, &params), Err(CcError::UnknownParam { flavor: "wvegas", .. })));
}

// --- RFC 6356 §2's goals in a deterministic round-based AIMD model -----------------------------
//
// Every flow sends its window once per round (one RTT; all RTTs equal), each packet acknowledged
// by an ACK of one MSS through the controller's `cong_avoid`, or, in a round where the flow sees
// a loss, one congestion event (`ssthresh`, cwnd = ssthresh: fast recovery collapsed to its
// outcome). Subflows of one connection lend each other views before every hook, as the MPTCP
// connection does. No randomness: losses come from deterministic credit counters.

struct Flow {
    cc: Box<dyn CongestionControl>,
    st: CwndState,
    /// Index of the connection (coupled flows share one), for the views.
    conn: usize,
    since_loss_bytes: u64,
    between_losses_bytes: u64,
    loss_credit: f64,
    sum_pkts: f64,
}

const RTT_MS: u64 = 50;

fn flow(cc: Box<dyn CongestionControl>, conn: usize) -> Flow {
    let mut st = CwndState::new(10 * MSS, MSS);
    st.ssthresh_bytes = 64 * MSS;
    Flow { cc, st, conn, since_loss_bytes: 0, between_losses_bytes: 0, loss_credit: 0.0, sum_pkts: 0.0 }
}

fn lend_view(flows: &mut [Flow], i: usize) {
    let conn = flows[i].conn;
    let members: Vec<usize> = (0..flows.len()).filter(|&k| flows[k].conn == conn).collect();
    let v: Vec<SubflowView> = members
        .iter()
        .map(|&k| SubflowView {
            cwnd_bytes: flows[k].st.cwnd_bytes,
            mss_bytes: MSS,
            srtt: Some(Duration::from_millis(RTT_MS)),
            acked_since_loss_bytes: flows[k].since_loss_bytes,
            acked_between_losses_bytes: flows[k].between_losses_bytes,
            active: true,
        })
        .collect();
    let me = members.iter().position(|&k| k == i).unwrap();
    flows[i].cc.set_coupling_view(&v, me);
}

/// Run `rounds` rounds; `losses(flows, sent_pkts)` says which flows see a loss this round.
/// Returns each flow's mean window in packets over the second half.
fn run(flows: &mut [Flow], rounds: usize, mut losses: impl FnMut(&mut [Flow], &[u64]) -> Vec<bool>) -> Vec<f64> {
    for round in 0..rounds {
        let sent: Vec<u64> = flows.iter().map(|f| (f.st.cwnd_bytes / MSS).max(1)).collect();
        let lost = losses(flows, &sent);
        for i in 0..flows.len() {
            if round >= rounds / 2 {
                flows[i].sum_pkts += flows[i].st.cwnd_bytes as f64 / MSS as f64;
            }
            lend_view(flows, i);
            if lost[i] {
                let f = &mut flows[i];
                let ss = f.cc.ssthresh(&f.st, &loss(f.st.cwnd_bytes));
                f.st.cwnd_bytes = ss;
                f.st.ssthresh_bytes = ss;
                f.between_losses_bytes = f.since_loss_bytes;
                f.since_loss_bytes = 0;
            } else {
                for _ in 0..sent[i] {
                    lend_view(flows, i);
                    let f = &mut flows[i];
                    f.cc.cong_avoid(&mut f.st, &ack(MSS));
                    f.since_loss_bytes += MSS;
                }
            }
        }
    }
    flows.iter().map(|f| f.sum_pkts / (rounds - rounds / 2) as f64).collect()
}

/// One drop-tail bottleneck of `capacity_pkts` per RTT plus `buffer_pkts`: packets beyond both
/// are dropped in proportion to each flow's share of the packets sent; a flow whose share of
/// the drops has added up to a packet sees a loss.
fn bottleneck(capacity_pkts: u64, buffer_pkts: u64) -> impl FnMut(&mut [Flow], &[u64]) -> Vec<bool> {
    move |flows, sent| {
        let total: u64 = sent.iter().sum();
        let excess = total.saturating_sub(capacity_pkts + buffer_pkts) as f64;
        flows
            .iter_mut()
            .zip(sent)
            .map(|(f, &n)| {
                f.loss_credit += excess * n as f64 / total as f64;
                let lost = f.loss_credit >= 1.0;
                if lost {
                    f.loss_credit = 0.0;
                }
                lost
            })
            .collect()
    }
}

/// Each flow `i` on its own path losing one packet in `1/loss_rate[i]`, deterministically.
fn lossy_paths(loss_rate: Vec<f64>) -> impl FnMut(&mut [Flow], &[u64]) -> Vec<bool> {
    move |flows, sent| {
        flows
            .iter_mut()
            .zip(sent)
            .enumerate()
            .map(|(i, (f, &n))| {
                f.loss_credit += n as f64 * loss_rate[i];
                let lost = f.loss_credit >= 1.0;
                if lost {
                    f.loss_credit -= 1.0;
                }
                lost
            })
            .collect()
    }
}

fn reno() -> Box<dyn CongestionControl> {
    new_controller("reno", &Params::default()).unwrap()
}

/// (MPTCP total, Reno) mean windows with two subflows of `sub` and one Reno flow through one
/// bottleneck.
fn shared_bottleneck(sub: impl Fn() -> Box<dyn CongestionControl>) -> (f64, f64) {
    let mut flows = vec![flow(sub(), 0), flow(sub(), 0), flow(reno(), 1)];
    let w = run(&mut flows, 4000, bottleneck(100, 20));
    (w[0] + w[1], w[2])
}

#[test]
fn goal2_coupled_connection_takes_one_tcp_share_at_a_shared_bottleneck() {
    let (uncoupled, reno_u) = shared_bottleneck(reno);
    eprintln!("uncoupled: MPTCP {uncoupled:.1} pkts vs Reno {reno_u:.1} pkts");
    assert!(uncoupled / reno_u > 1.6, "the model must show uncoupled subflows taking about two shares");
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        let (mp, r) = shared_bottleneck(|| coupled(c));
        eprintln!("{c:?}: MPTCP {mp:.1} pkts vs Reno {r:.1} pkts (ratio {:.2})", mp / r);
        assert!(
            (0.7..=1.3).contains(&(mp / r)),
            "{c:?}: the two subflows together should take about one TCP's share: {mp:.1} vs {r:.1}"
        );
    }
}

#[test]
fn goals1_and_3_more_traffic_on_the_less_congested_path_and_at_least_the_best_tcp() {
    let rates = vec![0.002, 0.02];
    let mut alone = vec![flow(reno(), 0)];
    let best_tcp = run(&mut alone, 6000, lossy_paths(vec![rates[0]]))[0];
    // Uncoupled Reno subflows split as √(p2/p1) ≈ 3.2 (each path's TCP rate ∝ 1/√p); a coupled
    // connection moves further: LIA's equilibrium puts w ∝ 1/p on each path (ratio 10).
    let mut flows = vec![flow(reno(), 0), flow(reno(), 1)];
    let w = run(&mut flows, 6000, lossy_paths(rates.clone()));
    eprintln!("uncoupled: {:.1} pkts on the 0.2% path, {:.1} on the 2% path", w[0], w[1]);
    assert!(w[0] < 5.0 * w[1], "the model must tell coupled from uncoupled balance");
    for c in [Coupling::Lia, Coupling::Olia, Coupling::Balia] {
        let mut flows = vec![flow(coupled(c), 0), flow(coupled(c), 0)];
        let w = run(&mut flows, 6000, lossy_paths(rates.clone()));
        eprintln!(
            "{c:?}: {:.1} pkts on the 0.2% path, {:.1} on the 2% path; Reno alone on the 0.2% path {best_tcp:.1}",
            w[0], w[1]
        );
        assert!(w[0] > 5.0 * w[1], "{c:?}: goal 3, traffic moves to the less congested path");
        assert!(w[0] + w[1] >= 0.85 * best_tcp, "{c:?}: goal 1, at least what TCP gets on the best path");
        assert!(w[0] + w[1] <= 1.3 * best_tcp, "{c:?}: and not much more (goal 2)");
    }
}
