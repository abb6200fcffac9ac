//! Same spec and seed → identical results; different seeds differ under loss; a link's loss
//! pattern does not depend on traffic elsewhere.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, assert_identical, run, tcp};

fn lossy_dumbbell() -> Dumbbell {
    let mut d = Dumbbell::new(3, mbps(20), ms(10), 50);
    d.bottleneck_loss = 0.01;
    d
}

#[test]
fn same_spec_and_seed_give_identical_samples() {
    let d = lossy_dumbbell();
    let flows = || vec![tcp(tcp_flow("a", d.left(0), d.right(0), "cubic")), tcp(tcp_flow("b", d.left(1), d.right(1), "reno"))];
    let a = run(d.spec(7, secs(10), ms(100), flows()));
    let b = run(d.spec(7, secs(10), ms(100), flows()));
    assert_identical(&a, &b);
    assert!(a.samples.rows() > 100);
}

#[test]
fn different_seeds_differ_under_loss() {
    let d = lossy_dumbbell();
    let flows = || vec![tcp(tcp_flow("a", d.left(0), d.right(0), "reno"))];
    let a = run(d.spec(1, secs(10), ms(100), flows()));
    let b = run(d.spec(2, secs(10), ms(100), flows()));
    assert_ne!(a.samples.f64("delivered_bytes"), b.samples.f64("delivered_bytes"));
}

#[test]
fn a_flow_on_other_links_does_not_change_a_links_loss_pattern() {
    // Flow "a" crosses left0->r0->r1->right0; flow "b" (left1 -> left2) only crosses
    // left1->r0->left2. Every link is lossy, so a shared RNG would shift a's loss pattern.
    let mut d = Dumbbell::new(3, mbps(20), ms(10), 50);
    d.bottleneck_loss = 0.02;
    let mut spec_a = d.spec(3, secs(10), ms(100), vec![tcp(tcp_flow("a", d.left(0), d.right(0), "reno"))]);
    for l in &mut spec_a.links {
        l.wire.loss = 0.01;
    }
    let mut spec_ab = spec_a.clone();
    spec_ab.flows.push(tcp(tcp_flow("b", d.left(1), d.left(2), "reno")));
    let only_a = run(spec_a);
    let with_b = run(spec_ab);
    assert_conservation(&only_a);
    assert_conservation(&with_b);
    let rows_a = only_a.samples.rows();
    // Flow a's rows are the even ones when b is present (flows are sampled in order).
    let a_alone = only_a.samples.f64("delivered_bytes");
    let a_with_b: Vec<f64> = (0..with_b.samples.rows())
        .filter(|&i| with_b.samples.f64("flow")[i] == 0.0)
        .map(|i| with_b.samples.f64("delivered_bytes")[i])
        .collect();
    assert_eq!(a_alone.len(), rows_a);
    assert_eq!(a_alone, &a_with_b[..]);
    let lost = |r: &ccarena_sim::Results| r.links.f64("packets_lost_wire")[0];
    assert_eq!(lost(&only_a), lost(&with_b));
    assert!(with_b.flows.f64("bytes_delivered")[1] > 0.0, "flow b must actually run");
}
