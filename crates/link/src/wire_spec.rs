//! The serde format of a link direction's wire impairments — loss, duplication, reordering — and
//! their validation, each rule once. The engine spec's link (`links[i]`, docs/engine-spec.md) and
//! the relay's direction (`pipes[i].a_to_b`) both carry these as flat keys beside their own:
//! `{"loss": 0.01, "duplicate": 0.0, "reorder": 0.05, "reorder_delay_ns": null, ...}`. Each embeds a
//! [`WireSpec`] with `#[serde(flatten)]` and refuses unknown keys itself (serde's
//! `deny_unknown_fields` on the enclosing struct still refuses every key no flattened struct took).
//!
//! What the processes do: [`crate::wire`] (loss) and [`crate::impair`] (duplication, reordering).

use ccarena_rng::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;
use crate::impair::{default_reorder_delay_ns, WireImpairments};

/// What the wire does to the packets that leave a link direction's transmitter. Always embedded
/// flat in an object that refuses unknown keys (see the module docs), so it does not refuse them
/// itself: it cannot see the enclosing object's own keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WireSpec {
    /// Probability in [0, 1] that a packet is lost on the wire after serialization, independently
    /// per packet ([`crate::wire::WireLoss`]). Required.
    pub loss: f64,
    /// Probability in [0, 1] that a packet surviving the wire is delivered twice, the copy right
    /// behind it (netem's `duplicate`; [`crate::impair`]). Optional: absent = 0 (never).
    #[serde(default)]
    pub duplicate: f64,
    /// Probability in [0, 1] that a packet surviving the wire is held back by
    /// `reorder_delay_ns` after its propagation delay, so later packets overtake it
    /// ([`crate::impair`]). Optional: absent = 0 (the link keeps order).
    #[serde(default)]
    pub reorder: f64,
    /// How long a reordered packet is held back, ns. Optional: absent or null = the direction's
    /// propagation delay, at least 1 ms ([`default_reorder_delay_ns`]; resolved by
    /// [`WireSpec::held_ns`]).
    #[serde(default)]
    pub reorder_delay_ns: Option<u64>,
}

impl WireSpec {
    /// Loss with probability `loss` (in [0, 1]); no duplication, no reordering.
    pub fn with_loss(loss: f64) -> WireSpec {
        WireSpec { loss, ..WireSpec::default() }
    }

    /// Check the values: the three probabilities are in [0, 1].
    ///
    /// # Errors
    /// The first probability out of range, naming its field (`loss`, `duplicate`, `reorder`)
    /// relative to the enclosing object.
    pub fn validate(&self) -> Result<(), FieldError> {
        probability("loss", self.loss)?;
        probability("duplicate", self.duplicate)?;
        probability("reorder", self.reorder)
    }

    /// How long a reordered packet is held back on a direction whose propagation delay is
    /// `delay_ns`: `reorder_delay_ns`, or by default the delay, at least 1 ms, ns.
    pub fn held_ns(&self, delay_ns: u64) -> u64 {
        self.reorder_delay_ns.unwrap_or_else(|| default_reorder_delay_ns(delay_ns))
    }

    /// The direction's duplication and reordering processes ([`WireImpairments`]) on a direction
    /// whose propagation delay is `delay_ns`, drawing from `duplicate_rng` and `reorder_rng` (none
    /// drawn while both probabilities are 0). Loss is the caller's ([`crate::wire::WireLoss`]),
    /// since it may change during a run.
    pub fn impairments(&self, delay_ns: u64, duplicate_rng: SplitMix64, reorder_rng: SplitMix64) -> WireImpairments {
        WireImpairments::new(self.duplicate, self.reorder, self.held_ns(delay_ns), duplicate_rng, reorder_rng)
    }
}

/// `Err` naming `field` unless `p` is a probability in [0, 1] (NaN is not). The one wording of
/// this rule for every probability of the link format (a link change's `loss` too).
///
/// # Errors
/// `field: {p} is not a probability in [0, 1]`.
pub fn probability(field: &str, p: f64) -> Result<(), FieldError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(FieldError::new(field, format!("{p} is not a probability in [0, 1]")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The optional keys default as documented; null is absent.
    #[test]
    fn only_loss_is_required() {
        let w: WireSpec = serde_json::from_str(r#"{"loss": 0}"#).unwrap();
        assert_eq!(w, WireSpec::with_loss(0.0));
        let w: WireSpec = serde_json::from_str(r#"{"loss": 0.5, "duplicate": 0.01, "reorder": 0.02, "reorder_delay_ns": null}"#).unwrap();
        assert_eq!((w.loss, w.duplicate, w.reorder, w.reorder_delay_ns), (0.5, 0.01, 0.02, None));
        let e = serde_json::from_str::<WireSpec>(r#"{"duplicate": 0.1}"#).unwrap_err().to_string();
        assert!(e.starts_with("missing field `loss`"), "{e}");
    }

    #[test]
    fn probabilities_are_checked_naming_the_field() {
        assert_eq!(WireSpec { duplicate: 1.0, reorder: 0.0, ..WireSpec::with_loss(1.0) }.validate(), Ok(()));
        let at = |w: WireSpec| w.validate().unwrap_err().to_string();
        assert_eq!(at(WireSpec::with_loss(1.5)), "loss: 1.5 is not a probability in [0, 1]");
        assert_eq!(at(WireSpec { duplicate: -0.1, ..WireSpec::default() }), "duplicate: -0.1 is not a probability in [0, 1]");
        assert_eq!(at(WireSpec { reorder: f64::NAN, ..WireSpec::default() }), "reorder: NaN is not a probability in [0, 1]");
    }

    #[test]
    fn the_hold_defaults_to_the_delay_at_least_a_millisecond() {
        let w = WireSpec { reorder: 0.5, ..WireSpec::default() };
        assert_eq!((w.held_ns(20_000_000), w.held_ns(0)), (20_000_000, 1_000_000));
        let w = WireSpec { reorder_delay_ns: Some(3), ..w };
        assert_eq!(w.held_ns(20_000_000), 3);
        let i = w.impairments(20_000_000, SplitMix64::new(1), SplitMix64::new(2));
        assert_eq!((i.duplicate(), i.reorder(), i.reorder_delay_ns()), (0.0, 0.5, 3));
    }
}
