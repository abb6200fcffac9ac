//! A serde helper for formats that name every key: an `Option` field that must be present,
//! though it may be null.

use serde::{Deserialize, Deserializer};

/// Deserialize an `Option` that must be present (possibly null): with
/// `#[serde(deserialize_with = "present")]`, serde reports a missing key instead of reading it as
/// null, as it would for a plain `Option` field.
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}
