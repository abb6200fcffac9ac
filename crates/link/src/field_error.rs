//! The error every link-format validator returns: which field, relative to the object checked,
//! and what is wrong with it. Callers put their own path in front ([`FieldError::under`]): the
//! simulator's `links[3].queue`, the relay's `pipes[0].a_to_b`.

use std::fmt;

/// A problem with one field of a link-format object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the offending field relative to the object checked (`codel.target_ns`), or empty
    /// for the object itself.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl FieldError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), message: message.into() }
    }

    /// The same error with `prefix` put in front of its field (`prefix.field`, or `prefix` alone
    /// for an error about the object itself).
    pub fn under(self, prefix: &str) -> FieldError {
        let field = match (prefix.is_empty(), self.field.is_empty()) {
            (true, _) => self.field,
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{}", self.field),
        };
        FieldError { field, message: self.message }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for FieldError {}

/// `Err` naming `field` when `value` is 0.
pub(crate) fn positive(field: &str, value: u64) -> Result<(), FieldError> {
    if value == 0 {
        Err(FieldError::new(field, "must be positive"))
    } else {
        Ok(())
    }
}
