//! `ccarena._engine.udp_send_file` and `ccarena._engine.UdpReceiver`: the file transfer over
//! ccarena's transport on UDP (crate `ccarena-udp`), for `ccarena send` and `ccarena recv`;
//! `udp_stream_send` and `UdpSink`: a scenario flow's two ends for the `udp` backend
//! (`python/ccarena/backends/udp/endpoint.py`), returning what the kernel backend's traffic
//! generator returns for a TCP flow.
//!
//! Both run with the GIL released and take it back about every 100 ms to call the Python
//! callback and check for signals, so Ctrl-C stops them (the receiver saves what arrived first)
//! and the KeyboardInterrupt is re-raised. Every failure a user can cause is a `TransferError`
//! whose message is one line naming the problem.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use ccarena_transport::rtt::RtoRule;
use ccarena_udp::scenario_send::{SenderSample, StreamTotals};
use ccarena_udp::wire::{EcnFeedback, QuicOffer};
use ccarena_udp::{
    send_file, send_stream, Event, Receiver, ReceiverOptions, SendOptions, Sink, SinkOptions, StreamOptions, TransferRecord,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(
    _engine,
    TransferError,
    PyException,
    "A file transfer over UDP failed for a reason the user can act on; the message is one line."
);

/// Run the Python side of a callback with the GIL: signals first, then `call`. A Python error
/// is kept in `err` and stops the transfer (`false`).
fn with_python(err: &mut Option<PyErr>, call: impl FnOnce(Python<'_>) -> PyResult<()>) -> bool {
    if err.is_some() {
        return false;
    }
    Python::attach(|py| match py.check_signals().and_then(|()| call(py)) {
        Ok(()) => true,
        Err(e) => {
            *err = Some(e);
            false
        }
    })
}

fn record_dict<'py>(py: Python<'py>, r: &TransferRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &r.name)?;
    d.set_item("peer", &r.peer)?;
    d.set_item("flavor", &r.flavor)?;
    d.set_item("recovery", &r.recovery)?;
    d.set_item("file_bytes", r.file_bytes)?;
    d.set_item("resumed_bytes", r.resumed_bytes)?;
    d.set_item("stream_bytes", r.stream_bytes)?;
    d.set_item("duration_s", r.duration_s)?;
    d.set_item("goodput_bps", r.goodput_bps)?;
    d.set_item("bytes_sent", r.bytes_sent)?;
    d.set_item("bytes_retransmitted", r.bytes_retransmitted)?;
    d.set_item("segments_sent", r.segments_sent)?;
    d.set_item("retransmissions", r.retransmissions)?;
    d.set_item("rto_count", r.rto_count)?;
    d.set_item("fast_recoveries", r.fast_recoveries)?;
    let rtt = PyDict::new(py);
    rtt.set_item("samples", r.rtt.samples)?;
    rtt.set_item("min_ms", r.rtt.min_ms)?;
    rtt.set_item("p50_ms", r.rtt.p50_ms)?;
    rtt.set_item("p90_ms", r.rtt.p90_ms)?;
    rtt.set_item("p99_ms", r.rtt.p99_ms)?;
    rtt.set_item("max_ms", r.rtt.max_ms)?;
    d.set_item("rtt", rtt)?;
    d.set_item("cwnd_samples", r.cwnd_samples.clone())?;
    d.set_item("sha256", &r.sha256)?;
    // NaN (unmeasurable) becomes None: JSON has no NaN.
    let num = |x: f64| x.is_finite().then_some(x);
    d.set_item("sender_cpu_s", num(r.sender_cpu_s))?;
    d.set_item("cpu_mhz", num(r.cpu_mhz))?;
    d.set_item("cpu_percent", num(r.cpu_percent))?;
    d.set_item("mhz_per_mbps", num(r.mhz_per_mbps))?;
    Ok(d)
}

/// Send the file at `path` to the receiver at `addr` (`HOST:PORT`); returns the transfer record
/// as a dict (goodput_bps, retransmissions, rtt percentiles, cwnd_samples, …).
///
/// `progress(acked_bytes, stream_bytes, resumed_bytes, file_bytes, elapsed_s)` is called about
/// every 100 ms. `max_rate_bps` caps the sending rate (payload bits per second; `None`: no cap).
/// Raises TransferError (one line) for a missing file, a bad address, no receiver,
/// a foreign wire version, a refusal, a silent peer or a failed verification; an exception in
/// `progress` or a KeyboardInterrupt stops the transfer (the receiver keeps what arrived) and is
/// re-raised.
#[pyfunction]
#[pyo3(signature = (path, addr, flavor="cubic", recovery=None, progress=None, name=None, handshake_timeout_s=5.0, idle_timeout_s=10.0, max_rate_bps=None))]
#[allow(clippy::too_many_arguments)]
pub fn udp_send_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    addr: &str,
    flavor: &str,
    recovery: Option<String>,
    progress: Option<Py<PyAny>>,
    name: Option<String>,
    handshake_timeout_s: f64,
    idle_timeout_s: f64,
    max_rate_bps: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = SendOptions {
        flavor: flavor.to_string(),
        recovery,
        name,
        handshake_timeout: Duration::from_secs_f64(handshake_timeout_s.clamp(0.1, 3600.0)),
        idle_timeout: Duration::from_secs_f64(idle_timeout_s.clamp(1.0, 3600.0)),
        max_rate_bps: max_rate_bps.filter(|r| *r > 0),
        ..SendOptions::default()
    };
    let mut err: Option<PyErr> = None;
    let outcome = py.detach(|| {
        send_file(&path, addr, &opts, &mut |p| {
            with_python(&mut err, |py| {
                if let Some(cb) = &progress {
                    cb.call1(py, (p.acked_bytes, p.stream_bytes, p.resumed_bytes, p.file_bytes, p.elapsed_s))?;
                }
                Ok(())
            })
        })
    });
    if let Some(e) = err {
        return Err(e);
    }
    match outcome {
        Ok(r) => record_dict(py, &r),
        Err(e) => Err(TransferError::new_err(e.to_string())),
    }
}

/// A bound receiving service: `UdpReceiver(bind, dir, force=False, ...)`, then `serve(...)`.
#[pyclass(name = "UdpReceiver", module = "ccarena._engine")]
pub struct PyUdpReceiver {
    inner: Mutex<Receiver>,
}

#[pymethods]
impl PyUdpReceiver {
    /// Bind `bind` (`HOST:PORT`) and serve into `dir`. Raises TransferError for a port in use, a
    /// bad address or a directory that is missing or not writable.
    #[new]
    #[pyo3(signature = (bind, dir, force=false, max_connections=64, rcvbuf_bytes=16777216, idle_timeout_s=10.0))]
    fn new(bind: &str, dir: PathBuf, force: bool, max_connections: usize, rcvbuf_bytes: u64, idle_timeout_s: f64) -> PyResult<Self> {
        let opts = ReceiverOptions {
            force,
            max_connections: max_connections.max(1),
            rcvbuf_bytes: rcvbuf_bytes.max(64 * 1024),
            idle_timeout: Duration::from_secs_f64(idle_timeout_s.clamp(1.0, 3600.0)),
            ..ReceiverOptions::default()
        };
        let rx = Receiver::bind(bind, &dir, opts).map_err(|e| TransferError::new_err(e.to_string()))?;
        Ok(PyUdpReceiver { inner: Mutex::new(rx) })
    }

    /// The bound address, `HOST:PORT`.
    #[getter]
    fn local_addr(&self) -> String {
        self.inner.lock().expect("not poisoned").local_addr().to_string()
    }

    /// The directory files go into (absolute).
    #[getter]
    fn dir(&self) -> String {
        self.inner.lock().expect("not poisoned").dir().display().to_string()
    }

    /// Counters of dropped and handled datagrams and transfers, as a dict.
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.lock().expect("not poisoned").counters();
        let d = PyDict::new(py);
        for (k, v) in c.named() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Serve until Ctrl-C or, with `once`, until the first transfer ends. `on_event(dict)` gets
    /// `{"event": "started"|"finished"|"failed", ...}`, and `{"event": "tick"}` about every 100 ms. A KeyboardInterrupt or an exception in
    /// `on_event` stops the service after saving every partial transfer, and is re-raised.
    #[pyo3(signature = (once=false, on_event=None))]
    fn serve(&self, py: Python<'_>, once: bool, on_event: Option<Py<PyAny>>) -> PyResult<()> {
        let mut guard = self.inner.lock().expect("not poisoned");
        let rx: &mut Receiver = &mut guard;
        let mut err: Option<PyErr> = None;
        let outcome = py.detach(|| {
            rx.serve(once, &mut |ev: &Event<'_>| {
                with_python(&mut err, |py| {
                    let Some(cb) = &on_event else { return Ok(()) };
                    let d = PyDict::new(py);
                    match ev {
                        Event::Tick => d.set_item("event", "tick")?,
                        Event::Started { name, peer, file_bytes, resumed_bytes } => {
                            d.set_item("event", "started")?;
                            d.set_item("name", *name)?;
                            d.set_item("peer", peer.to_string())?;
                            d.set_item("file_bytes", *file_bytes)?;
                            d.set_item("resumed_bytes", *resumed_bytes)?;
                        }
                        Event::Finished(r) => {
                            d.set_item("event", "finished")?;
                            d.set_item("name", &r.name)?;
                            d.set_item("peer", &r.peer)?;
                            d.set_item("path", &r.path)?;
                            d.set_item("file_bytes", r.file_bytes)?;
                            d.set_item("resumed_bytes", r.resumed_bytes)?;
                            d.set_item("stream_bytes", r.stream_bytes)?;
                            d.set_item("duration_s", r.duration_s)?;
                            d.set_item("goodput_bps", r.goodput_bps)?;
                            d.set_item("duplicate_bytes", r.duplicate_bytes)?;
                            d.set_item("out_of_order_segments", r.out_of_order_segments)?;
                            d.set_item("sha256", &r.sha256)?;
                        }
                        Event::Failed { name, peer, reason } => {
                            d.set_item("event", "failed")?;
                            d.set_item("name", *name)?;
                            d.set_item("peer", peer.to_string())?;
                            d.set_item("reason", *reason)?;
                        }
                    }
                    cb.call1(py, (d,))?;
                    Ok(())
                })
            })
        });
        if let Some(e) = err {
            return Err(e);
        }
        outcome.map_err(|e| TransferError::new_err(e.to_string()))
    }
}

/// `config[key]` if present and not None.
fn opt<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(config: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match config.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract().map_err(Into::into)?)),
        _ => Ok(None),
    }
}

/// `config[key]`, required.
fn req<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(config: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    opt(config, key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))
}

fn secs(v: Option<f64>, default: Duration) -> Duration {
    v.map_or(default, |s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)))
}

fn totals_dict<'py>(py: Python<'py>, t: &StreamTotals) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes_sent", t.bytes_sent)?;
    d.set_item("bytes_retrans", t.bytes_retrans)?;
    d.set_item("bytes_acked", t.bytes_acked)?;
    d.set_item("data_segs_out", t.data_segs_out)?;
    d.set_item("total_retrans", t.total_retrans)?;
    d.set_item("total_rto", t.total_rto)?;
    d.set_item("fast_recoveries", t.fast_recoveries)?;
    d.set_item("spurious_rtos", t.spurious_rtos)?;
    d.set_item("min_rtt", t.min_rtt_us)?;
    d.set_item("offered_bytes", t.offered_bytes)?;
    d.set_item("ecn_reductions", t.ecn_reductions)?;
    d.set_item("accecn_ce_packets", t.accecn_ce_packets)?;
    d.set_item("accecn_ce_bytes", t.accecn_ce_bytes)?;
    Ok(d)
}

fn sample_dict<'py>(py: Python<'py>, s: &SenderSample) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_s", s.time_s)?;
    d.set_item("sent_bytes", s.sent_bytes)?;
    d.set_item("acked_bytes", s.acked_bytes)?;
    d.set_item("offered_bytes", s.offered_bytes)?;
    d.set_item("cwnd_bytes", s.cwnd_bytes)?;
    d.set_item("ssthresh_bytes", s.ssthresh_bytes)?;
    d.set_item("srtt_s", s.srtt_s)?;
    d.set_item("rttvar_s", s.rttvar_s)?;
    d.set_item("rto_s", s.rto_s)?;
    d.set_item("inflight_bytes", s.inflight_bytes)?;
    d.set_item("pacing_rate_bps", s.pacing_rate_bps)?;
    d.set_item("retransmits", s.retransmits)?;
    d.set_item("ca_state", s.ca_state)?;
    Ok(d)
}

/// `config["quic"]`: a QUIC flow's settings (`max_ack_delay_ns`, `ack_eliciting_threshold`,
/// `reordering_threshold`, `initial_rtt_ns`, `max_stream_data_bytes` (None: unlimited),
/// `pacing`; missing: RFC 9000's and RFC 9002's defaults), or None for a TCP-like flow.
fn quic_offer(config: &Bound<'_, PyDict>) -> PyResult<Option<QuicOffer>> {
    let Some(q) = opt::<Bound<'_, PyDict>>(config, "quic")? else { return Ok(None) };
    Ok(Some(QuicOffer {
        ack_eliciting_threshold: opt(&q, "ack_eliciting_threshold")?.unwrap_or(2),
        reordering_threshold: opt(&q, "reordering_threshold")?.unwrap_or(1),
        max_ack_delay_ns: opt(&q, "max_ack_delay_ns")?.unwrap_or(25_000_000),
        initial_rtt_ns: opt(&q, "initial_rtt_ns")?.unwrap_or(333_000_000),
        max_stream_data_bytes: opt(&q, "max_stream_data_bytes")?.unwrap_or(u64::MAX),
        pacing: opt(&q, "pacing")?.unwrap_or(true),
    }))
}

/// The RTO rule named `name` (`"rfc6298"`, the default, or `"linux"`: `ccarena_transport::rtt`).
fn rto_rule(name: Option<String>) -> PyResult<RtoRule> {
    name.map_or(Ok(RtoRule::default()), |n| n.parse().map_err(|m| TransferError::new_err(format!("rto_rule: {m}"))))
}

/// Send one scenario flow from `bind` (an address of this host) to the sink at `peer`
/// (`HOST:PORT`) and return what the kernel backend's generator returns for a TCP sender:
/// `{"ok": True, "samples": [...], "at_end": {...}, "drained": {...}, "offered_bytes",
/// "completion_time_s", "mss_bytes", "recovery"}` (totals named as TCP_INFO names them;
/// `min_rtt` in µs).
///
/// `config` holds the flow (`flavor`, `params`, `recovery`, `mss_bytes`, `initial_cwnd_packets`,
/// `min_rto_ns`, `initial_rto_ns`, `max_rto_ns`, `clock_granularity_ns`, `dupthresh`,
/// `sndbuf_bytes`, `bytes`, `ecn`: the flow's ECN, whose codepoint and feedback follow from
/// the flavor, `ccarena_udp::scenario_send::stream_ecn_feedback`; `quic`: run it as QUIC with
/// these settings, [`quic_offer`]; `rto_rule`: `"rfc6298"` or `"linux"`; `handshake_rtt`: the
/// handshake's round trip as the first RTT sample) and the run's times (`t0_mono_ns`, `start_ns`, `stop_ns`,
/// `duration_ns`, `interval_ns`); missing optional keys take Linux's values. Raises
/// TransferError (one line) for a bad flavor or setting, no sink, a refusal or a silent sink; a
/// KeyboardInterrupt (or other exception from a signal handler) stops the flow and is re-raised.
#[pyfunction]
pub fn udp_stream_send<'py>(py: Python<'py>, bind: Option<String>, peer: &str, config: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let d = StreamOptions::default();
    let params: Vec<(String, f64)> = opt::<std::collections::HashMap<String, f64>>(config, "params")?
        .map(|m| m.into_iter().collect())
        .unwrap_or_default();
    let opts = StreamOptions {
        flavor: req(config, "flavor")?,
        params,
        recovery: opt(config, "recovery")?,
        mss_bytes: opt(config, "mss_bytes")?.unwrap_or(d.mss_bytes),
        initial_cwnd_packets: opt(config, "initial_cwnd_packets")?.unwrap_or(d.initial_cwnd_packets),
        min_rto_ns: opt(config, "min_rto_ns")?.unwrap_or(d.min_rto_ns),
        initial_rto_ns: opt(config, "initial_rto_ns")?.unwrap_or(d.initial_rto_ns),
        max_rto_ns: opt(config, "max_rto_ns")?.unwrap_or(d.max_rto_ns),
        clock_granularity_ns: opt(config, "clock_granularity_ns")?.unwrap_or(d.clock_granularity_ns),
        dupthresh: opt(config, "dupthresh")?.unwrap_or(d.dupthresh),
        sndbuf_bytes: opt(config, "sndbuf_bytes")?,
        bytes: opt(config, "bytes")?,
        t0_mono_ns: req(config, "t0_mono_ns")?,
        start_ns: opt(config, "start_ns")?.unwrap_or(0),
        stop_ns: opt(config, "stop_ns")?,
        duration_ns: req(config, "duration_ns")?,
        interval_ns: req(config, "interval_ns")?,
        handshake_timeout: secs(opt(config, "handshake_timeout_s")?, d.handshake_timeout),
        idle_timeout: secs(opt(config, "idle_timeout_s")?, d.idle_timeout),
        drain: secs(opt(config, "drain_s")?, d.drain),
        pacing_burst: d.pacing_burst,
        ecn: opt(config, "ecn")?.unwrap_or(false),
        quic: quic_offer(config)?,
        rto_rule: rto_rule(opt(config, "rto_rule")?)?,
        handshake_rtt: opt(config, "handshake_rtt")?.unwrap_or(false),
    };
    let mut err: Option<PyErr> = None;
    let outcome = py.detach(|| send_stream(bind.as_deref(), peer, &opts, &mut || with_python(&mut err, |_| Ok(()))));
    if let Some(e) = err {
        return Err(e);
    }
    let r = outcome.map_err(|e| TransferError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    out.set_item("ok", true)?;
    let samples = r.samples.iter().map(|s| sample_dict(py, s)).collect::<PyResult<Vec<_>>>()?;
    out.set_item("samples", samples)?;
    out.set_item("at_end", totals_dict(py, &r.at_end)?)?;
    out.set_item("drained", totals_dict(py, &r.drained)?)?;
    out.set_item("offered_bytes", r.at_end.offered_bytes)?;
    out.set_item("completion_time_s", r.completion_time_s)?;
    out.set_item("mss_bytes", r.mss_bytes)?;
    out.set_item("recovery", r.recovery)?;
    Ok(out)
}

/// A scenario flow's receiver: `UdpSink(bind, config)` binds `bind` (`HOST:PORT`), then `run()`
/// counts what arrives until the run's end (and the sender's close) and returns what the kernel
/// backend's generator returns for a TCP receiver: `{"ok": True, "samples": [{"time_s",
/// "delivered_bytes"}], "received_bytes", "at_end_bytes", "drained": {"data_segs_in"},
/// "duplicate_bytes", "out_of_order_segments", "connected", "counters", "ecn": {"feedback"
/// (None, "classic", "dctcp" or "accecn": what the sender asked for), "not_ect_packets",
/// "ect1_packets", "ect0_packets", "ce_packets" (DATA by the IP ECN field it arrived with),
/// "ce_bytes"}}`.
///
/// `config`: `t0_mono_ns`, `start_ns`, `duration_ns`, `interval_ns`, and the flow's receiver
/// settings `rwnd_bytes`, `delayed_ack_ns`, `ack_every_segments`, `dsack`, `quickack_segments`
/// and `quickack_idle_ns` (Linux's quick-ACK mode: `ccarena_udp::scenario_sink::SinkOptions`;
/// missing: Linux's, without quick-ACK).
#[pyclass(name = "UdpSink", module = "ccarena._engine")]
pub struct PyUdpSink {
    inner: Mutex<Sink>,
}

#[pymethods]
impl PyUdpSink {
    /// Bind; raises TransferError for a port in use, a bad address or a bad setting.
    #[new]
    fn new(bind: &str, config: &Bound<'_, PyDict>) -> PyResult<Self> {
        let d = SinkOptions::default();
        let opts = SinkOptions {
            rwnd_bytes: opt(config, "rwnd_bytes")?,
            delayed_ack_ns: opt(config, "delayed_ack_ns")?.unwrap_or(d.delayed_ack_ns),
            ack_every_segments: opt(config, "ack_every_segments")?.unwrap_or(d.ack_every_segments),
            dsack: opt(config, "dsack")?.unwrap_or(d.dsack),
            quickack_segments: opt(config, "quickack_segments")?.unwrap_or(d.quickack_segments),
            quickack_idle_ns: opt(config, "quickack_idle_ns")?.unwrap_or(d.quickack_idle_ns),
            t0_mono_ns: req(config, "t0_mono_ns")?,
            start_ns: opt(config, "start_ns")?.unwrap_or(0),
            duration_ns: req(config, "duration_ns")?,
            interval_ns: req(config, "interval_ns")?,
            grace: secs(opt(config, "grace_s")?, d.grace),
            idle_timeout: secs(opt(config, "idle_timeout_s")?, d.idle_timeout),
            ..d
        };
        let sink = Sink::bind(bind, opts).map_err(|e| TransferError::new_err(e.to_string()))?;
        Ok(PyUdpSink { inner: Mutex::new(sink) })
    }

    /// The bound address, `HOST:PORT`.
    #[getter]
    fn local_addr(&self) -> String {
        self.inner.lock().expect("not poisoned").local_addr().to_string()
    }

    /// Count until the end (see the class); a KeyboardInterrupt stops it and is re-raised.
    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = self.inner.lock().expect("not poisoned");
        let sink: &mut Sink = &mut guard;
        let mut err: Option<PyErr> = None;
        let outcome = py.detach(|| sink.run(&mut || with_python(&mut err, |_| Ok(()))));
        if let Some(e) = err {
            return Err(e);
        }
        let r = outcome.map_err(|e| TransferError::new_err(e.to_string()))?;
        let out = PyDict::new(py);
        out.set_item("ok", true)?;
        let samples = r
            .samples
            .iter()
            .map(|(t, b)| {
                let s = PyDict::new(py);
                s.set_item("time_s", t)?;
                s.set_item("delivered_bytes", b)?;
                Ok(s)
            })
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("samples", samples)?;
        out.set_item("received_bytes", r.received_bytes)?;
        out.set_item("at_end_bytes", r.at_end_bytes)?;
        let drained = PyDict::new(py);
        drained.set_item("data_segs_in", r.data_segs_in)?;
        out.set_item("drained", drained)?;
        out.set_item("duplicate_bytes", r.duplicate_bytes)?;
        out.set_item("out_of_order_segments", r.out_of_order_segments)?;
        out.set_item("connected", r.connected)?;
        out.set_item("closed_by_sender", r.closed_by_sender)?;
        let counters = PyDict::new(py);
        // A sink receives streams, never files: the file-transfer counters are left out.
        for (k, v) in r.counters.named().into_iter().filter(|(k, _)| !matches!(*k, "completed" | "failed")) {
            counters.set_item(k, v)?;
        }
        out.set_item("counters", counters)?;
        let ecn = PyDict::new(py);
        let feedback = r.ecn_feedback.map(|f| match f {
            EcnFeedback::Classic => "classic",
            EcnFeedback::Dctcp => "dctcp",
            EcnFeedback::AccEcn => "accecn",
        });
        ecn.set_item("feedback", feedback)?;
        for (name, n) in ["not_ect_packets", "ect1_packets", "ect0_packets", "ce_packets"].into_iter().zip(r.packets_by_ecn) {
            ecn.set_item(name, n)?;
        }
        ecn.set_item("ce_bytes", r.ce_bytes)?;
        out.set_item("ecn", ecn)?;
        Ok(out)
    }
}

/// Add the transfer's functions, class and exception to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(udp_stream_send, m)?)?;
    m.add_class::<PyUdpSink>()?;
    m.add_function(wrap_pyfunction!(udp_send_file, m)?)?;
    m.add_class::<PyUdpReceiver>()?;
    m.add("TransferError", m.py().get_type::<TransferError>())?;
    Ok(())
}
