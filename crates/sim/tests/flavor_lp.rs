//! TCP-LP (Kuzmanovic and Knightly, INFOCOM 2003) in the simulator: alone it uses most of the
//! link; next to a Reno flow its early congestion indications (one-way delay above
//! d_min + 0.15·(d_max − d_min)) make it yield nearly everything (the paper's §5: TCP-LP takes only
//! the bandwidth TCP leaves unused).

use crate::common::{low_priority_alone_uses_most_of_the_link, low_priority_yields_to_reno};

const FLAVOR: &str = "lp";

#[test]
fn alone_it_uses_most_of_the_link() {
    low_priority_alone_uses_most_of_the_link(FLAVOR);
}

#[test]
fn next_to_reno_it_yields() {
    low_priority_yields_to_reno(FLAVOR);
}
