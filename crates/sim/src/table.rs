//! Columnar result tables handed to the bindings: named columns of f64 or strings.

/// One column.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Numbers; NaN where a value does not apply.
    F64(Vec<f64>),
    /// Names.
    Str(Vec<String>),
}

impl Column {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }

    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The numbers, or panics when the column holds strings (a programming error).
    pub fn f64(&self) -> &[f64] {
        match self {
            Column::F64(v) => v,
            Column::Str(_) => panic!("column holds strings, not numbers"),
        }
    }
}

/// A table: columns of equal length, in a fixed order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// (name, values) in output order.
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// The column called `name`, if present.
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }

    /// The numeric column called `name`; panics if missing (a programming error in a caller).
    pub fn f64(&self, name: &str) -> &[f64] {
        self.get(name).unwrap_or_else(|| panic!("no column '{name}'")).f64()
    }

    /// Number of rows (0 for a table without columns).
    pub fn rows(&self) -> usize {
        self.columns.first().map(|(_, c)| c.len()).unwrap_or(0)
    }
}

/// All tables of a run (see `docs/engine-spec.md`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    /// One row per flow.
    pub flows: Table,
    /// One row per flow per sample instant.
    pub samples: Table,
    /// One row per link per sample instant.
    pub queues: Table,
    /// One row per link.
    pub links: Table,
    /// One row per MPTCP subflow per sample instant (`crate::subflows`); no rows without MPTCP.
    pub subflows: Table,
}
