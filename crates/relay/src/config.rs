//! The relay's configuration: parsed from JSON and checked, every error naming its field.
//!
//! ```json
//! {"pipes": [{"name": "left0->r0", "a": "r0l0", "b": "r0l0b",
//!             "a_to_b": {"delay_ns": 20000000, "loss": 0.0, "rate_bps": 100000000, "limit_packets": 100},
//!             "b_to_a": {"delay_ns": 20000000, "loss": 0.0}}],
//!  "seed": 1, "duration_ns": null, "max_queue_frames": 100000,
//!  "sample_interval_ns": 100000000, "sample_origin_ns": 81234000000}
//! ```
//!
//! `pipes` and, per pipe, `name`, `a`, `b`, `a_to_b`, `b_to_a` and each direction's `delay_ns` and
//! `loss` are required. A direction with `rate_bps` emulates a whole link ([`crate::emulated_path`]): a
//! DropTail queue of `limit_packets` or `limit_bytes` (at most one; neither = unlimited) in front
//! of a transmitter at that rate, then wire loss, then the delay. Without `rate_bps` it only
//! delays (and loses) frames, and a limit is an error. A direction may list `changes`:
//! `[{"at_ns": 5000000000, "rate_bps": 5000000, "delay_ns": null, "loss": null,
//! "limit_packets": 20}]`, each applied `at_ns` after the *start instant* (the top-level
//! `start_ns`, CLOCK_MONOTONIC, or one given while the relay runs: [`crate::Relay::run`]); keys
//! left out or null keep their value, at least one must be set, and a rate or limit change needs
//! a direction with `rate_bps` and a limit in the same unit.
//!
//! A direction with `rate_bps` may also name its queue discipline, with the engine spec's names
//! and fields (docs/engine-spec.md, `queue`): `"discipline": "droptail"` (the default) with
//! optional `ecn_threshold_packets` / `ecn_threshold_bytes` and `ecn_threshold_selector` (`"all"`
//! or `"l4s"`: only ECT(1) frames are marked); `"red"` with a `red` object
//! (`min_th_packets` and `max_th_packets`, or `min_th_bytes` and `max_th_bytes`, `max_p`, `w_q`,
//! `gentle`, `ecn`, `idle_packet_bytes`, optional `wait` and `adaptive`); `"pie"` with a `pie`
//! object (`target_ns`, `tupdate_ns`, `alpha`, `beta`, `max_burst_ns`, `ecn`); `"codel"` with a
//! `codel` object (`target_ns`, `interval_ns`, `ecn`, optional `ce_threshold_ns` and
//! `ce_threshold_selector`); `"fq_codel"` with an `fq_codel` object
//! (`target_ns`, `interval_ns`, `flows`, `quantum_bytes`, `ecn`, optional `ce_threshold_ns` and
//! `ce_threshold_selector`); `"fq"` with an `fq` object
//! (`flows`, `quantum_bytes`); `"dualpi2"` with a `dualpi2` object (`target_ns`, `tupdate_ns`,
//! `alpha`, `beta`, `coupling`, `l4s_threshold_ns`, `l4s_ramp_ns`, `l4s_min_qlen_packets`,
//! `tshift_ns`), which queues frames whose IP ECN field is ECT(1) or CE as L4S
//! ([`crate::ecn::inspect`]). The last four decide when a frame leaves the queue: the link
//! holds the frames ([`crate::emulated_path`]). These are the link crate's types
//! ([`ccarena_link::QueueSpec`], each object deserialized as its discipline's own type) and its
//! checks, so the relay accepts exactly the queues the simulator does; unlike the engine spec,
//! the relay's format leaves out the objects of other disciplines instead of writing null.
//!
//! A direction with `rate_bps` may follow a capacity trace instead of that constant rate, in the
//! engine spec's format (docs/engine-spec.md, `links[i].trace`; `ccarena_link::trace`): `"trace":
//! {"opportunities_ms": [1, 1, 3], "steps": null, "loop": true}` (Mahimahi delivery opportunities)
//! or `{"opportunities_ms": null, "steps": [[0, 12000000], [1000000000, 6000000]], "loop": false}`
//! (rate steps). Its time 0 is the start instant; `rate_bps` stays the rate quoted (the trace's
//! mean), and a change may not set `rate_bps`.
//!
//! A direction may duplicate and reorder frames (`ccarena_link::impair`, the engine spec's link
//! fields of the same names): `"duplicate": 0.01` (each surviving frame sent twice with that
//! probability, the copy right behind it), `"reorder": 0.05` with `"reorder_delay_ns": 5000000`
//! (each surviving frame held back that much longer with that probability, so later frames
//! overtake it; null or absent = the direction's delay, at least 1 ms). Absent = 0, as before.
//!
//! A direction may capture the frames it forwards to a pcap file ([`crate::capture`]): `"pcap":
//! {"path": "/tmp/run/r0_to_r1.pcap", "max_bytes": 100000000}` (the file is created when the
//! relay opens; `max_bytes` at least 24, the file header). Absent: no capture.
//!
//! A direction may name the engine spec's link it emulates, `"stream_index": 3`: it then draws its
//! loss, queue-discipline, duplication and reordering randomness from that link's streams in the
//! simulator ([`LinkStreams::simulator`] of `seed` and the index), so a kernel run and its simulated
//! twin face the same random draws, packet for packet (common random numbers: what differs
//! between them is the stacks, not the luck of the draw). Absent: the direction's own streams
//! ([`LinkStreams::relay`]).
//!
//! Optional, with defaults: `seed` (0), `duration_ns` (null: run until signalled),
//! `max_queue_frames` ([`DEFAULT_MAX_QUEUE_FRAMES`]), `start_ns` (null), `sample_interval_ns` with
//! `sample_origin_ns` (both or neither: sample every queue at `origin + k·interval`,
//! CLOCK_MONOTONIC), and the timing knobs `spin_ns` ([`DEFAULT_SPIN_NS`]),
//! `min_wake_interval_ns` ([`DEFAULT_MIN_WAKE_INTERVAL_NS`]), `rt_priority`
//! ([`DEFAULT_RT_PRIORITY`]) and `keep_cpus_awake` (true); see
//! [`crate::schedule`] and [`crate::relay`]. Unknown keys are errors, so a typo cannot silently
//! fall back to a default. The whole config is read by serde derive, each direction into the link
//! crate's types (the wire's keys are [`WireSpec`]'s, the queue's [`QueueSpec`]'s, the trace
//! [`TraceSpec`]), so its format errors are serde's words under the path of the key at fault
//! (`pipes[0].a_to_b.delay_ns: invalid type: floating point `1.5`, expected u64`); the relay's
//! own rules then run on the typed values. Whether the interfaces exist is checked when the relay opens them
//! ([`crate::Relay::open`]), since that depends on the namespace the check runs in.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use ccarena_link::qdisc::codel::CodelConfig;
use ccarena_link::qdisc::dualpi2::DualPi2Config;
use ccarena_link::qdisc::fq::{FqCodelSpec, FqConfig};
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::qdisc::red::RedSpec;
use ccarena_link::qdisc::EcnSelector;
use ccarena_link::{Discipline, LinkStreams, QdiscConfig, QueueSpec, RateTrace, TraceSpec, WireSpec};

use crate::capture::{CaptureConfig, FILE_HEADER_BYTES};
use crate::emulated_path::{LinkChange, LinkParams, QueueLimit};

/// `max_queue_frames` when the config leaves it out.
pub const DEFAULT_MAX_QUEUE_FRAMES: usize = 100_000;

/// `spin_ns` when the config leaves it out: never busy-wait. Spinning trades a core for a few
/// microseconds of median lateness; on a 2-core machine that core is better left to the stacks.
pub const DEFAULT_SPIN_NS: u64 = 0;

/// `min_wake_interval_ns` when the config leaves it out: a direction wakes at most every 200 µs,
/// sending every frame that has become due. On the project's virtual machines each timer
/// wake-up costs 25–45 µs of CPU, so waking for every frame (every 12 µs at 1 Gbit/s) cannot
/// keep up; batching bounds the cost to ~5,000 wake-ups a second per direction for at most
/// 200 µs of added lateness. Frames further apart than this still get a wake-up each.
pub const DEFAULT_MIN_WAKE_INTERVAL_NS: u64 = 200_000;

/// `rt_priority` when the config leaves it out: SCHED_FIFO priority 10 for the relay threads.
/// Real-time scheduling is what keeps the tail of the lateness small on a busy machine (at
/// 100 Mbit/s beside other CPU-bound work, p99 0.4–0.7 ms without it, under 0.15 ms with it); the
/// threads sleep between batches and never spin unless `spin_ns` asks, so they cannot starve the
/// machine, and the kernel's RT throttling still reserves CPU for everything else.
pub const DEFAULT_RT_PRIORITY: u8 = 10;

/// Longest interface name Linux accepts (IFNAMSIZ − 1).
pub const MAX_IFNAME_BYTES: usize = 15;

/// One direction of a pipe: the link it emulates and how often a frame is lost on its wire.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionConfig {
    /// Fixed one-way propagation delay, ns.
    pub delay_ns: u64,
    /// Probability in [0, 1] that a frame is lost on the wire (independently per frame).
    pub loss: f64,
    /// Serialization rate, bits per second of IP bytes; `None` = delay (and loss) only.
    pub rate_bps: Option<u64>,
    /// The queue's hard limit ([`QueueLimit::Unlimited`] without a rate).
    pub limit: QueueLimit,
    /// The queue discipline (DropTail without ECN marking unless the config says otherwise).
    pub queue: QdiscConfig,
    /// Scheduled changes: (ns after the start instant, change), in time order (ties in list order).
    pub changes: Vec<(u64, LinkChange)>,
    /// The capacity trace the transmitter follows instead of `rate_bps`, if any.
    pub trace: Option<RateTrace>,
    /// Probability in [0, 1] that a surviving frame is sent twice (`ccarena_link::impair`).
    pub duplicate: f64,
    /// Probability in [0, 1] that a surviving frame is held back by `reorder_delay_ns`.
    pub reorder: f64,
    /// How long a reordered frame is held back, ns.
    pub reorder_delay_ns: u64,
    /// The engine spec's link whose simulator streams this direction draws from, if any.
    pub stream_index: Option<u64>,
    /// Capture the frames this direction forwards to a pcap file ([`crate::capture`]), if set.
    pub pcap: Option<CaptureConfig>,
}

impl DirectionConfig {
    /// The direction's random streams under `seed`: the simulator's streams of link
    /// `stream_index` when the config names one ([`LinkStreams::simulator`]), else the relay's own
    /// for direction `direction` (0 = a→b) of pipe `pipe_index` ([`LinkStreams::relay`]).
    pub fn streams(&self, seed: u64, pipe_index: usize, direction: u8) -> LinkStreams {
        match self.stream_index {
            Some(i) => LinkStreams::simulator(seed, i),
            None => LinkStreams::relay(seed, pipe_index, direction),
        }
    }

    /// The direction's duplication and reordering, drawing from `streams`.
    pub fn impairments(&self, streams: &LinkStreams) -> ccarena_link::WireImpairments {
        ccarena_link::WireImpairments::new(
            self.duplicate,
            self.reorder,
            self.reorder_delay_ns,
            streams.duplicate.clone(),
            streams.reorder.clone(),
        )
    }

    /// The link model's parameters.
    pub fn link_params(&self) -> LinkParams {
        LinkParams { rate_bps: self.rate_bps, limit: self.limit, delay_ns: self.delay_ns }
    }
}

/// One emulated link: two interfaces in the relay's namespace and a direction config for each way.
#[derive(Clone, Debug, PartialEq)]
pub struct PipeConfig {
    /// A label for the stats (for example `"left0->r0"`).
    pub name: String,
    /// The interface facing side a: frames arriving here go out of `b` after `a_to_b.delay_ns`.
    pub a: String,
    /// The interface facing side b: frames arriving here go out of `a` after `b_to_a.delay_ns`.
    pub b: String,
    /// Frames entering at `a`, leaving at `b`.
    pub a_to_b: DirectionConfig,
    /// Frames entering at `b`, leaving at `a`.
    pub b_to_a: DirectionConfig,
}

/// The whole relay: every pipe of a run, served by one process.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The pipes, in the order the stats report them.
    pub pipes: Vec<PipeConfig>,
    /// Seed of the loss streams (each direction of each pipe derives its own).
    pub seed: u64,
    /// Stop by itself after this long, ns; `None` runs until SIGTERM/SIGINT or [`crate::Relay::run`]'s stop flag.
    pub duration_ns: Option<u64>,
    /// Frames a direction may hold at once; one more is dropped and counted as `dropped_overflow`.
    pub max_queue_frames: usize,
    /// Busy-wait instead of sleeping when a frame is due within this long, ns (0: always sleep).
    pub spin_ns: u64,
    /// SCHED_FIFO priority of the relay threads (1–99), or 0 for normal scheduling.
    pub rt_priority: u8,
    /// A direction wakes at most this often, ns (0: for every frame).
    pub min_wake_interval_ns: u64,
    /// Queue sampling: `(origin_ns, interval_ns)`, CLOCK_MONOTONIC; samples at origin + k·interval.
    pub sampling: Option<(u64, u64)>,
    /// The instant the directions' `changes` count from, CLOCK_MONOTONIC ns, if known up front.
    pub start_ns: Option<u64>,
    /// Hold /dev/cpu_dma_latency at 0 while running, so idle CPUs poll instead of halting.
    pub keep_cpus_awake: bool,
}

/// A configuration mistake: the field's path (`pipes[0].a_to_b.loss`, `""` for the document
/// itself) and what is wrong. The link crate's field error, so the queue's own checks
/// ([`QueueSpec::validate`]) report in it directly.
pub use ccarena_link::FieldError as ConfigError;

type Result<T> = std::result::Result<T, ConfigError>;

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `name` when it is an interface name Linux accepts, else an error under `field`.
fn interface_name(name: String, field: &str) -> Result<String> {
    if name.is_empty() || name.len() > MAX_IFNAME_BYTES {
        return Err(ConfigError::new(field, format!("'{name}' is not an interface name (1 to {MAX_IFNAME_BYTES} bytes)")));
    }
    if name.bytes().any(|c| c == b'/' || c == 0 || c.is_ascii_whitespace()) || name == "." || name == ".." {
        return Err(ConfigError::new(field, format!("'{name}' is not an interface name")));
    }
    Ok(name)
}

/// The whole config as written (see the module docs), read by serde derive; [`ConfigFormat::check`]
/// applies the relay's rules and the defaults. Null is the same as absent for every optional key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFormat {
    pipes: Vec<PipeFormat>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    duration_ns: Option<u64>,
    #[serde(default)]
    max_queue_frames: Option<u64>,
    #[serde(default)]
    spin_ns: Option<u64>,
    #[serde(default)]
    rt_priority: Option<u64>,
    #[serde(default)]
    min_wake_interval_ns: Option<u64>,
    #[serde(default)]
    sample_interval_ns: Option<u64>,
    #[serde(default)]
    sample_origin_ns: Option<u64>,
    #[serde(default)]
    keep_cpus_awake: Option<bool>,
    #[serde(default)]
    start_ns: Option<u64>,
}

/// One pipe as written: two interfaces and a direction each way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipeFormat {
    name: String,
    a: String,
    b: String,
    a_to_b: DirectionFormat,
    b_to_a: DirectionFormat,
}

/// A direction's object as the config writes it (see the module docs), read by serde derive: the
/// link crate's wire keys ([`WireSpec`], flat), its queue's types under the relay's flat keys
/// (assembled into a [`QueueSpec`] by [`DirectionFormat::queue_spec`]) and its trace format
/// ([`TraceSpec`]), and the relay's own keys. Null is the same as absent for every optional key.
/// [`DirectionFormat::check`] then applies the relay's rules.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DirectionFormat {
    /// Propagation delay, ns.
    delay_ns: u64,
    /// `loss` (required), `duplicate`, `reorder`, `reorder_delay_ns`.
    #[serde(flatten)]
    wire: WireSpec,
    /// Serialization rate, bits per second; absent = delay (and loss) only.
    #[serde(default)]
    rate_bps: Option<u64>,
    /// The queue's limit in waiting frames (at most one of the two limits; neither = unlimited).
    #[serde(default)]
    limit_packets: Option<u64>,
    /// The queue's limit in waiting IP bytes.
    #[serde(default)]
    limit_bytes: Option<u64>,
    /// Scheduled changes, in any order.
    #[serde(default)]
    changes: Option<Vec<ChangeFormat>>,
    /// The queue discipline; absent = DropTail. The keys from here to `dualpi2` are
    /// [`QueueSpec`]'s, with its types.
    #[serde(default)]
    discipline: Option<Discipline>,
    #[serde(default)]
    ecn_threshold_packets: Option<u64>,
    #[serde(default)]
    ecn_threshold_bytes: Option<u64>,
    #[serde(default)]
    ecn_threshold_selector: Option<EcnSelector>,
    #[serde(default)]
    red: Option<RedSpec>,
    #[serde(default)]
    codel: Option<CodelConfig>,
    #[serde(default)]
    fq_codel: Option<FqCodelSpec>,
    #[serde(default)]
    pie: Option<PieConfig>,
    #[serde(default)]
    fq: Option<FqConfig>,
    #[serde(default)]
    dualpi2: Option<DualPi2Config>,
    /// A capacity trace instead of the constant `rate_bps`.
    #[serde(default)]
    trace: Option<TraceSpec>,
    /// The engine spec's link whose simulator streams the direction draws from.
    #[serde(default)]
    stream_index: Option<u64>,
    /// Capture to a pcap file.
    #[serde(default)]
    pcap: Option<PcapFormat>,
}

/// One entry of a direction's `changes`: `at_ns` after the start instant, and the values it sets
/// (null or absent keeps a value).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeFormat {
    at_ns: u64,
    #[serde(default)]
    rate_bps: Option<u64>,
    #[serde(default)]
    delay_ns: Option<u64>,
    #[serde(default)]
    loss: Option<f64>,
    #[serde(default)]
    limit_packets: Option<u64>,
    #[serde(default)]
    limit_bytes: Option<u64>,
}

/// A direction's `pcap` object: `{"path": "/tmp/x/r0_to_r1.pcap", "max_bytes": 100000000}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PcapFormat {
    path: String,
    max_bytes: u64,
}

/// Plain DropTail: the discipline when the config names none.
const DROPTAIL: QdiscConfig = QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::All };

/// `e`, a serde error in the direction object `v` at `path`, under the path of the key at fault.
/// A direction flattens the wire's keys, so serde's reader loses the key inside it; the key is
/// found by reading each key alone beside the required ones: the first that fails alone is the one
/// at fault (an unknown key, a wrong type, a bad nested object). With no single culprit (a missing
/// required key), the error is the direction's.
fn format_error(v: &Value, path: &str, e: &serde_json::Error) -> ConfigError {
    let Some(map) = v.as_object() else {
        return ConfigError::new(path, e.to_string());
    };
    for (key, value) in map {
        let mut alone = Map::new();
        alone.insert("delay_ns".into(), 0.into());
        alone.insert("loss".into(), 0.into());
        alone.insert(key.clone(), value.clone());
        if let Err(e) = DirectionFormat::deserialize(&Value::Object(alone)) {
            return ConfigError::new(join(path, key), e.to_string());
        }
    }
    ConfigError::new(path, e.to_string())
}

impl DirectionFormat {
    /// The relay's rules on the typed direction: the wire's probabilities, positive rate and
    /// limits, at most one limit, a limit, a discipline or a trace only with a rate (without one
    /// nothing ever waits), the queue's own checks ([`QueueSpec::validate`]), changes that fit the
    /// direction, and a usable pcap file. Errors name the field relative to the direction.
    fn check(self) -> Result<DirectionConfig> {
        self.wire.validate()?;
        let positive = |key: &str, value: Option<u64>, unit: &str| match value {
            Some(0) => Err(ConfigError::new(key, format!("must be positive ({unit})"))),
            _ => Ok(value),
        };
        let rate_bps = positive("rate_bps", self.rate_bps, "bits per second")?;
        let packets = positive("limit_packets", self.limit_packets, "packets")?;
        let bytes = positive("limit_bytes", self.limit_bytes, "bytes")?;
        let limit = match (packets, bytes) {
            (Some(_), Some(_)) => return Err(ConfigError::new("limit_bytes", "give limit_packets or limit_bytes, not both")),
            (Some(p), None) => QueueLimit::Packets(p),
            (None, Some(b)) => QueueLimit::Bytes(b),
            (None, None) => QueueLimit::Unlimited,
        };
        if rate_bps.is_none() && limit != QueueLimit::Unlimited {
            let key = if packets.is_some() { "limit_packets" } else { "limit_bytes" };
            return Err(ConfigError::new(key, "a queue limit needs rate_bps (without a rate nothing ever waits)"));
        }
        let mut changes = Vec::new();
        for (i, c) in self.changes.iter().flatten().enumerate() {
            changes.push(c.check(rate_bps.is_some(), limit).map_err(|e| e.under(&format!("changes[{i}]")))?);
        }
        // Time order, ties in list order (a stable sort).
        changes.sort_by_key(|(at, _)| *at);
        let spec = self.queue_spec();
        spec.validate()?;
        let queue = spec.qdisc_config();
        if rate_bps.is_none() && queue != DROPTAIL {
            return Err(ConfigError::new("discipline", "a queue discipline needs rate_bps (without a rate nothing ever waits)"));
        }
        let trace = self.trace.as_ref().map(|t| t.rate_trace().map_err(|e| e.under("trace"))).transpose()?;
        if trace.is_some() && rate_bps.is_none() {
            return Err(ConfigError::new("trace", "a trace needs rate_bps (the rate quoted for the link: the trace's mean)"));
        }
        if trace.is_some() {
            if let Some(i) = changes.iter().position(|(_, c)| c.rate_bps.is_some()) {
                return Err(ConfigError::new(format!("changes[{i}].rate_bps"), "the direction's rate follows a trace; a rate change cannot apply to it"));
            }
        }
        let pcap = self.pcap.map(|p| p.check().map_err(|e| e.under("pcap"))).transpose()?;
        Ok(DirectionConfig {
            delay_ns: self.delay_ns,
            loss: self.wire.loss,
            rate_bps,
            limit,
            queue,
            changes,
            trace,
            duplicate: self.wire.duplicate,
            reorder: self.wire.reorder,
            reorder_delay_ns: self.wire.held_ns(self.delay_ns),
            stream_index: self.stream_index,
            pcap,
        })
    }

    /// The engine spec's queue object the direction's queue keys describe (DropTail when it names
    /// no discipline; the limits as given).
    fn queue_spec(&self) -> QueueSpec {
        QueueSpec {
            discipline: self.discipline.unwrap_or(Discipline::Droptail),
            limit_packets: self.limit_packets,
            limit_bytes: self.limit_bytes,
            ecn_threshold_packets: self.ecn_threshold_packets,
            ecn_threshold_bytes: self.ecn_threshold_bytes,
            ecn_threshold_selector: self.ecn_threshold_selector,
            red: self.red.clone(),
            codel: self.codel,
            fq_codel: self.fq_codel.clone(),
            pie: self.pie,
            fq: self.fq,
            dualpi2: self.dualpi2,
        }
    }
}

impl ChangeFormat {
    /// The change for a direction whose rate is `has_rate` and whose limit is `limit`: positive
    /// rate and limit, a probability, a limit in the direction's unit, at least one value set.
    /// Errors name the field relative to the change.
    fn check(&self, has_rate: bool, limit: QueueLimit) -> Result<(u64, LinkChange)> {
        for (key, value, unit) in [("rate_bps", self.rate_bps, "bits per second"), ("limit_packets", self.limit_packets, "packets"), ("limit_bytes", self.limit_bytes, "bytes")] {
            if value == Some(0) {
                return Err(ConfigError::new(key, format!("must be positive ({unit})")));
            }
        }
        if let Some(loss) = self.loss {
            ccarena_link::wire_spec::probability("loss", loss)?;
        }
        let new_limit = match (self.limit_packets, self.limit_bytes, limit) {
            (Some(_), _, QueueLimit::Bytes(_) | QueueLimit::Unlimited) => {
                return Err(ConfigError::new("limit_packets", "the direction's queue is not limited in this unit"))
            }
            (_, Some(_), QueueLimit::Packets(_) | QueueLimit::Unlimited) => {
                return Err(ConfigError::new("limit_bytes", "the direction's queue is not limited in this unit"))
            }
            (Some(p), _, _) => Some(QueueLimit::Packets(p)),
            (_, Some(b), _) => Some(QueueLimit::Bytes(b)),
            (None, None, _) => None,
        };
        let c = LinkChange { rate_bps: self.rate_bps, delay_ns: self.delay_ns, loss: self.loss, limit: new_limit };
        if c.rate_bps.is_some() && !has_rate {
            return Err(ConfigError::new("rate_bps", "a rate change needs a direction with rate_bps"));
        }
        if c == LinkChange::default() {
            return Err(ConfigError::new("", "changes nothing: set rate_bps, delay_ns, loss, limit_packets or limit_bytes"));
        }
        Ok((self.at_ns, c))
    }
}

impl PcapFormat {
    /// A file path and a size limit that holds at least the file header.
    fn check(self) -> Result<CaptureConfig> {
        if self.path.is_empty() {
            return Err(ConfigError::new("path", "expected a file path, got an empty string"));
        }
        if self.max_bytes < FILE_HEADER_BYTES {
            return Err(ConfigError::new("max_bytes", format!("must be at least {FILE_HEADER_BYTES} (the pcap file header)")));
        }
        Ok(CaptureConfig { path: self.path.into(), max_bytes: self.max_bytes })
    }
}

/// `e`, a serde error while reading `doc` ([`ConfigFormat`]), under its field's path:
/// `serde_path_to_error`'s path (`pipes[0].a`, an unknown key's own name included), refined
/// inside a direction ([`format_error`]), whose flattened wire keys hide the key at fault.
fn located(doc: &Value, e: serde_path_to_error::Error<serde_json::Error>) -> ConfigError {
    let mut path = String::new();
    let mut at = doc;
    for segment in e.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                path.push_str(&format!("[{index}]"));
                at = at.get(*index).unwrap_or(&Value::Null);
            }
            serde_path_to_error::Segment::Map { key } => {
                path = join(&path, key);
                at = at.get(key.as_str()).unwrap_or(&Value::Null);
            }
            _ => {}
        }
    }
    let inner = e.inner();
    let is_direction = path.ends_with(".a_to_b") || path.ends_with(".b_to_a");
    if is_direction && path.starts_with("pipes[") {
        return format_error(at, &path, inner);
    }
    ConfigError::new(path, inner.to_string())
}

impl PipeFormat {
    /// The pipe at `path`: interface names Linux accepts, two different ones, each direction
    /// checked ([`DirectionFormat::check`]).
    fn check(self, path: &str) -> Result<PipeConfig> {
        let a = interface_name(self.a, &join(path, "a"))?;
        let b = interface_name(self.b, &join(path, "b"))?;
        if a == b {
            return Err(ConfigError::new(join(path, "b"), format!("'{b}' is also this pipe's a: a pipe joins two different interfaces")));
        }
        let a_to_b = self.a_to_b.check().map_err(|e| e.under(&join(path, "a_to_b")))?;
        let b_to_a = self.b_to_a.check().map_err(|e| e.under(&join(path, "b_to_a")))?;
        Ok(PipeConfig { name: self.name, a, b, a_to_b, b_to_a })
    }
}

impl ConfigFormat {
    /// The relay's rules on the typed config: at least one pipe, no interface in two pipes (each
    /// would receive every frame, so frames would be duplicated), the timing knobs within their
    /// bounds, sampling with both its keys, and the defaults of the module docs.
    fn check(self) -> Result<Config> {
        if self.pipes.is_empty() {
            return Err(ConfigError::new("pipes", "expected at least one pipe"));
        }
        let mut pipes = Vec::with_capacity(self.pipes.len());
        let mut users: HashMap<String, String> = HashMap::new();
        for (i, p) in self.pipes.into_iter().enumerate() {
            let path = format!("pipes[{i}]");
            let parsed = p.check(&path)?;
            for (side, ifname) in [("a", &parsed.a), ("b", &parsed.b)] {
                let field = format!("{path}.{side}");
                if let Some(first) = users.insert(ifname.clone(), field.clone()) {
                    return Err(ConfigError::new(field, format!("interface '{ifname}' is already used by {first}")));
                }
            }
            pipes.push(parsed);
        }
        if self.duration_ns == Some(0) {
            return Err(ConfigError::new("duration_ns", "must be positive, or null to run until signalled"));
        }
        let max_queue_frames = match self.max_queue_frames {
            None => DEFAULT_MAX_QUEUE_FRAMES,
            Some(0) => return Err(ConfigError::new("max_queue_frames", "must be at least 1")),
            Some(n) => usize::try_from(n).map_err(|_| ConfigError::new("max_queue_frames", "too large"))?,
        };
        let spin_ns = self.spin_ns.unwrap_or(DEFAULT_SPIN_NS);
        if spin_ns > 1_000_000 {
            return Err(ConfigError::new("spin_ns", format!("{spin_ns} ns of busy-waiting per frame would burn a core; at most 1000000")));
        }
        let rt_priority = match self.rt_priority {
            None => DEFAULT_RT_PRIORITY,
            Some(p @ 0..=99) => p as u8,
            Some(p) => return Err(ConfigError::new("rt_priority", format!("{p} is not a SCHED_FIFO priority (0 for normal scheduling, 1 to 99)"))),
        };
        let min_wake_interval_ns = self.min_wake_interval_ns.unwrap_or(DEFAULT_MIN_WAKE_INTERVAL_NS);
        if min_wake_interval_ns > 10_000_000 {
            return Err(ConfigError::new("min_wake_interval_ns", format!("{min_wake_interval_ns} ns would hold frames up to that long; at most 10000000")));
        }
        let sampling = match (self.sample_origin_ns, self.sample_interval_ns) {
            (None, None) => None,
            (Some(_), Some(0)) => return Err(ConfigError::new("sample_interval_ns", "must be positive (ns)")),
            (Some(o), Some(i)) => Some((o, i)),
            (None, Some(_)) => return Err(ConfigError::new("sample_origin_ns", "missing (sampling needs both sample_origin_ns and sample_interval_ns)")),
            (Some(_), None) => return Err(ConfigError::new("sample_interval_ns", "missing (sampling needs both sample_origin_ns and sample_interval_ns)")),
        };
        if self.start_ns == Some(0) {
            return Err(ConfigError::new("start_ns", "must be positive (CLOCK_MONOTONIC ns)"));
        }
        Ok(Config {
            pipes,
            seed: self.seed.unwrap_or(0),
            duration_ns: self.duration_ns,
            max_queue_frames,
            spin_ns,
            rt_priority,
            min_wake_interval_ns,
            sampling,
            start_ns: self.start_ns,
            keep_cpus_awake: self.keep_cpus_awake.unwrap_or(true),
        })
    }
}

impl Config {
    /// Parse and check a config: read by serde derive ([`ConfigFormat`], the link crate's types
    /// for each direction), then the relay's rules.
    ///
    /// # Errors
    /// The first problem found, naming its field: malformed JSON, a missing or unknown field, a
    /// wrong type or range, or an interface used by two pipes (each would receive every frame, so
    /// frames would be duplicated).
    pub fn from_json(json: &str) -> Result<Config> {
        let doc: Value = serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("invalid JSON: {e}")))?;
        if !doc.is_object() {
            return Err(ConfigError::new("", format!("expected an object, got {}", kind(&doc))));
        }
        let format: ConfigFormat = serde_path_to_error::deserialize(&doc).map_err(|e| located(&doc, e))?;
        format.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_link::qdisc::codel::CodelConfig;
    use ccarena_link::qdisc::dualpi2::DualPi2Config;
    use ccarena_link::qdisc::fq::FqConfig;

    const GOOD: &str = r#"{"pipes": [{"name": "left0->r0", "a": "r0l0", "b": "r0l0b",
        "a_to_b": {"delay_ns": 20000000, "loss": 0.0, "rate_bps": 100000000, "limit_packets": 100},
        "b_to_a": {"delay_ns": 5, "loss": 0.01}}],
        "seed": 1, "duration_ns": null, "max_queue_frames": 100000,
        "sample_interval_ns": 100000000, "sample_origin_ns": 81234000000}"#;

    fn err(json: &str) -> String {
        Config::from_json(json).unwrap_err().to_string()
    }

    fn with(pipe_patch: &str) -> String {
        format!(r#"{{"pipes": [{pipe_patch}], "seed": 1}}"#)
    }

    #[test]
    fn parses_the_documented_example() {
        let c = Config::from_json(GOOD).unwrap();
        assert_eq!(c.seed, 1);
        assert_eq!(c.duration_ns, None);
        assert_eq!(c.max_queue_frames, 100_000);
        assert_eq!(c.pipes.len(), 1);
        let p = &c.pipes[0];
        assert_eq!((p.name.as_str(), p.a.as_str(), p.b.as_str()), ("left0->r0", "r0l0", "r0l0b"));
        assert_eq!(p.a_to_b, DirectionConfig { delay_ns: 20_000_000, loss: 0.0, rate_bps: Some(100_000_000), limit: QueueLimit::Packets(100), queue: DROPTAIL, changes: vec![], trace: None, duplicate: 0.0, reorder: 0.0, reorder_delay_ns: 20_000_000, stream_index: None, pcap: None });
        assert_eq!(p.b_to_a, DirectionConfig { delay_ns: 5, loss: 0.01, rate_bps: None, limit: QueueLimit::Unlimited, queue: DROPTAIL, changes: vec![], trace: None, duplicate: 0.0, reorder: 0.0, reorder_delay_ns: 1_000_000, stream_index: None, pcap: None });
        assert_eq!(c.sampling, Some((81_234_000_000, 100_000_000)));
    }

    #[test]
    fn duplication_and_reordering_are_optional_and_checked() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let c = Config::from_json(&one(r#"{"delay_ns": 1, "loss": 0, "duplicate": 0.01, "reorder": 0.05, "reorder_delay_ns": 3000000}"#)).unwrap();
        let d = &c.pipes[0].a_to_b;
        assert_eq!((d.duplicate, d.reorder, d.reorder_delay_ns), (0.01, 0.05, 3_000_000));
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "reorder": 2}"#)), "pipes[0].a_to_b.reorder: 2 is not a probability in [0, 1]");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "duplicate": -0.1}"#)), "pipes[0].a_to_b.duplicate: -0.1 is not a probability in [0, 1]");
    }

    #[test]
    fn a_direction_naming_a_spec_link_draws_that_links_simulator_streams() {
        let json = r#"{"pipes": [{"name": "x", "a": "p", "b": "q", "a_to_b": {"delay_ns": 1, "loss": 0.1, "stream_index": 3}, "b_to_a": {"delay_ns": 1, "loss": 0.1}}], "seed": 7}"#;
        let c = Config::from_json(json).unwrap();
        let (fwd, rev) = (&c.pipes[0].a_to_b, &c.pipes[0].b_to_a);
        assert_eq!(fwd.stream_index, Some(3));
        assert_eq!(fwd.streams(c.seed, 0, 0), LinkStreams::simulator(7, 3));
        assert_eq!(rev.streams(c.seed, 0, 1), LinkStreams::relay(7, 0, 1));
        assert_ne!(LinkStreams::simulator(7, 3), LinkStreams::relay(7, 0, 0));
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "stream_index": -1}"#)), "pipes[0].a_to_b.stream_index: invalid value: integer `-1`, expected u64");
    }

    #[test]
    fn a_direction_may_capture_to_a_pcap_file() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let c = Config::from_json(&one(r#"{"delay_ns": 1, "loss": 0, "pcap": {"path": "/tmp/x.pcap", "max_bytes": 1000}}"#)).unwrap();
        assert_eq!(c.pipes[0].a_to_b.pcap, Some(CaptureConfig { path: "/tmp/x.pcap".into(), max_bytes: 1000 }));
        assert_eq!(c.pipes[0].b_to_a.pcap, None);
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "pcap": {"path": "/tmp/x.pcap", "max_bytes": 10}}"#)), "pipes[0].a_to_b.pcap.max_bytes: must be at least 24 (the pcap file header)");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "pcap": {"max_bytes": 1000}}"#)), "pipes[0].a_to_b.pcap: missing field `path`");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "pcap": {"path": "x", "max_bytes": 1000, "snap": 1}}"#)), "pipes[0].a_to_b.pcap.snap: unknown field `snap`, expected `path` or `max_bytes`");
    }

    #[test]
    fn optional_fields_take_their_defaults() {
        let c = Config::from_json(
            r#"{"pipes": [{"name": "x", "a": "p", "b": "q", "a_to_b": {"delay_ns": 0, "loss": 0}, "b_to_a": {"delay_ns": 1, "loss": 1}}], "duration_ns": 5}"#,
        )
        .unwrap();
        assert_eq!((c.seed, c.duration_ns, c.max_queue_frames, c.spin_ns, c.rt_priority), (0, Some(5), DEFAULT_MAX_QUEUE_FRAMES, DEFAULT_SPIN_NS, DEFAULT_RT_PRIORITY));
        assert_eq!((c.min_wake_interval_ns, c.sampling, c.keep_cpus_awake), (DEFAULT_MIN_WAKE_INTERVAL_NS, None, true));
        assert_eq!(c.pipes[0].b_to_a.loss, 1.0);
    }

    #[test]
    fn errors_name_the_field() {
        let dir = r#""a_to_b": {"delay_ns": 1, "loss": 0}, "b_to_a": {"delay_ns": 1, "loss": 0}"#;
        assert_eq!(err("[1]"), "expected an object, got a list");
        assert!(err("{").starts_with("invalid JSON"));
        assert_eq!(err(r#"{"seed": 1}"#), "missing field `pipes`");
        assert_eq!(err(r#"{"pipes": []}"#), "pipes: expected at least one pipe");
        assert_eq!(err(&with(&format!(r#"{{"name": "x", "b": "q", {dir}}}"#))), "pipes[0]: missing field `a`");
        assert_eq!(
            err(&with(r#"{"name": "x", "a": "p", "b": "q", "a_to_b": {"delay_ns": 1.5, "loss": 0}, "b_to_a": {"delay_ns": 1, "loss": 0}}"#)),
            "pipes[0].a_to_b.delay_ns: invalid type: floating point `1.5`, expected u64"
        );
        assert_eq!(
            err(&with(r#"{"name": "x", "a": "p", "b": "q", "a_to_b": {"delay_ns": 1, "loss": 0}, "b_to_a": {"delay_ns": 1, "loss": 1.5}}"#)),
            "pipes[0].b_to_a.loss: 1.5 is not a probability in [0, 1]"
        );
        assert_eq!(
            err(&with(r#"{"name": "x", "a": "p", "b": "q", "a_to_b": {"delay_ns": 1, "lost": 0}, "b_to_a": {"delay_ns": 1, "loss": 0}}"#)),
            "pipes[0].a_to_b.lost: unknown field `lost`"
        );
        // A direction's format errors: serde's words under the key at fault, or the direction's
        // path when no one key is (a required key missing).
        let in_a_to_b = |d: &str| err(&with(&format!(r#"{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}"#)));
        assert_eq!(in_a_to_b(r#"{"loss": 0}"#), "pipes[0].a_to_b: missing field `delay_ns`");
        assert_eq!(in_a_to_b(r#"{"delay_ns": 1, "loss": "none"}"#), "pipes[0].a_to_b.loss: invalid type: string \"none\", expected f64");
        assert_eq!(in_a_to_b(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 10, "discipline": "codel", "codel": {"target_ns": "5ms", "interval_ns": 1, "ecn": true}}"#), "pipes[0].a_to_b.codel.target_ns: invalid type: string \"5ms\", expected u64");
        assert_eq!(in_a_to_b(r#"{"delay_ns": 1, "loss": 0, "reorder_delay_ns": -1}"#), "pipes[0].a_to_b.reorder_delay_ns: invalid value: integer `-1`, expected u64");
        assert_eq!(err(&with(&format!(r#"{{"name": "x", "a": "p", "b": "p", {dir}}}"#))), "pipes[0].b: 'p' is also this pipe's a: a pipe joins two different interfaces");
        assert_eq!(
            err(&with(&format!(r#"{{"name": "x", "a": "this-name-is-too-long", "b": "q", {dir}}}"#))),
            "pipes[0].a: 'this-name-is-too-long' is not an interface name (1 to 15 bytes)"
        );
        assert_eq!(
            err(&format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", {dir}}}, {{"name": "y", "a": "r", "b": "p", {dir}}}]}}"#)),
            "pipes[1].b: interface 'p' is already used by pipes[0].a"
        );
        assert_eq!(err(&format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", {dir}}}], "duration_ns": 0}}"#)), "duration_ns: must be positive, or null to run until signalled");
        assert_eq!(err(&format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", {dir}}}], "max_queue_frames": -3}}"#)), "max_queue_frames: invalid value: integer `-3`, expected u64");
        assert_eq!(err(&format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", {dir}}}], "sede": 1}}"#)), "sede: unknown field `sede`, expected one of `pipes`, `seed`, `duration_ns`, `max_queue_frames`, `spin_ns`, `rt_priority`, `min_wake_interval_ns`, `sample_interval_ns`, `sample_origin_ns`, `keep_cpus_awake`, `start_ns`");
        assert_eq!(err(&format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", {dir}}}], "rt_priority": 100}}"#)), "rt_priority: 100 is not a SCHED_FIFO priority (0 for normal scheduling, 1 to 99)");
    }

    #[test]
    fn link_fields_are_checked() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "limit_packets": 5}"#)), "pipes[0].a_to_b.limit_packets: a queue limit needs rate_bps (without a rate nothing ever waits)");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 0}"#)), "pipes[0].a_to_b.rate_bps: must be positive (bits per second)");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_packets": 5, "limit_bytes": 9}"#)), "pipes[0].a_to_b.limit_bytes: give limit_packets or limit_bytes, not both");
        let c = Config::from_json(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_bytes": 9000}"#)).unwrap();
        assert_eq!(c.pipes[0].a_to_b.link_params(), LinkParams { rate_bps: Some(10), limit: QueueLimit::Bytes(9000), delay_ns: 1 });
        let top = |extra: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {{"delay_ns": 1, "loss": 0}}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}], {extra}}}"#);
        assert_eq!(err(&top(r#""sample_interval_ns": 5"#)), "sample_origin_ns: missing (sampling needs both sample_origin_ns and sample_interval_ns)");
        assert_eq!(err(&top(r#""sample_interval_ns": 0, "sample_origin_ns": 5"#)), "sample_interval_ns: must be positive (ns)");
        assert_eq!(err(&top(r#""keep_cpus_awake": 1"#)), "keep_cpus_awake: invalid type: integer `1`, expected a boolean");
        assert_eq!(err(&top(r#""min_wake_interval_ns": 20000000"#)), "min_wake_interval_ns: 20000000 ns would hold frames up to that long; at most 10000000");
        let c = Config::from_json(&top(r#""keep_cpus_awake": false, "min_wake_interval_ns": 0"#)).unwrap();
        assert_eq!((c.keep_cpus_awake, c.min_wake_interval_ns), (false, 0));
    }

    #[test]
    fn dequeue_time_disciplines_take_the_engine_specs_fields() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let queue = |q: &str| Config::from_json(&one(&format!(r#"{{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_packets": 50, {q}}}"#))).map(|c| c.pipes[0].a_to_b.queue.clone());
        let codel = CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: true, mtu_bytes: 1500, ce_threshold: None };
        assert_eq!(queue(r#""discipline": "codel", "codel": {"target_ns": 5000000, "interval_ns": 100000000, "ecn": true}"#).unwrap(), QdiscConfig::Codel(codel));
        assert_eq!(
            queue(r#""discipline": "fq_codel", "fq_codel": {"target_ns": 5000000, "interval_ns": 100000000, "flows": 1024, "quantum_bytes": 1514, "ecn": true}"#).unwrap(),
            QdiscConfig::FqCodel(FqConfig { flows: 1024, quantum_bytes: 1514 }, codel)
        );
        assert_eq!(queue(r#""discipline": "fq", "fq": {"flows": 16, "quantum_bytes": 3000}"#).unwrap(), QdiscConfig::Fq(FqConfig { flows: 16, quantum_bytes: 3000 }));
        let msg = |q: &str| queue(q).unwrap_err().to_string();
        assert_eq!(msg(r#""discipline": "codel", "codel": {"target_ns": 5, "interval_ns": 5, "ecn": false}"#), "pipes[0].a_to_b.codel.target_ns: must be shorter than the interval (0.000005 ms)");
        assert_eq!(msg(r#""discipline": "fq", "fq": {"flows": 70000, "quantum_bytes": 1}"#), "pipes[0].a_to_b.fq.flows: 70000 is not in [1, 65536]");
        assert_eq!(msg(r#""discipline": "fq", "fq": {"flows": 16, "quantum_bytes": 3000}, "codel": {"target_ns": 5, "interval_ns": 50, "ecn": false}"#), "pipes[0].a_to_b.codel: only a queue with discipline \"codel\" takes CODEL parameters; set it to null");
        assert_eq!(msg(r#""discipline": "sfq""#), "pipes[0].a_to_b.discipline: unknown variant `sfq`, expected one of `droptail`, `red`, `codel`, `fq_codel`, `pie`, `fq`, `dualpi2`");
        let dualpi2 = r#""discipline": "dualpi2", "dualpi2": {"target_ns": 15000000, "tupdate_ns": 16000000, "alpha": 0.16, "beta": 3.2, "coupling": 2, "l4s_threshold_ns": 1000000, "l4s_ramp_ns": 0, "l4s_min_qlen_packets": 1, "tshift_ns": 30000000}"#;
        assert_eq!(queue(dualpi2).unwrap(), QdiscConfig::DualPi2(DualPi2Config::default()));
        assert_eq!(msg(&dualpi2.replace("\"coupling\": 2", "\"coupling\": 0")), "pipes[0].a_to_b.dualpi2.coupling: 0 is not a positive number");
    }

    #[test]
    fn queues_are_the_link_crates_format_checked_as_the_engine_checks_them() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let queue = |q: &str| Config::from_json(&one(&format!(r#"{{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_packets": 50, {q}}}"#))).map(|c| c.pipes[0].a_to_b.queue.clone());
        let msg = |q: &str| queue(q).unwrap_err().to_string();
        let red = |max_th: u64| format!(r#""discipline": "red", "red": {{"min_th_packets": 5, "max_th_packets": {max_th}, "min_th_bytes": null, "max_th_bytes": null, "max_p": 0.1, "w_q": 0.002, "gentle": true, "ecn": false, "idle_packet_bytes": 1500}}"#);
        let QdiscConfig::Red(parsed) = queue(&red(15)).unwrap() else { panic!("RED") };
        assert_eq!((parsed.min_th, parsed.max_th, parsed.in_bytes, parsed.wait), (5, 15, false, false));
        assert_eq!(msg(&red(60)), "pipes[0].a_to_b.red.max_th_packets: 60 exceeds the queue limit (50); RED needs max_th ≤ limit");
        assert_eq!(msg(r#""discipline": "codel""#), "pipes[0].a_to_b.codel: required with discipline \"codel\"");
        assert_eq!(msg(r#""discipline": "pie", "pie": {"target_ns": 1}"#), "pipes[0].a_to_b.pie: missing field `tupdate_ns`");
        assert_eq!(msg(r#""ecn_threshold_packets": 60"#), "pipes[0].a_to_b.ecn_threshold_packets: must not exceed the queue limit");
        // DropTail's L4S step (only ECT(1) frames marked) and its checks.
        assert_eq!(
            queue(r#""ecn_threshold_packets": 10, "ecn_threshold_selector": "l4s""#).unwrap(),
            QdiscConfig::DropTail { ecn_threshold_packets: Some(10), ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::L4s }
        );
        assert_eq!(msg(r#""ecn_threshold_selector": "l4s""#), "pipes[0].a_to_b.ecn_threshold_selector: needs ecn_threshold (the step it selects for)");
        assert_eq!(msg(r#""ecn_threshold_packets": 10, "ecn_threshold_selector": "ect1""#), "pipes[0].a_to_b.ecn_threshold_selector: unknown variant `ect1`, expected `all` or `l4s`");
    }

    #[test]
    fn changes_are_checked_and_put_in_time_order() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let c = Config::from_json(&one(
            r#"{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_packets": 5, "changes": [
                {"at_ns": 9, "limit_packets": 2}, {"at_ns": 3, "rate_bps": 20, "delay_ns": null}, {"at_ns": 3, "loss": 0.5}]}"#,
        ))
        .unwrap();
        let changes = &c.pipes[0].a_to_b.changes;
        assert_eq!(changes[0], (3, LinkChange { rate_bps: Some(20), ..Default::default() }));
        assert_eq!(changes[1], (3, LinkChange { loss: Some(0.5), ..Default::default() }));
        assert_eq!(changes[2], (9, LinkChange { limit: Some(QueueLimit::Packets(2)), ..Default::default() }));
        assert_eq!(
            err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 10, "limit_packets": 5, "changes": [{"at_ns": 1, "limit_bytes": 9}]}"#)),
            "pipes[0].a_to_b.changes[0].limit_bytes: the direction's queue is not limited in this unit"
        );
        assert_eq!(
            err(&one(r#"{"delay_ns": 1, "loss": 0, "changes": [{"at_ns": 1, "rate_bps": 9}]}"#)),
            "pipes[0].a_to_b.changes[0].rate_bps: a rate change needs a direction with rate_bps"
        );
        assert_eq!(
            err(&one(r#"{"delay_ns": 1, "loss": 0, "changes": [{"at_ns": 1, "delay_ns": null}]}"#)),
            "pipes[0].a_to_b.changes[0]: changes nothing: set rate_bps, delay_ns, loss, limit_packets or limit_bytes"
        );
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "changes": [{"delay_ns": 4}]}"#)), "pipes[0].a_to_b.changes[0]: missing field `at_ns`");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "changes": [{"at_ns": 1, "loss": 2}]}"#)), "pipes[0].a_to_b.changes[0].loss: 2 is not a probability in [0, 1]");
    }
    #[test]
    fn a_trace_is_parsed_and_checked() {
        let one = |d: &str| format!(r#"{{"pipes": [{{"name": "x", "a": "p", "b": "q", "a_to_b": {d}, "b_to_a": {{"delay_ns": 1, "loss": 0}}}}]}}"#);
        let c = Config::from_json(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 12000000, "trace": {"opportunities_ms": [1, 1, 4], "steps": null, "loop": true}}"#)).unwrap();
        assert_eq!(c.pipes[0].a_to_b.trace, Some(RateTrace::opportunities_ms(&[1, 1, 4], true).unwrap()));
        let c = Config::from_json(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 5, "trace": {"opportunities_ms": null, "steps": [[0, 10], [5, 0]], "loop": false}}"#)).unwrap();
        assert_eq!(c.pipes[0].a_to_b.trace, Some(RateTrace::steps(&[(0, 10), (5, 0)], false).unwrap()));
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "trace": {"opportunities_ms": [1], "steps": null, "loop": true}}"#)), "pipes[0].a_to_b.trace: a trace needs rate_bps (the rate quoted for the link: the trace's mean)");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 5, "trace": {"opportunities_ms": [3, 2], "steps": null, "loop": true}}"#)), "pipes[0].a_to_b.trace.opportunities_ms: timestamps must not decrease: entry 1 (2 ms) follows 3 ms");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 5, "trace": {"opportunities_ms": null, "steps": null, "loop": true}}"#)), "pipes[0].a_to_b.trace: set exactly one of opportunities_ms and steps");
        assert_eq!(err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 5, "trace": {"opportunities_ms": null, "steps": [[0]], "loop": true}}"#)), "pipes[0].a_to_b.trace.steps[0]: invalid length 1, expected a tuple of size 2");
        assert_eq!(
            err(&one(r#"{"delay_ns": 1, "loss": 0, "rate_bps": 5, "trace": {"opportunities_ms": [1], "steps": null, "loop": false}, "changes": [{"at_ns": 1, "rate_bps": 9}]}"#)),
            "pipes[0].a_to_b.changes[0].rate_bps: the direction's rate follows a trace; a rate change cannot apply to it"
        );
    }
}
