//! A flavor's named numeric parameters: the values a scenario gives ([`Params`]) and each
//! flavor's list of what it accepts ([`ParamInfo`], its `PARAMS`). A module of its own, below the
//! flavors, because every flavor reads its parameters while the catalogue (`crate::registry`)
//! builds every flavor.

use crate::CcError;

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
