//! The lateness histogram: the workspace's one log-linear histogram (`ccarena_link::histogram`),
//! reported as mean, p50, p99, p99.9 (bucket upper bounds, never better than the truth, within
//! 1.6%) and the exact max.

pub use ccarena_link::histogram::{Histogram, Summary};
