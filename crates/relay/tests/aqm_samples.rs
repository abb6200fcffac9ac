//! The AQM's state in the relay's queue samples and stats (the simulator's `queues` columns
//! `aqm_prob_classic` and `aqm_prob_l4s`, docs/engine-spec.md "Tables"): a DualPI2 direction
//! under load samples non-zero p_C and p_CL with p_CL = min(k·√p_C, 1) (RFC 9332 §2.1), and its
//! per-class counts add up to the link's totals at every instant; a discipline without a
//! probability samples none.

use ccarena_link::qdisc::dualpi2::{Class, DualPi2Config};
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::{Aqm, QdiscConfig, SplitMix64};
use ccarena_relay::emulated_path::FrameInfo;
use ccarena_relay::sampler::QueueSampler;
use ccarena_relay::stats::ClassStats;
use ccarena_relay::{DirectionStats, EmulatedPath, LinkParams, Loss, PipeStats, QueueLimit, QueueSample, RelayStats};
use serde_json::Value;

const RATE_BPS: u64 = 100_000_000;
/// Sample grid interval, ns.
const INTERVAL_NS: u64 = 10_000_000;

/// Two open-loop flows of 1500-byte packets, each at 60% of the link's rate for 2 s (120% in
/// all): flow 0 ECT(1) (the L4S queue), flow 1 ECT(0) (the Classic queue); the queue's samples
/// every 10 ms, and the link at the end.
fn run(queue: &QdiscConfig) -> (Vec<QueueSample>, EmulatedPath<()>) {
    let params = LinkParams { rate_bps: Some(RATE_BPS), limit: QueueLimit::Packets(1000), delay_ns: 10_000_000 };
    let mut link: EmulatedPath<()> = EmulatedPath::holding(params, queue, SplitMix64::new(7), Loss::new(0.0, SplitMix64::new(1)));
    let mut sampler = QueueSampler::new(0, INTERVAL_NS);
    // 1500 B at 60 Mbit/s: one packet per flow every 200 µs, the second flow 100 µs later.
    let gap_ns = 1500 * 8 * 1_000_000_000 / (RATE_BPS * 6 / 10);
    for k in 0..2_000_000_000 / gap_ns {
        for flow in 0..2u64 {
            let t = k * gap_ns + flow * gap_ns / 2;
            while sampler.next_instant_ns() < t {
                sampler.record_next(&mut link);
            }
            let info = FrameInfo { ip_bytes: 1500, packets: 1, flow_hash: flow, ect: true, l4s: flow == 0 };
            if link.holds_frames() {
                link.hold_frame(t, info, ());
                while link.take_departure().is_some() {}
            } else {
                link.offer_frame(t, info);
            }
        }
    }
    sampler.record_next(&mut link);
    (sampler.into_rows().0, link)
}

#[test]
fn a_loaded_dualpi2_samples_both_probabilities_and_per_class_counts_that_add_up() {
    let cfg = DualPi2Config::default();
    let (rows, link) = run(&QdiscConfig::DualPi2(cfg));
    assert_eq!(rows.len(), 201);
    // MAX_ROWS's docs budget 272 bytes a row (270 MB a direction at the cap): a larger row must
    // change them.
    assert!(std::mem::size_of::<QueueSample>() <= 272, "a row outgrew what ccarena_relay::sampler::MAX_ROWS's docs budget");
    let mut max_p_c: f64 = 0.0;
    for r in &rows {
        let (p_c, p_cl) = (r.aqm_prob_classic.expect("DualPI2 has p_C"), r.aqm_prob_l4s.expect("and p_CL"));
        assert!((0.0..=1.0).contains(&p_c) && (0.0..=1.0).contains(&p_cl), "{r:?}");
        // p_C = p'², p_CL = min(k·p', 1).
        assert!((p_cl - (cfg.coupling * p_c.sqrt()).min(1.0)).abs() < 1e-9, "{p_c} {p_cl}");
        max_p_c = max_p_c.max(p_c);
        let (l, c) = (r.l4s.expect("per-class counts"), r.classic.expect("per-class counts"));
        let n = &r.counters;
        assert_eq!(l.departed + c.departed, n.departures, "{r:?}");
        assert_eq!(l.marked + c.marked, n.marks, "{r:?}");
        assert_eq!(l.dropped_limit + l.dropped_aqm + c.dropped_limit + c.dropped_aqm, n.drops, "{r:?}");
        assert_eq!(l.sojourn_total_ns + c.sojourn_total_ns, n.sojourn_total_ns, "{r:?}");
    }
    // 120% offered: the Classic queue grows past its target and PI2 drives p' up.
    assert!(max_p_c > 0.01, "{max_p_c}");
    let last = rows.last().unwrap();
    let (l, c) = (last.l4s.unwrap(), last.classic.unwrap());
    assert!(l.marked > 100 && c.marked + c.dropped_aqm > 100 && l.departed > 5_000 && c.departed > 5_000, "{l:?} {c:?}");

    // The stats JSON carries the samples' new columns and the per-class totals.
    let Some(Aqm::DualPi2(d)) = link.aqm() else { panic!("a DualPI2 link") };
    let class = |counters, c| Some(ClassStats { counters, sojourn: d.sojourn_histogram(c).clone() });
    let dir = DirectionStats {
        samples: rows.clone(),
        link: *link.counters(),
        l4s: class(*d.l4s_counters(), Class::L4s),
        classic: class(*d.classic_counters(), Class::Classic),
        ..Default::default()
    };
    let v = json_of(dir);
    let s = &v["samples"];
    assert_eq!(s["aqm_prob_classic"].as_array().unwrap().len(), rows.len());
    assert_eq!(s["aqm_prob_l4s"][200].as_f64(), last.aqm_prob_l4s);
    assert_eq!(s["l4s_marked"][200].as_u64(), Some(l.marked));
    assert_eq!(s["classic_dropped"][200].as_u64(), Some(c.dropped_limit + c.dropped_aqm));
    let lj = &v["link"]["l4s"];
    assert_eq!(lj["departed"].as_u64(), Some(d.l4s_counters().departed));
    let (p50, p99, max) = (lj["sojourn_ns"]["p50"].as_f64().unwrap(), lj["sojourn_ns"]["p99"].as_f64().unwrap(), lj["sojourn_ns"]["max"].as_f64().unwrap());
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{lj}");
    // Most L4S packets wait far less than the Classic ones (unresponsive as these flows are, the
    // overload pushes the L4S tail up too).
    assert!(p50 * 10.0 < v["link"]["classic"]["sojourn_ns"]["p50"].as_f64().unwrap(), "{}", v["link"]);
}

#[test]
fn pie_samples_its_probability_and_droptail_none() {
    let (rows, _) = run(&QdiscConfig::Pie(PieConfig::default()));
    assert!(rows.iter().all(|r| r.aqm_prob_l4s.is_none() && r.l4s.is_none() && r.classic.is_none()));
    assert!(rows.iter().any(|r| r.aqm_prob_classic.is_some_and(|p| p > 0.0)));
    let v = json_of(DirectionStats { samples: rows, ..Default::default() });
    assert!(v["samples"]["aqm_prob_l4s"].as_array().unwrap().iter().all(Value::is_null));
    assert!(v["samples"].get("l4s_departed").is_none() && v["link"].get("l4s").is_none());

    let droptail = QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: Default::default() };
    let (rows, _) = run(&droptail);
    assert!(rows.iter().all(|r| r.aqm_prob_classic.is_none() && r.aqm_prob_l4s.is_none() && r.l4s.is_none()));
    let v = json_of(DirectionStats { samples: rows, ..Default::default() });
    assert!(v["samples"].get("aqm_prob_classic").is_none());
}

/// `dir`'s JSON object as the relay writes it.
fn json_of(dir: DirectionStats) -> Value {
    let stats = RelayStats { pipes: vec![PipeStats { name: "p".into(), a_to_b: dir, b_to_a: DirectionStats::default() }], wall_s: 0.0, cpu_latency_held: false };
    let mut v: Value = serde_json::from_str(&stats.to_json()).unwrap();
    v["pipes"][0]["a_to_b"].take()
}
