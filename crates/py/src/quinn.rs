//! `ccarena._engine.quinn_send`, `quinn_sink` and `quinn_certificate`: a flow's two ends over
//! quinn, a production QUIC stack (crate `ccarena-quinn`), with ccarena's controller inside it
//! (`"impl": "quinn"`) or quinn's own (`"impl": "quinn-native"`). Both ends run with the GIL
//! released and return their record as a dict.
//!
//! A run generates one certificate (`quinn_certificate()`); the sink serves it, the sender
//! trusts only it. A bad option is a `ValueError`, a failed connection a `ConnectionError`, a
//! socket failure an `OSError`; the message is one line.

use std::collections::HashMap;
use std::time::Duration;

use ccarena_quinn::driver::{send, sink, t0_from_monotonic_ns, DriverError, SendOptions, SinkOptions};
use ccarena_quinn::{QuicImpl, RttSummary, RunCertificate, SendRecord, SinkRecord};
use pyo3::exceptions::{PyConnectionError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// `options[key]` if present and not None.
fn opt<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match options.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract().map_err(Into::into)?)),
        _ => Ok(None),
    }
}

/// `options[key]`, required.
fn req<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    opt(options, key)?.ok_or_else(|| PyKeyError::new_err(key.to_string()))
}

fn secs(v: Option<f64>, default: Duration) -> Duration {
    v.map_or(default, |s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)))
}

fn py_err(e: DriverError) -> PyErr {
    match e {
        DriverError::Setup(s) => PyValueError::new_err(s),
        DriverError::Io(e) => PyOSError::new_err(format!("socket: {e}")),
        e @ (DriverError::Handshake(_) | DriverError::ConnectionLost(_)) => PyConnectionError::new_err(e.to_string()),
    }
}

/// NaN (no sample) becomes None: JSON has no NaN.
fn num(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn rtt_dict<'py>(py: Python<'py>, r: &RttSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("samples", r.samples)?;
    d.set_item("min_ms", num(r.min_ms))?;
    d.set_item("mean_ms", num(r.mean_ms))?;
    d.set_item("p50_ms", num(r.p50_ms))?;
    d.set_item("p95_ms", num(r.p95_ms))?;
    d.set_item("p99_ms", num(r.p99_ms))?;
    d.set_item("max_ms", num(r.max_ms))?;
    Ok(d)
}

/// Sets `d["samples"]` to a list with one dict per sample of `samples`, in order, each filled
/// by `fill` (which sets the sample's keys).
///
/// # Errors
/// The first error `fill` or a dict insertion returns.
fn set_samples<'py, S>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    samples: &[S],
    fill: impl Fn(&Bound<'py, PyDict>, &S) -> PyResult<()>,
) -> PyResult<()> {
    let list = samples
        .iter()
        .map(|s| {
            let x = PyDict::new(py);
            fill(&x, s)?;
            Ok(x)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("samples", list)
}

fn send_dict<'py>(py: Python<'py>, r: &SendRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ok", true)?;
    d.set_item("impl", r.implementation)?;
    d.set_item("controller", &r.controller)?;
    d.set_item("flavor", &r.flavor)?;
    d.set_item("peer", &r.peer)?;
    d.set_item("bytes_target", r.bytes_target)?;
    d.set_item("stream_bytes_written", r.stream_bytes_written)?;
    d.set_item("completed", r.completed)?;
    d.set_item("completion_time_s", r.completion_time_s)?;
    d.set_item("handshake_s", r.handshake_s)?;
    d.set_item("duration_s", r.duration_s)?;
    d.set_item("goodput_bps", r.goodput_bps)?;
    d.set_item("bytes_sent", r.bytes_sent)?;
    d.set_item("packets_sent", r.packets_sent)?;
    d.set_item("lost_packets", r.lost_packets)?;
    d.set_item("lost_bytes", r.lost_bytes)?;
    d.set_item("congestion_events", r.congestion_events)?;
    d.set_item("loss_events", r.loss_events)?;
    d.set_item("ecn_events", r.ecn_events)?;
    d.set_item("persistent_congestions", r.persistent_congestions)?;
    d.set_item("pto_count", r.pto_count)?;
    d.set_item("rtt", rtt_dict(py, &r.rtt)?)?;
    d.set_item("sender_cpu_s", num(r.sender_cpu_s))?;
    d.set_item("mtu_bytes", r.mtu)?;
    set_samples(py, &d, &r.samples, |x, s| {
        x.set_item("time_s", s.time_s)?;
        x.set_item("written_bytes", s.written_bytes)?;
        x.set_item("sent_bytes", s.sent_bytes)?;
        x.set_item("sent_packets", s.sent_packets)?;
        x.set_item("cwnd_bytes", s.cwnd_bytes)?;
        x.set_item("ssthresh_bytes", s.ssthresh_bytes)?;
        x.set_item("pacing_rate_bps", s.pacing_rate_bps)?;
        x.set_item("srtt_s", s.srtt_s)?;
        x.set_item("min_rtt_s", s.min_rtt_s)?;
        x.set_item("lost_packets", s.lost_packets)?;
        x.set_item("lost_bytes", s.lost_bytes)?;
        x.set_item("congestion_events", s.congestion_events)?;
        x.set_item("mtu_bytes", s.mtu)
    })?;
    Ok(d)
}

fn sink_dict<'py>(py: Python<'py>, r: &SinkRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ok", true)?;
    d.set_item("local_addr", &r.local_addr)?;
    d.set_item("connected", r.connected)?;
    d.set_item("delivered_bytes", r.delivered_bytes)?;
    d.set_item("finished", r.finished)?;
    d.set_item("duration_s", r.duration_s)?;
    d.set_item("goodput_bps", r.goodput_bps)?;
    d.set_item("close_reason", &r.close_reason)?;
    d.set_item("bytes_received", r.bytes_received)?;
    d.set_item("datagrams_received", r.datagrams_received)?;
    d.set_item("cpu_s", num(r.cpu_s))?;
    set_samples(py, &d, &r.samples, |x, s| {
        x.set_item("time_s", s.time_s)?;
        x.set_item("delivered_bytes", s.delivered_bytes)
    })?;
    Ok(d)
}

/// A fresh self-signed certificate for one run: `{"cert_der": bytes, "key_der": bytes}` (the
/// key PKCS #8). Give both to `quinn_sink`, the certificate to `quinn_send`.
#[pyfunction]
pub fn quinn_certificate(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let c = RunCertificate::generate().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("cert_der", PyBytes::new(py, &c.cert_der))?;
    d.set_item("key_der", PyBytes::new(py, &c.key_der))?;
    Ok(d)
}

/// Send one stream over quinn and return the sender's record: `{"ok", "impl", "controller"
/// ("ccarena cubic in quinn" / "quinn's cubic"), "completed", "completion_time_s",
/// "goodput_bps", "bytes_sent", "packets_sent", "lost_packets", "lost_bytes",
/// "congestion_events", "persistent_congestions", "pto_count" (None: quinn keeps it private),
/// "rtt": {"samples", "min_ms", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"},
/// "sender_cpu_s", "samples": [{"time_s", "written_bytes", "sent_bytes", "cwnd_bytes",
/// "ssthresh_bytes", "pacing_rate_bps", "srtt_s", "min_rtt_s", "lost_packets", "lost_bytes",
/// "congestion_events", ...}], ...}`.
///
/// `options`: `peer` (`HOST:PORT`), `cert_der` (from `quinn_certificate`), `flavor`, and
/// optionally `impl` ("quinn", default, or "quinn-native"), `params` (dict), `bytes`,
/// `duration_ns` (stop time after time zero; `bytes` or `duration_ns` required), `interval_ns`
/// (100 ms), `t0_mono_ns` (time zero, `time.monotonic_ns()`; default: now), `bind`,
/// `initial_window_bytes`, `initial_mtu`, `handshake_timeout_s` (5).
#[pyfunction]
pub fn quinn_send<'py>(py: Python<'py>, options: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let which = QuicImpl::parse(&opt::<String>(options, "impl")?.unwrap_or_else(|| "quinn".into()))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let flavor: String = req(options, "flavor")?;
    let cert_der: Vec<u8> = req(options, "cert_der")?;
    let peer: String = req(options, "peer")?;
    let mut o = SendOptions::new(which, &flavor, &peer, &cert_der, 0);
    o.params = opt::<HashMap<String, f64>>(options, "params")?.map(|m| m.into_iter().collect()).unwrap_or_default();
    o.bytes = opt(options, "bytes")?;
    o.duration = opt::<u64>(options, "duration_ns")?.map(Duration::from_nanos);
    if let Some(i) = opt::<u64>(options, "interval_ns")? {
        o.interval = Duration::from_nanos(i);
    }
    o.t0 = opt::<u64>(options, "t0_mono_ns")?.map(t0_from_monotonic_ns);
    o.bind = opt(options, "bind")?;
    o.initial_window_bytes = opt(options, "initial_window_bytes")?;
    o.initial_mtu = opt(options, "initial_mtu")?;
    o.handshake_timeout = secs(opt(options, "handshake_timeout_s")?, o.handshake_timeout);
    let r = py.detach(|| send(&o)).map_err(py_err)?;
    send_dict(py, &r)
}

/// Receive one connection's stream over quinn and return the sink's record: `{"ok",
/// "local_addr", "connected", "delivered_bytes", "finished", "duration_s", "goodput_bps",
/// "close_reason", "bytes_received", "datagrams_received", "cpu_s", "samples": [{"time_s",
/// "delivered_bytes"}]}`.
///
/// `options`: `bind` (`HOST:PORT`, port 0 for any), `cert_der` and `key_der` (from
/// `quinn_certificate`), and optionally `on_bound` (called with the bound `"HOST:PORT"` before
/// the sink waits: start the sender from it), `interval_ns`, `t0_mono_ns`, `duration_ns` (end by
/// then), `handshake_timeout_s` (10), `idle_timeout_s` (5), `socket_buffer_bytes` (8 MiB; a
/// small one drops datagrams on loopback).
#[pyfunction]
pub fn quinn_sink<'py>(py: Python<'py>, options: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let cert = RunCertificate { cert_der: req(options, "cert_der")?, key_der: req(options, "key_der")? };
    let mut o = SinkOptions::new(&req::<String>(options, "bind")?, cert);
    if let Some(i) = opt::<u64>(options, "interval_ns")? {
        o.interval = Duration::from_nanos(i);
    }
    o.t0 = opt::<u64>(options, "t0_mono_ns")?.map(t0_from_monotonic_ns);
    o.max_duration = opt::<u64>(options, "duration_ns")?.map(Duration::from_nanos);
    o.handshake_timeout = secs(opt(options, "handshake_timeout_s")?, o.handshake_timeout);
    o.idle_timeout = secs(opt(options, "idle_timeout_s")?, o.idle_timeout);
    if let Some(b) = opt::<usize>(options, "socket_buffer_bytes")? {
        o.socket_buffer_bytes = b;
    }
    let on_bound: Option<Py<PyAny>> = opt(options, "on_bound")?;
    let mut cb_err: Option<PyErr> = None;
    let outcome = py.detach(|| {
        sink(&o, &mut |addr| {
            let Some(cb) = &on_bound else { return true };
            match Python::attach(|py| cb.call1(py, (addr.to_string(),))) {
                Ok(_) => true,
                Err(e) => {
                    cb_err = Some(e);
                    false
                }
            }
        })
    });
    if let Some(e) = cb_err {
        return Err(e);
    }
    let r = outcome.map_err(py_err)?;
    sink_dict(py, &r)
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(quinn_certificate, m)?)?;
    m.add_function(wrap_pyfunction!(quinn_send, m)?)?;
    m.add_function(wrap_pyfunction!(quinn_sink, m)?)?;
    Ok(())
}
