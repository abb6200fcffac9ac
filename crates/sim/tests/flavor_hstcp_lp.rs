//! HSTCP-LP (Kuzmanovic, Knightly, Cottrell, PFLDnet 2004) in the simulator: TCP-LP's early
//! congestion indication over HighSpeed TCP's window arithmetic. Alone it uses most of the link;
//! next to a Reno flow it yields; and on a large bandwidth-delay product, where TCP-LP's one
//! segment per RTT cannot refill the pipe after a reduction, HighSpeed's a(w) does.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{low_priority_alone_uses_most_of_the_link, low_priority_yields_to_reno, mean_goodput_bps, run, tcp};

const FLAVOR: &str = "hstcp-lp";

#[test]
fn alone_it_uses_most_of_the_link() {
    low_priority_alone_uses_most_of_the_link(FLAVOR);
}

#[test]
fn next_to_reno_it_yields() {
    low_priority_yields_to_reno(FLAVOR);
}

#[test]
fn on_a_large_bdp_path_it_uses_far_more_than_tcp_lp() {
    // 500 Mbps, 60 ms RTT (BDP 2500 packets), a 250-packet buffer.
    let d = Dumbbell::new(1, mbps(500), ms(30), 250);
    let goodput = |flavor: &str| {
        let res = run(d.spec(3, secs(30), ms(100), vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor))]));
        mean_goodput_bps(&res, 0, 10.0, 30.0)
    };
    let (hl, lp) = (goodput(FLAVOR), goodput("lp"));
    let capacity = 500e6 * 1448.0 / 1500.0;
    eprintln!("500 Mbps × 60 ms: hstcp-lp {:.1}%, lp {:.1}% of the link", 100.0 * hl / capacity, 100.0 * lp / capacity);
    assert!(hl > 2.0 * lp, "hstcp-lp {hl:.0} vs lp {lp:.0}");
}
