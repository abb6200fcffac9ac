//! The whole relay: open every pipe's sockets, deal the directions to a bounded number of worker
//! threads ([`crate::worker`]), stop, collect stats.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::capture::LinkCapture;
use crate::config::{Config, ConfigError, DirectionConfig};
use crate::direction::Direction;
use crate::worker;
use crate::emulated_path::EmulatedPath;
use crate::rng::Loss;
use crate::sampler::QueueSampler;
use crate::schedule::Tuning;
use crate::stats::{PipeStats, RelayStats};
use crate::sys::{self, BufferSizes, CpuLatencyHold, PacketSocket};

/// Receive buffer per socket: room for tens of milliseconds at 1 Gbit/s even with the kernel's
/// per-frame overhead, so a descheduled relay thread does not lose frames, bytes.
pub const RCVBUF_BYTES: usize = 64 << 20;
/// Send buffer per socket: only fills if a qdisc on the out-interface holds many frames, bytes.
pub const SNDBUF_BYTES: usize = 16 << 20;
/// How often the supervising thread checks the stop flag and the duration.
const SUPERVISE_EVERY: Duration = Duration::from_millis(10);

/// Why the relay could not start.
#[derive(Debug)]
pub enum OpenError {
    /// A mistake in the config (including an interface that does not exist here).
    Config(ConfigError),
    /// The system refused (no CAP_NET_RAW, ...): what was being done and the OS error.
    Os(String, io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Config(e) => write!(f, "{e}"),
            OpenError::Os(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<ConfigError> for OpenError {
    fn from(e: ConfigError) -> OpenError {
        OpenError::Config(e)
    }
}

struct OpenPipe {
    name: String,
    a_to_b: Direction,
    b_to_a: Direction,
}

/// A relay with every socket open and bound: frames are already being queued by the kernel for
/// it, and [`Relay::run`] starts forwarding them.
pub struct Relay {
    pipes: Vec<OpenPipe>,
    duration_ns: Option<u64>,
    start_ns: Option<u64>,
    keep_cpus_awake: bool,
    workers: usize,
}

fn open_socket(
    what: &str,
    field: &str,
    ifname: &str,
    ifindex: u32,
    f: impl Fn(u32, BufferSizes) -> io::Result<PacketSocket>,
) -> Result<PacketSocket, OpenError> {
    let sizes = BufferSizes { rcvbuf_bytes: RCVBUF_BYTES, sndbuf_bytes: SNDBUF_BYTES };
    f(ifindex, sizes).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EPERM) { " (AF_PACKET needs root or CAP_NET_RAW)" } else { "" };
        OpenError::Os(format!("{field}: opening the {what} socket on '{ifname}'{hint}"), e)
    })
}

impl Relay {
    /// Resolve every interface and open its sockets.
    ///
    /// # Errors
    /// [`OpenError::Config`] naming the field of an interface that does not exist in this
    /// namespace; [`OpenError::Os`] when a socket cannot be opened.
    pub fn open(config: &Config) -> Result<Relay, OpenError> {
        let tuning = Tuning {
            spin_ns: config.spin_ns,
            rt_priority: config.rt_priority,
            min_wake_interval_ns: config.min_wake_interval_ns,
            ..Tuning::default()
        };
        sys::raise_open_files_limit();
        let mut indices = Vec::with_capacity(config.pipes.len());
        for (i, p) in config.pipes.iter().enumerate() {
            let mut pair = [0u32; 2];
            for (slot, (side, name)) in pair.iter_mut().zip([("a", &p.a), ("b", &p.b)]) {
                *slot = sys::if_index(name)
                    .ok_or_else(|| ConfigError::new(format!("pipes[{i}].{side}"), format!("no interface named '{name}' in this namespace")))?;
            }
            indices.push(pair);
        }
        let mut pipes = Vec::with_capacity(config.pipes.len());
        for (i, (p, [ia, ib])) in config.pipes.iter().zip(indices).enumerate() {
            let (fa, fb) = (format!("pipes[{i}].a"), format!("pipes[{i}].b"));
            let rx_a = open_socket("receiving", &fa, &p.a, ia, PacketSocket::receiver)?;
            let tx_a = open_socket("sending", &fa, &p.a, ia, PacketSocket::sender)?;
            let rx_b = open_socket("receiving", &fb, &p.b, ib, PacketSocket::receiver)?;
            let tx_b = open_socket("sending", &fb, &p.b, ib, PacketSocket::sender)?;
            let link = |dir: u8, d: &DirectionConfig| {
                let streams = d.streams(config.seed, i, dir);
                let link = EmulatedPath::holding(d.link_params(), &d.queue, streams.queue.clone(), Loss::new(d.loss, streams.loss.clone()))
                    .with_impairments(d.impairments(&streams));
                match &d.trace {
                    Some(trace) => link.with_trace(trace.clone()),
                    None => link,
                }
            };
            let sampler = || config.sampling.map(|(origin_ns, interval_ns)| QueueSampler::new(origin_ns, interval_ns));
            let capture = |side: &str, d: &DirectionConfig| {
                d.pcap.as_ref().map(|c| LinkCapture::create(&c.path, c.max_bytes).map_err(|e| OpenError::Os(format!("pipes[{i}].{side}.pcap: creating '{}'", c.path.display()), e))).transpose()
            };
            pipes.push(OpenPipe {
                name: p.name.clone(),
                a_to_b: Direction::new(rx_a, tx_b, link(0, &p.a_to_b), p.a_to_b.changes.clone(), config.max_queue_frames, sampler(), tuning)
                    .with_capture(capture("a_to_b", &p.a_to_b)?),
                b_to_a: Direction::new(rx_b, tx_a, link(1, &p.b_to_a), p.b_to_a.changes.clone(), config.max_queue_frames, sampler(), tuning)
                    .with_capture(capture("b_to_a", &p.b_to_a)?),
            });
        }
        let workers = worker::default_workers();
        Ok(Relay { pipes, duration_ns: config.duration_ns, start_ns: config.start_ns, keep_cpus_awake: config.keep_cpus_awake, workers })
    }

    /// Serve the directions with `workers` threads (at least 1; never more than there are
    /// directions) instead of the default, one per CPU ([`worker::default_workers`]).
    #[must_use]
    pub fn with_workers(mut self, workers: usize) -> Relay {
        self.workers = workers.max(1);
        self
    }

    /// How many worker threads [`Relay::run`] starts.
    pub fn workers(&self) -> usize {
        self.workers.min(2 * self.pipes.len()).max(1)
    }

    /// Forward frames until `stop` is set or the config's `duration_ns` has passed, then return
    /// what was counted. The directions are served by [`Relay::workers`] threads; the calling
    /// thread supervises.
    ///
    /// The links' scheduled changes count from the instant in `start` (CLOCK_MONOTONIC ns): the
    /// config's `start_ns` if it has one (stored there now), else whatever another thread stores
    /// there while the relay runs (0 = not known yet: no change applies before it is).
    ///
    /// # Errors
    /// The first unexpected OS error of any direction (the others are stopped first).
    pub fn run(self, stop: &AtomicBool, start_ns: &AtomicU64) -> io::Result<RelayStats> {
        if let Some(s) = self.start_ns {
            start_ns.store(s, Ordering::Relaxed);
        }
        // Held for the whole run and released on return (best effort: without it the relay
        // still works, with a longer tail of wake-up latency, and the stats say so).
        let cpu_latency = if self.keep_cpus_awake { CpuLatencyHold::request_zero().ok() } else { None };
        let start = Instant::now();
        let deadline = self.duration_ns.map(|d| start + Duration::from_nanos(d));
        let halt = AtomicBool::new(false);
        let failed = AtomicBool::new(false);
        let workers = self.workers();
        let mut names = Vec::with_capacity(self.pipes.len());
        let mut dealt: Vec<Vec<(usize, Direction)>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, p) in self.pipes.into_iter().enumerate() {
            names.push(p.name);
            for (d, dir) in [p.a_to_b, p.b_to_a].into_iter().enumerate() {
                let index = 2 * i + d;
                dealt[worker::worker_of(index, workers)].push((index, dir));
            }
        }
        let results = std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for (w, dirs) in dealt.into_iter().enumerate() {
                let (halt, failed) = (&halt, &failed);
                let h = std::thread::Builder::new().name(format!("relay-w{w}")).spawn_scoped(scope, move || {
                    let r = worker::run(dirs, halt, start_ns);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                });
                if h.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                handles.push(h);
            }
            loop {
                if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let nap = deadline.map_or(SUPERVISE_EVERY, |d| d.saturating_duration_since(Instant::now()).min(SUPERVISE_EVERY));
                std::thread::sleep(nap);
            }
            halt.store(true, Ordering::Relaxed);
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h.join().unwrap_or_else(|_| Err(io::Error::other("a relay thread panicked"))),
                    Err(e) => Err(e),
                })
                .collect::<Vec<_>>()
        });
        let wall_s = start.elapsed().as_secs_f64();
        let mut by_index: Vec<Option<crate::stats::DirectionStats>> = (0..2 * names.len()).map(|_| None).collect();
        for r in results {
            for (index, stats) in r? {
                by_index[index] = Some(stats);
            }
        }
        let mut by_index = by_index.into_iter().map(|s| s.expect("one result per direction"));
        let mut pipes = Vec::with_capacity(names.len());
        for name in names {
            let a_to_b = by_index.next().expect("one result per direction");
            let b_to_a = by_index.next().expect("one result per direction");
            pipes.push(PipeStats { name, a_to_b, b_to_a });
        }
        Ok(RelayStats { pipes, wall_s, cpu_latency_held: cpu_latency.is_some() })
    }
}
