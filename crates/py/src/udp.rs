//! `ccarena._engine.udp_send_file` and `ccarena._engine.UdpReceiver`: the file transfer over
//! ccarena's transport on UDP (crate `ccarena-udp`), for `ccarena send` and `ccarena recv`.
//!
//! Both run with the GIL released and take it back about every 100 ms to call the Python
//! callback and check for signals, so Ctrl-C stops them (the receiver saves what arrived first)
//! and the KeyboardInterrupt is re-raised. Every failure a user can cause is a `TransferError`
//! whose message is one line naming the problem.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use ccarena_udp::{send_file, Event, Receiver, ReceiverOptions, SendOptions, TransferRecord};
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
        for (k, v) in [
            ("datagrams", c.datagrams),
            ("malformed", c.malformed),
            ("foreign_version", c.foreign_version),
            ("unknown_connection", c.unknown_connection),
            ("bad_cookie", c.bad_cookie),
            ("replayed", c.replayed),
            ("rate_limited", c.rate_limited),
            ("connection_limit", c.connection_limit),
            ("out_of_bounds", c.out_of_bounds),
            ("rejected_offers", c.rejected_offers),
            ("completed", c.completed),
            ("failed", c.failed),
        ] {
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

/// Add the transfer's functions, class and exception to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(udp_send_file, m)?)?;
    m.add_class::<PyUdpReceiver>()?;
    m.add("TransferError", m.py().get_type::<TransferError>())?;
    Ok(())
}
