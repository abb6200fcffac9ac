//! HighSpeed TCP (RFC 3649) under random loss on a 400 Mbps / 50 ms path: its average window
//! follows the HighSpeed response function W = 0.12/p^0.835 (RFC 3649 §5: 263 packets at
//! p = 10⁻⁴, 717 at 3·10⁻⁵), where Reno's follows Mathis et al.'s sqrt(1.5/p) (122 and 224).
//! The formula-level checks — a(w), b(w) against Appendix B and the deterministic steady state
//! against the RFC's table from p = 10⁻³ to 10⁻⁷ — are the unit tests in
//! `crates/cc/src/highspeed.rs`.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const MSS: f64 = 1448.0;
const RTT_S: f64 = 0.050;

/// Average window, packets, of `flavor` alone under random loss `p`: goodput × RTT / MSS over
/// 20–150 s. The window stays well below the BDP (1 667 packets), so the RTT is the base RTT.
fn average_window(flavor: &str, p: f64) -> f64 {
    let mut d = Dumbbell::new(1, mbps(400), ms(25), 1667);
    d.bottleneck_loss = p;
    let res =
        run(d.spec(1, secs(150), ms(500), vec![tcp(tcp_flow("f", d.left(0), d.right(0), flavor))]));
    assert_conservation(&res);
    mean_goodput_bps(&res, 0, 20.0, 150.0) / 8.0 / MSS * RTT_S
}

#[test]
fn average_window_follows_the_highspeed_response_function() {
    for (p, rfc_w) in [(1e-4, 263.0), (3e-5, 0.12 / 3e-5f64.powf(0.835))] {
        let hs = average_window("highspeed", p);
        let reno = average_window("reno", p);
        let mathis = (1.5 / p).sqrt();
        eprintln!(
            "p = {p}: highspeed W = {hs:.0} (RFC 3649: {rfc_w:.0}), reno W = {reno:.0} (Mathis: {mathis:.0})"
        );
        assert!(
            (hs / rfc_w - 1.0).abs() < 0.2,
            "p = {p}: W = {hs:.0}, response function {rfc_w:.0}"
        );
        assert!(
            (reno / mathis - 1.0).abs() < 0.2,
            "p = {p}: reno W = {reno:.0}, Mathis {mathis:.0}"
        );
        assert!(
            hs > 0.8 * rfc_w / mathis * reno,
            "HighSpeed/Reno ratio below the response functions'"
        );
    }
}
