//! `ccarena._engine.relay_run`: the link relay (link emulator) of the kernel backend, run from Python.
//!
//! Meant to run in a process of its own (`python -m ccarena.backends.kernel.relay_main`), inside the relay's
//! network namespace: it installs SIGTERM/SIGINT handlers and the parent-death signal for as long
//! as it runs, and restores them when it returns.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use ccarena_relay::{Config, OpenError, ProcessGuard, Relay};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::errors::EngineError;

/// The start instant of the running relay's scheduled link changes (CLOCK_MONOTONIC ns, 0 = not
/// known yet). One relay runs per process, like its signal handlers ([`ProcessGuard`]).
static START_NS: AtomicU64 = AtomicU64::new(0);

/// Tell the running relay (another thread of this process, inside `relay_run`) the instant its
/// links' scheduled changes count from, CLOCK_MONOTONIC ns (`time.monotonic_ns()`).
#[pyfunction]
pub fn relay_set_start(start_ns: u64) {
    START_NS.store(start_ns, Ordering::Relaxed);
}

/// Run the relay described by `config_json` until SIGTERM/SIGINT, the parent's death or the
/// config's `duration_ns`; return the stats JSON.
///
/// Every socket is open and bound before `on_ready()` is called (with no arguments), so traffic
/// sent after it is relayed. `workers`: how many threads serve the links (default: one per CPU;
/// never more than there are link directions). Raises ValueError("field: message") for a bad config or a missing
/// interface, OSError when a socket cannot be opened (not root) or forwarding fails.
#[pyfunction]
#[pyo3(signature = (config_json, on_ready=None, workers=None))]
pub fn relay_run(py: Python<'_>, config_json: &str, on_ready: Option<Bound<'_, PyAny>>, workers: Option<usize>) -> PyResult<String> {
    // First, so a SIGTERM that arrives while sockets are opened is not lost.
    let guard = ProcessGuard::install().map_err(|e| PyOSError::new_err(format!("installing the relay's signal handlers: {e}")))?;
    let config = Config::from_json(config_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let relay = Relay::open(&config).map_err(|e| match e {
        OpenError::Config(c) => PyValueError::new_err(c.to_string()),
        os @ OpenError::Os(..) => PyOSError::new_err(os.to_string()),
    })?;
    let relay = match workers {
        Some(n) => relay.with_workers(n),
        None => relay,
    };
    if let Some(cb) = on_ready {
        cb.call0()?;
    }
    let stop = guard.stop_flag();
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(|| relay.run(stop, &START_NS))));
    drop(guard);
    match outcome {
        Ok(Ok(stats)) => {
            if let Some(text) = stats.anomalies() {
                eprintln!("relay: {text}");
            }
            Ok(stats.to_json())
        }
        Ok(Err(e)) => Err(PyOSError::new_err(format!("relay stopped on an OS error: {e}"))),
        Err(_) => Err(EngineError::new_err("relay fault: a relay thread panicked")),
    }
}
