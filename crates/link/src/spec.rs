//! The link format: the serde types of an egress queue (every discipline with its parameters)
//! and of a capacity trace, as the engine spec writes them (`docs/engine-spec.md`, `queue` and
//! `links[i].trace`), with their validation. The simulator's spec embeds them; the relay reads
//! the same types from its config, so both accept and refuse the same queues with the same
//! messages.
//!
//! Each discipline's parameter object and its checks live in the discipline's own module
//! ([`crate::qdisc::red::RedSpec`], [`CodelConfig`], [`FqCodelSpec`], [`PieConfig`],
//! [`FqConfig`]); this module registers them in [`QueueSpec`] and [`Discipline`].

use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;
use crate::qdisc::codel::CodelConfig;
use crate::qdisc::fq::{FqCodelSpec, FqConfig};
use crate::qdisc::pie::PieConfig;
use crate::qdisc::red::RedSpec;
use crate::qdisc::{Limit, QdiscConfig};
use crate::trace::RateTrace;

/// An egress queue.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Queue discipline.
    pub discipline: Discipline,
    /// Limit on waiting packets, or null when limited in bytes.
    pub limit_packets: Option<u64>,
    /// Limit on waiting bytes, or null when limited in packets.
    pub limit_bytes: Option<u64>,
    /// ECN marking threshold K in waiting packets: an ECN-capable (ECT) packet arriving when at
    /// least this many packets wait is marked CE instead of being dropped (DCTCP's marking, RFC
    /// 8257 §3.1). Null (or absent) = no marking by packets.
    #[serde(default)]
    pub ecn_threshold_packets: Option<u64>,
    /// ECN marking threshold K in waiting bytes, as `ecn_threshold_packets`. Null (or absent) = no
    /// marking by bytes. At most one of the two is set.
    #[serde(default)]
    pub ecn_threshold_bytes: Option<u64>,
    /// RED's parameters: required with `discipline = "red"`, absent or null otherwise (written
    /// as null, so a serialized spec names every field).
    #[serde(default)]
    pub red: Option<RedSpec>,
    /// CoDel's parameters: required with `discipline = "codel"`, absent or null otherwise.
    #[serde(default)]
    pub codel: Option<CodelConfig>,
    /// FQ-CoDel's parameters: required with `discipline = "fq_codel"`, absent or null otherwise.
    #[serde(default)]
    pub fq_codel: Option<FqCodelSpec>,
    /// PIE's parameters: required with `discipline = "pie"`, absent or null otherwise.
    #[serde(default)]
    pub pie: Option<PieConfig>,
    /// FQ's parameters: required with `discipline = "fq"`, absent or null otherwise.
    #[serde(default)]
    pub fq: Option<FqConfig>,
}

/// Queue disciplines.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// Tail drop at a fixed limit.
    Droptail,
    /// Random Early Detection (Floyd & Jacobson 1993) in front of the same hard limit.
    Red,
    /// CoDel (RFC 8289) in front of the same hard limit.
    Codel,
    /// FQ-CoDel (RFC 8290): flow queues, deficit round robin, CoDel per queue.
    FqCodel,
    /// PIE (RFC 8033) in front of the same hard limit.
    Pie,
    /// Per-flow fair queueing by deficit round robin, no AQM.
    Fq,
}

impl Discipline {
    /// Every discipline, in the order messages list them.
    pub const ALL: [Discipline; 6] =
        [Discipline::Droptail, Discipline::Red, Discipline::Pie, Discipline::Codel, Discipline::FqCodel, Discipline::Fq];

    /// The name the spec uses (also the key of the discipline's parameter object).
    pub fn name(self) -> &'static str {
        match self {
            Discipline::Droptail => "droptail",
            Discipline::Red => "red",
            Discipline::Codel => "codel",
            Discipline::FqCodel => "fq_codel",
            Discipline::Pie => "pie",
            Discipline::Fq => "fq",
        }
    }

    /// The discipline the spec calls `name`, if any.
    pub fn from_name(name: &str) -> Option<Discipline> {
        Discipline::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl QueueSpec {
    /// The disciplines that take a parameter object, each with whether this queue carries one.
    fn parameter_objects(&self) -> [(Discipline, bool); 5] {
        [
            (Discipline::Red, self.red.is_some()),
            (Discipline::Codel, self.codel.is_some()),
            (Discipline::FqCodel, self.fq_codel.is_some()),
            (Discipline::Pie, self.pie.is_some()),
            (Discipline::Fq, self.fq.is_some()),
        ]
    }

    /// Check the queue's values; the limit's presence is the caller's rule (the engine spec
    /// requires exactly one, the relay allows none): the ECN step threshold (one unit, within the
    /// limit, DropTail only), the parameter object of the discipline and no other, and the
    /// discipline's own values.
    ///
    /// # Errors
    /// The first problem, naming the field relative to the queue (`codel.target_ns`; empty for
    /// the queue itself).
    pub fn validate(&self) -> Result<(), FieldError> {
        self.validate_ecn_threshold()?;
        self.validate_parameter_objects()?;
        self.validate_parameters()
    }

    /// The ECN step threshold: at most one unit, at most the limit in that unit.
    fn validate_ecn_threshold(&self) -> Result<(), FieldError> {
        match (self.ecn_threshold_packets, self.ecn_threshold_bytes) {
            (Some(_), Some(_)) => Err(FieldError::new("", "set at most one of ecn_threshold_packets and ecn_threshold_bytes")),
            (Some(k), None) if self.limit_packets.is_some_and(|lim| k > lim) => {
                Err(FieldError::new("ecn_threshold_packets", "must not exceed the queue limit"))
            }
            (None, Some(k)) if self.limit_bytes.is_some_and(|lim| k > lim) => Err(FieldError::new("ecn_threshold_bytes", "must not exceed the queue limit")),
            _ => Ok(()),
        }
    }

    /// The discipline's parameter object present and no other; the ECN step threshold only on
    /// DropTail (the others mark with their own `ecn`).
    fn validate_parameter_objects(&self) -> Result<(), FieldError> {
        let d = self.discipline;
        for (owner, present) in self.parameter_objects() {
            let field = owner.name();
            if owner == d && !present {
                return Err(FieldError::new(field, format!("required with discipline \"{field}\"")));
            }
            if owner != d && present {
                return Err(FieldError::new(
                    field,
                    format!("only a queue with discipline \"{field}\" takes {} parameters; set it to null", field.to_uppercase().replace('_', "-")),
                ));
            }
        }
        if d != Discipline::Droptail {
            for (field, k) in [("ecn_threshold_packets", self.ecn_threshold_packets), ("ecn_threshold_bytes", self.ecn_threshold_bytes)] {
                if k.is_some() {
                    let own = if d == Discipline::Red { "RED marks with red.ecn = true".to_string() } else { format!("it marks with {}.ecn = true", d.name()) };
                    return Err(FieldError::new(field, format!("must be null with discipline \"{}\" ({own})", d.name())));
                }
            }
        }
        Ok(())
    }

    /// Each present parameter object's own checks, its errors under its key.
    fn validate_parameters(&self) -> Result<(), FieldError> {
        if let Some(red) = self.red.as_ref().filter(|_| self.discipline == Discipline::Red) {
            red.validate(self.limit_packets, self.limit_bytes).map_err(|e| e.under("red"))?;
        }
        if let Some(c) = &self.codel {
            c.validate().map_err(|e| e.under("codel"))?;
        }
        if let Some(c) = &self.fq_codel {
            c.validate().map_err(|e| e.under("fq_codel"))?;
        }
        if let Some(c) = &self.fq {
            c.validate().map_err(|e| e.under("fq"))?;
        }
        if let Some(c) = &self.pie {
            c.validate().map_err(|e| e.under("pie"))?;
        }
        Ok(())
    }

    /// The hard limit (none when neither limit is set).
    pub fn limit(&self) -> Limit {
        match (self.limit_packets, self.limit_bytes) {
            (Some(p), _) => Limit::Packets(p),
            (None, Some(b)) => Limit::Bytes(b),
            (None, None) => Limit::Unlimited,
        }
    }

    /// The discipline a validated queue describes.
    ///
    /// # Panics
    /// When the discipline's parameter object is missing (see [`QueueSpec::validate`]); RED
    /// without one falls back to DropTail.
    pub fn qdisc_config(&self) -> QdiscConfig {
        let droptail = QdiscConfig::DropTail { ecn_threshold_packets: self.ecn_threshold_packets, ecn_threshold_bytes: self.ecn_threshold_bytes };
        match self.discipline {
            Discipline::Droptail => droptail,
            Discipline::Red => self.red.as_ref().map_or(droptail, |r| QdiscConfig::Red(r.config())),
            Discipline::Codel => QdiscConfig::Codel(self.codel.expect("validated: codel present")),
            Discipline::FqCodel => {
                let c = self.fq_codel.as_ref().expect("validated: fq_codel present");
                QdiscConfig::FqCodel(c.fq(), c.codel())
            }
            Discipline::Pie => QdiscConfig::Pie(self.pie.expect("validated: pie present")),
            Discipline::Fq => QdiscConfig::Fq(self.fq.expect("validated: fq present")),
        }
    }
}

/// A link's capacity trace ([`crate::trace`]): exactly one of `opportunities_ms` and `steps` is
/// non-null. Every key is required.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Mahimahi delivery opportunities: the trace file's millisecond timestamps in order, each an
    /// instant at which 1500 bytes may leave (byte accounting, as mm-link). Kept in ms, as in the
    /// file, so a long trace stays compact.
    pub opportunities_ms: Option<Vec<u64>>,
    /// Rate steps `[time_ns, rate_bps]`, the first at 0, times increasing; the last row marks
    /// the trace's end (its period when looped).
    pub steps: Option<Vec<(u64, u64)>>,
    /// Repeat the trace (period: the last timestamp or the last step's time). Not looped, a
    /// Mahimahi trace has no capacity after its last opportunity and rate steps keep the last
    /// rate.
    #[serde(rename = "loop")]
    pub looped: bool,
}

impl TraceSpec {
    /// The checked trace.
    ///
    /// # Errors
    /// Neither or both kinds given, or a trace [`RateTrace`] refuses; the error names the key at
    /// fault (empty for the object itself).
    pub fn rate_trace(&self) -> Result<RateTrace, FieldError> {
        match (&self.opportunities_ms, &self.steps) {
            (Some(o), None) => RateTrace::opportunities_ms(o, self.looped).map_err(|e| FieldError::new("opportunities_ms", e.0)),
            (None, Some(s)) => RateTrace::steps(s, self.looped).map_err(|e| FieldError::new("steps", e.0)),
            _ => Err(FieldError::new("", "set exactly one of opportunities_ms and steps")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codel_queue(target_ns: u64, interval_ns: u64) -> QueueSpec {
        QueueSpec {
            discipline: Discipline::Codel,
            limit_packets: Some(100),
            limit_bytes: None,
            ecn_threshold_packets: None,
            ecn_threshold_bytes: None,
            red: None,
            codel: Some(CodelConfig { target_ns, interval_ns, ecn: false, mtu_bytes: crate::qdisc::MTU_BYTES }),
            fq_codel: None,
            pie: None,
            fq: None,
        }
    }

    #[test]
    fn errors_name_the_field_relative_to_the_queue() {
        assert_eq!(codel_queue(5, 100).validate(), Ok(()));
        assert_eq!(codel_queue(100, 100).validate().unwrap_err().to_string(), "codel.target_ns: must be shorter than the interval (0.0001 ms)");
        let mut q = codel_queue(5, 100);
        q.ecn_threshold_packets = Some(5);
        assert_eq!(q.validate().unwrap_err().to_string(), "ecn_threshold_packets: must be null with discipline \"codel\" (it marks with codel.ecn = true)");
        q.ecn_threshold_bytes = Some(5);
        assert_eq!(q.validate().unwrap_err(), FieldError::new("", "set at most one of ecn_threshold_packets and ecn_threshold_bytes"));
        assert_eq!(q.validate().unwrap_err().under("links[2].queue").to_string(), "links[2].queue: set at most one of ecn_threshold_packets and ecn_threshold_bytes");
        let mut q = codel_queue(5, 100);
        q.fq = Some(FqConfig { flows: 70_000, quantum_bytes: 1 });
        assert_eq!(q.validate().unwrap_err().to_string(), "fq: only a queue with discipline \"fq\" takes FQ parameters; set it to null");
        q.discipline = Discipline::Fq;
        q.codel = None;
        assert_eq!(q.validate().unwrap_err().to_string(), "fq.flows: 70000 is not in [1, 65536]");
    }

    #[test]
    fn the_format_leaves_out_the_packet_size_and_the_discipline_names_round_trip() {
        let c: CodelConfig = serde_json::from_str(r#"{"target_ns": 5000000, "interval_ns": 100000000, "ecn": true}"#).unwrap();
        assert_eq!(c, CodelConfig { ecn: true, ..CodelConfig::default() });
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"target_ns":5000000,"interval_ns":100000000,"ecn":true}"#);
        let e = serde_json::from_str::<PieConfig>(r#"{"target_ns": 1, "tupdate_ns": 1, "alpha": 1, "beta": 1, "max_burst_ns": 0, "ecn": false, "mean_packet_bytes": 9}"#);
        assert!(e.unwrap_err().to_string().contains("unknown field `mean_packet_bytes`"));
        for d in Discipline::ALL {
            assert_eq!(Discipline::from_name(d.name()), Some(d));
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{}\"", d.name()));
        }
        assert_eq!(Discipline::from_name("sfq"), None);
    }
}
