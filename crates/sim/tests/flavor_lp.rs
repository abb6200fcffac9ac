//! TCP-LP (Kuzmanovic and Knightly, INFOCOM 2003) in the simulator: alone it uses most of the
//! link; next to a Reno flow its early congestion indications (one-way delay above
//! d_min + 0.15·(d_max − d_min)) make it yield nearly everything (the paper's §5: TCP-LP takes only
//! the bandwidth TCP leaves unused).

mod common;

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use common::{mean_goodput_bps, run, tcp};

const FLAVOR: &str = "lp";

#[test]
fn alone_it_uses_most_of_the_link() {
    // The fill-the-link path: 100 Mbps, 40 ms RTT, one-BDP buffer.
    let d = Dumbbell::new(1, mbps(100), ms(20), 333);
    let res = run(d.spec(1, secs(30), ms(100), vec![tcp(tcp_flow(FLAVOR, d.left(0), d.right(0), FLAVOR))]));
    let util = mean_goodput_bps(&res, 0, 10.0, 30.0) / (100e6 * 1448.0 / 1500.0);
    eprintln!("{FLAVOR} alone: {:.1}% of the link", 100.0 * util);
    assert!(util >= 0.80, "{util:.3}");
}

#[test]
fn next_to_reno_it_yields() {
    // 20 Mbps, 40 ms RTT (BDP 67 packets), buffers of 1 and 3 BDP; both flows start together.
    for buffer in [67, 200] {
        let d = Dumbbell::new(2, mbps(20), ms(20), buffer);
        let flows = vec![tcp(tcp_flow(FLAVOR, d.left(0), d.right(0), FLAVOR)), tcp(tcp_flow("reno", d.left(1), d.right(1), "reno"))];
        let res = run(d.spec(3, secs(60), ms(100), flows));
        let lp = mean_goodput_bps(&res, 0, 20.0, 60.0);
        let reno = mean_goodput_bps(&res, 1, 20.0, 60.0);
        let share = lp / (lp + reno);
        eprintln!("{FLAVOR} vs reno, buffer {buffer}: {FLAVOR} share {:.1}%", 100.0 * share);
        assert!(share < 0.10, "buffer {buffer}: share {share:.3}");
        assert!(lp + reno > 0.9 * 20e6 * 1448.0 / 1500.0, "the pair fills the link");
    }
}
