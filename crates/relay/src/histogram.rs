//! The lateness histogram: log-linear buckets over nanoseconds, fixed memory, O(1) per record.
//!
//! Every value below 2^[`SUB_BITS`] ns has its own bucket; above, each power of two is split into
//! 2^[`SUB_BITS`] equal buckets, so a percentile is reported within 1/2^[`SUB_BITS`] (3 %) of the
//! true value (always rounded up: a reported p99 is never better than the truth). Mean and max are
//! exact. Recording is an index computation and an increment, cheap enough for every frame.

/// Sub-buckets per power of two, as a power of two.
pub const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Values at or above 2^MAX_BITS ns (about 18 minutes) share the last bucket; max stays exact.
const MAX_BITS: u32 = 40;
const BUCKETS: usize = ((MAX_BITS - SUB_BITS + 1) as usize) << SUB_BITS;

/// A histogram of non-negative nanosecond values.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

/// The summary the relay reports: mean, p50, p99, p99.9 and max, all in ns.
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

fn bucket_of(v_ns: u64) -> usize {
    let v = v_ns.min((1u64 << MAX_BITS) - 1);
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    // Row (msb - SUB_BITS + 1) holds [2^msb, 2^(msb+1)) in SUB steps of 2^shift.
    let row = (msb - SUB_BITS + 1) as usize;
    (row << SUB_BITS) + ((v >> shift) & (SUB - 1)) as usize
}

/// The largest value that falls into bucket `i`.
fn bucket_upper_ns(i: usize) -> u64 {
    let row = (i >> SUB_BITS) as u32;
    let sub = (i as u64) & (SUB - 1);
    if row == 0 {
        return sub;
    }
    let shift = row - 1;
    // Row r starts at 2^(r - 1 + SUB_BITS); bucket `sub` covers 2^shift values from there.
    (((SUB + sub) << shift) + (1u64 << shift)) - 1
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; BUCKETS], count: 0, sum_ns: 0, max_ns: 0 }
    }

    /// Record one value.
    #[inline]
    pub fn record(&mut self, v_ns: u64) {
        self.counts[bucket_of(v_ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(v_ns);
        self.max_ns = self.max_ns.max(v_ns);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest bucket bound b such that at least a fraction `q` of the values are ≤ b,
    /// capped at the exact max; 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // Rank of the q-quantile (1-based): ceil(q·n), at least 1.
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_upper_ns(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// Mean, p50, p99, p99.9 and max; all zero when nothing was recorded.
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        Summary {
            count: self.count,
            mean_ns: ((self.sum_ns + u128::from(self.count / 2)) / u128::from(self.count)) as u64,
            p50_ns: self.quantile_ns(0.5),
            p99_ns: self.quantile_ns(0.99),
            p999_ns: self.quantile_ns(0.999),
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_their_bounds() {
        // Every value maps to a bucket whose upper bound is ≥ it and whose predecessor's bound is
        // below it, i.e. the buckets tile the line with no gaps or overlaps.
        let mut v = 0u64;
        while v < 1 << 24 {
            let b = bucket_of(v);
            assert!(bucket_upper_ns(b) >= v, "v {v} bucket {b}");
            if b > 0 {
                assert!(bucket_upper_ns(b - 1) < v, "v {v} bucket {b}");
            }
            v = if v < 4096 { v + 1 } else { v + v / 97 + 1 };
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn relative_error_is_bounded() {
        for v in [33u64, 100, 999, 12_345, 1_000_000, 987_654_321] {
            let up = bucket_upper_ns(bucket_of(v));
            assert!(up >= v && (up - v) as f64 <= v as f64 / SUB as f64, "v {v} up {up}");
        }
    }

    #[test]
    fn percentiles_of_a_uniform_ramp() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 10); // 10 ns .. 1 ms
        }
        let s = h.summary();
        assert_eq!(s.count, 100_000);
        assert_eq!(s.max_ns, 1_000_000);
        assert_eq!(s.mean_ns, 500_005);
        let close = |got: u64, want: f64| got as f64 >= want && (got as f64) <= want * (1.0 + 1.0 / SUB as f64);
        assert!(close(s.p50_ns, 500_000.0), "p50 {}", s.p50_ns);
        assert!(close(s.p99_ns, 990_000.0), "p99 {}", s.p99_ns);
        assert!(s.p999_ns >= 999_000 && s.p999_ns <= 1_000_000, "p999 {}", s.p999_ns);
    }

    #[test]
    fn a_rare_outlier_shows_in_p999_and_max_but_not_p99() {
        let mut h = Histogram::new();
        for _ in 0..9_990 {
            h.record(10_000);
        }
        for _ in 0..10 {
            h.record(5_000_000);
        }
        let s = h.summary();
        assert!(s.p99_ns < 11_000, "p99 {}", s.p99_ns);
        assert!(s.p999_ns < 11_000, "p999 {} (the 10 outliers are the top 0.1 %)", s.p999_ns);
        assert_eq!(s.max_ns, 5_000_000);
        h.record(5_000_000);
        assert!(h.summary().p999_ns >= 5_000_000);
    }

    #[test]
    fn empty_is_all_zero_and_small_values_are_exact() {
        assert_eq!(Histogram::new().summary(), Summary::default());
        let mut h = Histogram::new();
        for v in [0u64, 1, 2, 3] {
            h.record(v);
        }
        assert_eq!(h.quantile_ns(0.5), 1);
        assert_eq!(h.quantile_ns(1.0), 3);
        assert_eq!(h.summary().max_ns, 3);
    }
}
