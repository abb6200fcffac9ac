//! What the engine keeps at scale: only the links asked for are sampled, and a transfer's
//! endpoints exist from its start; neither changes what the run computes.

use ccarena_sim::flow::Flow;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, udt_flow, Dumbbell};
use ccarena_sim::{Results, Simulation, Spec};
use crate::common::{assert_conservation, assert_identical, run, tcp};

/// Four pairs on a lossy dumbbell, the flows starting 0.5 s apart (TCP and UDT).
fn spec() -> (Dumbbell, Spec) {
    let mut d = Dumbbell::new(4, mbps(20), ms(10), 50);
    d.bottleneck_loss = 0.005;
    let flows = (0..4)
        .map(|i| {
            if i == 3 {
                let mut f = udt_flow("udt3", d.left(i), d.right(i));
                f.start_ns = ms(1500);
                ccarena_sim::spec::FlowSpec::Udt(f)
            } else {
                let mut f = tcp_flow(&format!("f{i}"), d.left(i), d.right(i), "cubic");
                f.start_ns = ms(500) * i as u64;
                tcp(f)
            }
        })
        .collect();
    let spec = d.spec(3, secs(4), ms(100), flows);
    (d, spec)
}

/// The `queues` table without the rows of links not in `keep`.
fn queue_rows_of(res: &Results, keep: &[usize]) -> Vec<Vec<u64>> {
    let link = res.queues.f64("link");
    res.queues
        .columns
        .iter()
        .map(|(_, c)| {
            c.f64().iter().zip(link).filter(|(_, l)| keep.contains(&(**l as usize))).map(|(v, _)| v.to_bits()).collect()
        })
        .collect()
}

#[test]
fn unsampled_links_leave_the_queue_samples_and_change_nothing_else() {
    let (d, all) = spec();
    let mut some = all.clone();
    // Sample the two bottleneck directions only (links 0 and 1), as a front end would by default.
    for (i, l) in some.links.iter_mut().enumerate() {
        l.sample = Some(i == d.bottleneck_link() || i == 1);
    }
    some.links[1].sample = None; // absent = sampled
    let (a, b) = (run(all), run(some));
    assert_conservation(&b);
    let sampled: Vec<usize> = b.queues.f64("link").iter().map(|&l| l as usize).collect();
    assert!(sampled.iter().all(|&l| l <= 1) && sampled.contains(&0) && sampled.contains(&1), "{sampled:?}");
    assert_eq!(b.queues.rows(), 2 * 40, "two links, 40 instants");
    assert!(queue_rows_of(&a, &[0, 1]) == queue_rows_of(&b, &[0, 1]), "the sampled links' rows are unchanged");
    // Everything else is bit-identical.
    let without_queues = |r: &Results| Results { queues: Default::default(), ..r.clone() };
    assert_identical(&without_queues(&a), &without_queues(&b));
}

#[test]
fn a_sample_flag_round_trips_and_absent_means_sampled() {
    let (_, mut spec) = spec();
    let mut value: serde_json::Value = serde_json::from_str(&spec.to_json()).expect("json");
    value["links"][3].as_object_mut().expect("a link").remove("sample");
    let absent = Spec::from_json(&value.to_string()).expect("an absent flag parses");
    assert!(absent.links[3].sampled(), "absent = sampled");
    spec.links[2].sample = Some(false);
    let back = Spec::from_json(&spec.to_json()).expect("parses");
    assert_eq!(back.links[2].sample, Some(false));
    assert!(!back.links[2].sampled() && back.links[3].sampled());
}

#[test]
fn transfers_are_built_at_their_start_and_report_the_same_before_it() {
    let (_, spec) = spec();
    let mut sim = Simulation::new(spec.clone()).expect("valid spec");
    sim.run_until(ccarena_cc::SimTime(ms(700)));
    let kinds: Vec<bool> = sim.flows().iter().map(|f| matches!(f, Flow::Idle { .. })).collect();
    assert_eq!(kinds, vec![false, false, true, true], "flows 2 and 3 start at 1 s and 1.5 s");
    // A mid-run summary names the idle flows with their kind and nothing sent.
    let mid = sim.results();
    assert_eq!(mid.flows.f64("bytes_sent")[2..], [0.0, 0.0]);
    let kind = mid.flows.get("kind").expect("kind column");
    assert_eq!(kind, &ccarena_sim::Column::Str(vec!["tcp".into(), "tcp".into(), "tcp".into(), "udt".into()]));
    sim.run();
    assert!(sim.flows().iter().all(|f| !matches!(f, Flow::Idle { .. })));
    // Stepping through the run in chunks gives the same results as running it at once.
    let whole = run(spec);
    assert_identical(&sim.results(), &whole);
}
