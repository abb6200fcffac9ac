//! A log-linear histogram of nanosecond values (the simulator's RTT samples, the relay's
//! lateness): bounded memory, ~1.6% relative precision, so per-ACK or per-frame samples need no
//! per-sample storage. Only the span of buckets between the
//! smallest and largest value recorded is stored (an idle flow's histogram allocates nothing; RTTs
//! within a factor of two of each other take about 64 buckets).

/// Sub-buckets per power of two; relative bucket width is at most 1/SUB_BUCKETS.
const SUB_BUCKETS: u64 = 64;
const SUB_BITS: u32 = 6;
/// Powers of two covered: values up to 2^40 ns (~18 minutes).
const OCTAVES: usize = 41;

/// Histogram of `u64` nanosecond values with exact count, sum, min and max.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// Counts of buckets `first_bucket ..first_bucket + counts.len()`; the others are zero.
    counts: Vec<u64>,
    first_bucket: usize,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Vec::new(), first_bucket: 0, count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB_BUCKETS {
        return v as usize;
    }
    let octave = 63 - v.leading_zeros() - SUB_BITS + 1; // >= 1
    let sub = (v >> (octave - 1)) - SUB_BUCKETS; // top SUB_BITS bits after the leading one
    ((octave as u64 * SUB_BUCKETS) + sub).min((OCTAVES as u64 * SUB_BUCKETS) - 1) as usize
}

/// The largest value that falls into bucket `b`.
fn bucket_upper(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB_BUCKETS {
        return b;
    }
    let octave = b / SUB_BUCKETS;
    let sub = b % SUB_BUCKETS;
    ((SUB_BUCKETS + sub) << (octave - 1)) + (1u64 << (octave - 1)) - 1
}

fn bucket_mid(b: usize) -> f64 {
    let b = b as u64;
    if b < SUB_BUCKETS {
        return b as f64;
    }
    let octave = b / SUB_BUCKETS;
    let sub = b % SUB_BUCKETS;
    let lo = (SUB_BUCKETS + sub) << (octave - 1);
    let width = 1u64 << (octave - 1);
    lo as f64 + width as f64 / 2.0
}

/// The relay's summary of its lateness: mean, p50, p99, p99.9 and max, all in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Number of values recorded.
    pub count: u64,
    /// Arithmetic mean, ns (rounded to the nearest ns).
    pub mean_ns: u64,
    /// Median, ns (bucket upper bound, capped at max).
    pub p50_ns: u64,
    /// 99th percentile, ns (bucket upper bound, capped at max).
    pub p99_ns: u64,
    /// 99.9th percentile, ns (bucket upper bound, capped at max).
    pub p999_ns: u64,
    /// Largest value, ns (exact).
    pub max_ns: u64,
}

impl Histogram {
    /// An empty histogram (allocates nothing until the first value).
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// The exact largest value, ns; 0 when empty.
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// The smallest bucket bound b such that at least a fraction `q` of the values are ≤ b,
    /// capped at the exact max: never below the true quantile (a reported p99 is never better
    /// than the truth), within one bucket (≤ 1.6%) above it; 0 when empty.
    pub fn quantile_upper_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_upper(self.first_bucket + b).min(self.max);
            }
        }
        self.max
    }

    /// Mean, p50, p99, p99.9 (upper bounds, [`Histogram::quantile_upper_ns`]) and max; all zero
    /// when nothing was recorded.
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        Summary {
            count: self.count,
            mean_ns: ((self.sum + u128::from(self.count / 2)) / u128::from(self.count)) as u64,
            p50_ns: self.quantile_upper_ns(0.5),
            p99_ns: self.quantile_upper_ns(0.99),
            p999_ns: self.quantile_upper_ns(0.999),
            max_ns: self.max,
        }
    }

    /// Record one value.
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        if self.counts.is_empty() {
            self.first_bucket = b;
        } else if b < self.first_bucket {
            // Rare (a new minimum below the stored span): prepend zeros.
            let grow = self.first_bucket - b;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first_bucket = b;
        }
        let i = b - self.first_bucket;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, or NaN when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Exact minimum, or NaN when empty.
    pub fn min(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.min as f64
        }
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) to within one bucket (≤ 1.6% relative), clamped to the exact
    /// min and max; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_mid(self.first_bucket + b).clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_two_percent() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (q, want) in [(0.5, 50_000_000.0), (0.95, 95_000_000.0), (0.99, 99_000_000.0)] {
            let got = h.quantile(q);
            assert!((got - want).abs() / want < 0.02, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.min(), 1000.0);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }

    /// Recording out of order (a new minimum below the stored span) gives the same quantiles as
    /// recording in order, and an empty histogram stores nothing.
    #[test]
    fn span_grows_both_ways() {
        assert!(Histogram::default().counts.is_empty());
        let values: Vec<u64> = (0..2000u64).map(|i| (i * 7919) % 1_000_003 * 1000 + 5).collect();
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for &v in &values {
            a.record(v);
        }
        for &v in &sorted {
            b.record(v);
        }
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(a.quantile(q), b.quantile(q), "q{q}");
        }
        assert_eq!(a.counts, b.counts);
    }

    #[test]
    fn buckets_tile_the_line_and_upper_quantiles_bound_the_truth() {
        let mut v = 0u64;
        while v < 1 << 30 {
            let b = bucket_of(v);
            assert!(bucket_upper(b) >= v, "v {v} bucket {b}");
            if b > 0 {
                assert!(bucket_upper(b - 1) < v, "v {v} bucket {b}");
            }
            v = if v < 4096 { v + 1 } else { v + v / 97 + 1 };
        }
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!((s.count, s.mean_ns, s.max_ns), (10_000, 5_000_500, 10_000_000));
        assert!(s.p99_ns >= 9_900_000 && s.p99_ns as f64 <= 9_900_000.0 * 1.016, "{s:?}");
        assert_eq!(Histogram::new().summary(), Summary::default());
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        for v in [3, 3, 7] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 3.0);
        assert_eq!(h.quantile(1.0), 7.0);
    }
}
