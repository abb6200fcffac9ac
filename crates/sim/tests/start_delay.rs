//! A sender that starts after its flow's scheduled start (`start_delay_ns`, the `linux` host
//! model's 0.5–2 ms, as the kernel backend's senders start): the transfer moves by the delay,
//! while the flow's samples, `start_s` and completion time count from the scheduled start, as the
//! kernel backend's tables do (its traffic generator times completion from `t0 + start_ns`).

use crate::common::{run, tcp};
use ccarena_sim::spec::Spec;
use ccarena_sim::testkit::{mbps, ms, tcp_flow, Dumbbell};
use ccarena_sim::Simulation;

const DELAY_NS: u64 = 1_500_000;

/// One 100 kB CUBIC transfer on an idle 20 Mbit/s, 20 ms dumbbell, its sender `delay_ns` late,
/// sampled every millisecond.
fn transfer(delay_ns: u64) -> Spec {
    let d = Dumbbell::new(1, mbps(20), ms(10), 100);
    let mut f = tcp_flow("cubic", d.left(0), d.right(0), "cubic");
    f.bytes = Some(100_000);
    f.start_delay_ns = delay_ns;
    d.spec(1, ms(400), ms(1), vec![tcp(f)])
}

#[test]
fn the_completion_time_grows_by_the_delay_and_counts_from_the_scheduled_start() {
    let (on_time, late) = (run(transfer(0)), run(transfer(DELAY_NS)));
    let fct = |r: &ccarena_sim::Results| r.flows.f64("completion_time_s")[0];
    eprintln!("fct on time {:.6} s, {DELAY_NS} ns late {:.6} s", fct(&on_time), fct(&late));
    // The idle path and the transfer are the same, shifted: the difference is the delay itself.
    assert!((fct(&late) - fct(&on_time) - DELAY_NS as f64 / 1e9).abs() < 1e-9);
    assert_eq!(late.flows.f64("start_s")[0], 0.0);
    assert_eq!(late.flows.f64("bytes_delivered")[0], 100_000.0);
}

#[test]
fn the_flow_is_sampled_from_its_scheduled_start_with_nothing_sent_before_its_sender_starts() {
    let late = run(transfer(DELAY_NS));
    let on_time = run(transfer(0));
    let (t, sent) = (late.samples.f64("time_s"), late.samples.f64("sent_bytes"));
    assert_eq!(t.len(), on_time.samples.rows(), "the same sample instants");
    assert_eq!(t[0], 0.001);
    assert_eq!(sent[0], 0.0, "1 ms: the sender starts at 1.5 ms");
    assert!(late.samples.f64("cwnd_bytes")[0].is_nan() && late.samples.f64("retransmits")[0] == 0.0);
    assert_eq!(sent[1], 14_480.0, "2 ms: the initial window (10 segments) has left");
}

#[test]
fn a_sender_that_would_start_after_its_flow_stops_is_refused() {
    let mut spec = transfer(DELAY_NS);
    if let ccarena_sim::spec::FlowSpec::Tcp(f) = &mut spec.flows[0] {
        f.stop_ns = Some(DELAY_NS);
    }
    let e = Simulation::new(spec).expect_err("refused");
    assert!(e.to_string().contains("start_delay_ns"), "{e}");
}
