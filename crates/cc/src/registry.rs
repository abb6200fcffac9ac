//! The flavor catalogue: every controller by name, with its family, source, default loss recovery
//! and parameters. The Python front end reads this list (through the bindings) so the CLI's
//! `flavors` command, the scenario validator and the engine agree on one set of names.

use crate::{cubic::Cubic, reno::Reno, CcError, CongestionControl};

/// Named numeric parameters for a controller, as given in the scenario
/// (`flavor = { name = "vegas", alpha = 1, beta = 3 }`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    pairs: Vec<(String, f64)>,
}

impl Params {
    /// Parameters from `(name, value)` pairs.
    pub fn from_pairs(pairs: Vec<(String, f64)>) -> Params {
        Params { pairs }
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The value of `name`, or `default` when not given.
    pub fn get_or(&self, name: &str, default: f64) -> f64 {
        self.get(name).unwrap_or(default)
    }

    /// Error on the first parameter whose name is not in `known`.
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] naming the flavor, the parameter and the known names.
    pub fn expect_only(&self, flavor: &'static str, known: &[&'static str]) -> Result<(), CcError> {
        for (k, _) in &self.pairs {
            if !known.contains(&k.as_str()) {
                return Err(CcError::UnknownParam { flavor, param: k.clone(), known: known.to_vec() });
            }
        }
        Ok(())
    }
}

/// One tunable parameter of a flavor.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// Name as written in the scenario.
    pub name: &'static str,
    /// Value used when the scenario does not set it.
    pub default: f64,
    /// What it means, with its unit.
    pub doc: &'static str,
}

/// One flavor in the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct FlavorInfo {
    /// Name as written in the scenario.
    pub name: &'static str,
    /// Family: "loss", "delay", "model", "ecn", "rate", ...
    pub family: &'static str,
    /// One-line description of its defining rule.
    pub summary: &'static str,
    /// Primary source (RFC or paper) it is implemented from.
    pub source: &'static str,
    /// Loss recovery the flavor uses unless the scenario overrides it.
    pub default_recovery: &'static str,
    /// Which transport carries it: `"tcp"` (the TCP sender in `ccarena-transport`) or `"udt"`
    /// (UDT's UDP-based transport, whose rate control is also a [`CongestionControl`]).
    pub transport: &'static str,
    /// The flavor needs ECN (ECT on data, CE marking somewhere on the path) to work as its source
    /// describes; the front end turns ECN on for it unless the scenario says otherwise.
    pub needs_ecn: bool,
    /// Tunable parameters.
    pub params: &'static [ParamInfo],
}

const FLAVORS: &[FlavorInfo] = &[
    FlavorInfo {
        name: "tahoe",
        family: "loss",
        summary: "slow start + AIMD; fast retransmit then cwnd = 1 MSS and slow start, no fast recovery",
        source: "Jacobson, Congestion Avoidance and Control, SIGCOMM 1988; RFC 5681",
        default_recovery: "tahoe",
        transport: "tcp",
        needs_ecn: false,
        params: &[],
    },
    FlavorInfo {
        name: "reno",
        family: "loss",
        summary: "slow start + AIMD with fast retransmit and fast recovery",
        source: "RFC 5681",
        default_recovery: "reno",
        transport: "tcp",
        needs_ecn: false,
        params: &[],
    },
    FlavorInfo {
        name: "newreno",
        family: "loss",
        summary: "Reno whose fast recovery stays until all data outstanding at loss is acked",
        source: "RFC 5681, RFC 6582",
        default_recovery: "newreno",
        transport: "tcp",
        needs_ecn: false,
        params: &[],
    },
    FlavorInfo {
        name: "cubic",
        family: "loss",
        summary: "W(t) = C(t-K)^3 + W_max, beta 0.7, Reno-friendly region, fast convergence, HyStart++",
        source: "RFC 9438, RFC 9406",
        default_recovery: "prr",
        transport: "tcp",
        needs_ecn: false,
        params: crate::cubic::PARAMS,
    },
];

/// Every flavor the engine implements, in catalogue order.
pub fn catalogue() -> &'static [FlavorInfo] {
    FLAVORS
}

/// Build the controller named `name` with `params` (unset parameters take their defaults).
///
/// # Errors
/// [`CcError::UnknownFlavor`] (with the closest name as a suggestion), [`CcError::UnknownParam`],
/// [`CcError::BadParam`].
pub fn new_controller(name: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    Ok(match name {
        "tahoe" => Box::new(Reno::new("tahoe", params)?),
        "reno" => Box::new(Reno::new("reno", params)?),
        "newreno" => Box::new(Reno::new("newreno", params)?),
        "cubic" => Box::new(Cubic::new(params)?),
        _ => {
            return Err(CcError::UnknownFlavor {
                name: name.to_string(),
                suggestion: closest_flavor(name),
            })
        }
    })
}

/// The catalogue name closest to `name` by edit distance, if within 2 edits.
fn closest_flavor(name: &str) -> Option<&'static str> {
    FLAVORS
        .iter()
        .map(|f| (edit_distance(name, f.name), f.name))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance between two short strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_flavor_builds_with_defaults() {
        for f in catalogue() {
            let cc = new_controller(f.name, &Params::default()).unwrap();
            assert_eq!(cc.name(), f.name);
        }
    }

    #[test]
    fn unknown_flavor_suggests_the_closest_name() {
        let err = new_controller("cubik", &Params::default()).unwrap_err();
        assert_eq!(err.to_string(), "unknown flavor 'cubik' (did you mean 'cubic'?)");
        let err = new_controller("zzzzzzzz", &Params::default()).unwrap_err();
        assert_eq!(err.to_string(), "unknown flavor 'zzzzzzzz'");
    }
}
