//! `ccarena._engine`: the Python face of the simulator.
//!
//! One class, [`PySimulation`] (`Simulation` in Python), runs one fully resolved spec (JSON; see
//! `docs/engine-spec.md`) in chunks with `run_until(t_ns)`, or to its end in one call on a thread
//! of its own with `run_until_stoppable(t_ns)` (watched and stopped from another thread through
//! `progress_ns` and `request_stop()`), releasing the GIL while it runs, and
//! hands the result tables back as columns: `bytes` of little-endian f64 for numbers (zero-copy into
//! numpy with `numpy.frombuffer`) and `list[str]` for names. A spec error is a `ValueError` naming
//! the field; a Rust panic becomes `EngineError` carrying the seed and the simulated time, never a
//! crash of the interpreter.

mod errors;
mod quinn;
mod relay;
mod udp;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use ccarena_cc::{catalogue, SimTime};
use ccarena_sim::parallel::SplitRun;
use ccarena_sim::{Column, Simulation, Spec, Table};
use errors::{panic_message, BudgetExceeded, EngineError};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};


/// A simulation of one resolved spec.
///
/// The engine state sits behind a mutex because a Python object may be shared between threads;
/// a run is single-threaded, so the lock is never contended in practice.
#[pyclass(name = "Simulation", module = "ccarena._engine")]
pub struct PySimulation {
    inner: Mutex<State>,
    /// Set by `request_stop` from any thread, read between the steps of `run_until_stoppable`:
    /// outside the mutex, which a running call holds.
    stop: AtomicBool,
    /// The simulated clock, ns, as `run_until_stoppable` last published it (outside the mutex).
    progress_ns: AtomicU64,
}

/// Wall time one step of `run_until_stoppable` aims at: how soon a stop request is seen and how
/// fresh `progress_ns` is.
const STOPPABLE_STEP_WALL_S: f64 = 0.01;

struct State {
    /// The run, on one thread or split over several (`ccarena_sim::parallel`).
    sim: SplitRun,
    seed: u64,
    /// Set once a panic escaped the engine: its state can no longer be trusted.
    fault: Option<String>,
}


impl State {
    /// Run `f` on the engine with the GIL released; a panic becomes `EngineError` carrying the
    /// seed and the simulated time, and marks this run as faulted.
    fn guarded(&mut self, py: Python<'_>, f: impl FnOnce(&mut SplitRun) + Send) -> PyResult<()> {
        let sim = &mut self.sim;
        let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(|| f(sim))));
        if let Err(p) = outcome {
            let msg = format!(
                "engine fault at t = {} ns (seed {}): {}",
                self.sim.now().as_nanos(),
                self.seed,
                panic_message(&*p)
            );
            self.fault = Some(msg.clone());
            return Err(EngineError::new_err(msg));
        }
        Ok(())
    }
}

impl PySimulation {
    /// The run as one simulation (its results and captures).
    ///
    /// Raises EngineError while a run split over threads has not finished.
    fn simulation(st: &mut State) -> PyResult<&mut Simulation> {
        st.sim.simulation().map_err(EngineError::new_err)
    }

    fn state(&self) -> PyResult<std::sync::MutexGuard<'_, State>> {
        let st = self.inner.lock().map_err(|_| EngineError::new_err("engine state poisoned by an earlier fault"))?;
        if let Some(f) = &st.fault {
            return Err(EngineError::new_err(f.clone()));
        }
        Ok(st)
    }
}

#[pymethods]
impl PySimulation {
    /// Build from a resolved spec in JSON. Raises ValueError("path: message") for a bad spec.
    /// With `pcap_dir`, the links of the spec's `pcap` are captured into pcap files there (the
    /// directory is created; OSError if a file cannot be); `finish_capture()` closes them.
    /// With `threads` > 1 the network is split into up to that many parts, each run on a
    /// thread of its own, with results identical to one thread's (`ccarena_sim::parallel`; a
    /// run that captures packets, or that cannot be split, runs on one).
    #[new]
    #[pyo3(signature = (spec_json, pcap_dir=None, threads=1))]
    fn new(spec_json: &str, pcap_dir: Option<std::path::PathBuf>, threads: usize) -> PyResult<PySimulation> {
        let built = catch_unwind(|| Spec::from_json(spec_json).and_then(|spec| SplitRun::new(spec, threads.max(1))));
        let mut sim = match built {
            Ok(Ok(sim)) => sim,
            Ok(Err(e)) => return Err(PyValueError::new_err(e.to_string())),
            Err(p) => return Err(EngineError::new_err(format!("engine fault while building the run: {}", panic_message(&*p)))),
        };
        if let Some(dir) = pcap_dir {
            let single = sim.simulation().map_err(EngineError::new_err)?;
            single.start_capture(&dir).map_err(|e| PyOSError::new_err(format!("pcap capture in {}: {e}", dir.display())))?;
        }
        let seed = sim.seed();
        Ok(PySimulation {
            inner: Mutex::new(State { sim, seed, fault: None }),
            stop: AtomicBool::new(false),
            progress_ns: AtomicU64::new(0),
        })
    }

    /// Advance to min(t_ns, duration_ns), releasing the GIL. Raises EngineError on an engine fault.
    fn run_until(&self, py: Python<'_>, t_ns: u64) -> PyResult<()> {
        let mut st = self.state()?;
        st.guarded(py, |sim| sim.run_until(SimTime(t_ns)))?;
        if let Some(why) = st.sim.over_budget() {
            return Err(BudgetExceeded::new_err(format!(
                "stopped at t = {} ns: {why}",
                st.sim.now().as_nanos()
            )));
        }
        Ok(())
    }

    /// Advance to min(t_ns, duration_ns) in one call, the GIL released throughout: meant for a
    /// thread of its own, which then never waits for the GIL while another thread holds it.
    /// The engine advances in steps of simulated time sized to ~10 ms of wall time each (the
    /// first is 1 ms simulated, or a thousandth of what is left, whichever is smaller; each next
    /// at most 4x the last); after each it publishes its clock in `progress_ns` and stops if
    /// `request_stop()` has been called. Returns True when it reached the time, False when
    /// stopped. Raises EngineError on an engine fault, BudgetExceeded as `run_until` does.
    /// Results do not depend on the steps.
    fn run_until_stoppable(&self, py: Python<'_>, t_ns: u64) -> PyResult<bool> {
        let mut st = self.state()?;
        let (stop, progress) = (&self.stop, &self.progress_ns);
        st.guarded(py, |sim| {
            let end = t_ns.min(sim.end().as_nanos());
            let mut step_ns = ((end.saturating_sub(sim.now().as_nanos())) / 1000).clamp(1, 1_000_000);
            progress.store(sim.now().as_nanos(), Ordering::Relaxed);
            while sim.now().as_nanos() < end && !stop.load(Ordering::Relaxed) {
                let target = sim.now().as_nanos().saturating_add(step_ns).min(end);
                let started = Instant::now();
                sim.run_until(SimTime(target));
                progress.store(sim.now().as_nanos(), Ordering::Relaxed);
                if sim.over_budget().is_some() {
                    return;
                }
                let elapsed = started.elapsed().as_secs_f64();
                let scale = if elapsed <= 0.0 { 4.0 } else { (STOPPABLE_STEP_WALL_S / elapsed).min(4.0) };
                step_ns = ((step_ns as f64 * scale) as u64).max(1);
            }
        })?;
        if let Some(why) = st.sim.over_budget() {
            return Err(BudgetExceeded::new_err(format!(
                "stopped at t = {} ns: {why}",
                st.sim.now().as_nanos()
            )));
        }
        Ok(st.sim.now().as_nanos() >= t_ns.min(st.sim.end().as_nanos()))
    }

    /// Ask a running `run_until_stoppable` to return at the end of its current step (~10 ms);
    /// a later call of it returns at once. Callable from any thread, without waiting.
    fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The simulated clock, ns, as `run_until_stoppable` last published it: readable from any
    /// thread while it runs (`now_ns` waits for the running call to return).
    #[getter]
    fn progress_ns(&self) -> u64 {
        self.progress_ns.load(Ordering::Relaxed)
    }

    /// Stop the run inside `run_until` (raising BudgetExceeded) once it has handled more than
    /// `max_events` events or the process's resident memory exceeds `max_memory_bytes` (None = no
    /// limit; checked every 65,536 events).
    #[pyo3(signature = (max_events=None, max_memory_bytes=None))]
    fn set_budget(&self, max_events: Option<u64>, max_memory_bytes: Option<u64>) -> PyResult<()> {
        self.state()?.sim.set_budget(max_events, max_memory_bytes);
        Ok(())
    }

    /// Run a deliberate panic inside the engine's guard, exactly as `run_until` runs the engine,
    /// so the test suite can check that a fault becomes `EngineError` (with seed and time) and
    /// leaves the object refusing further work instead of crashing the interpreter.
    fn _inject_fault_for_tests(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.state()?;
        st.guarded(py, |_| panic!("fault injected by the test suite"))
    }

    /// Current simulated time, ns.
    #[getter]
    fn now_ns(&self) -> PyResult<u64> {
        Ok(self.state()?.sim.now().as_nanos())
    }

    /// The run's duration, ns.
    #[getter]
    fn duration_ns(&self) -> PyResult<u64> {
        Ok(self.state()?.sim.end().as_nanos())
    }

    /// True once the run has reached its duration.
    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(self.state()?.sim.finished())
    }

    /// Events handled so far.
    #[getter]
    fn events_processed(&self) -> PyResult<u64> {
        Ok(self.state()?.sim.events_processed())
    }

    /// The parts the run's network was split into, one thread each (1: not split: `threads`
    /// was 1, or the run cannot be split, `ccarena_sim::parallel::partition`).
    #[getter]
    fn parts(&self) -> PyResult<usize> {
        Ok(self.state()?.sim.split_into())
    }

    /// CPU seconds used so far by the threads the engine started for a split run (0 when not
    /// split: the run then uses the calling thread's CPU).
    #[getter]
    fn worker_cpu_s(&self) -> PyResult<f64> {
        Ok(self.state()?.sim.worker_cpu_s())
    }

    /// Close the capture files (after recording every packet that started serialization by
    /// now) and say what each holds: a list, in the spec's `pcap.links` order, of dicts with
    /// `link` (index), `file` (name in the capture directory), `packets_written`,
    /// `packets_over_limit` (left out at the size limit), `bytes` (the file's size) and `error`
    /// (a write error that stopped the file, or None). Empty without a capture, and on a second
    /// call.
    fn finish_capture<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut st = self.state()?;
        let captures = Self::simulation(&mut st)?.finish_capture();
        let out = PyList::empty(py);
        for (link, file, stats) in captures {
            let d = PyDict::new(py);
            d.set_item("link", link)?;
            d.set_item("file", file)?;
            d.set_item("packets_written", stats.packets_written)?;
            d.set_item("packets_over_limit", stats.packets_over_limit)?;
            d.set_item("bytes", stats.bytes_written)?;
            d.set_item("error", stats.error)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The result tables as of now: {"flows", "samples", "queues", "links", "subflows"} → {column → bytes | list[str]}.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut st = self.state()?;
        let seed = st.seed;
        let sim = Self::simulation(&mut st)?;
        let res = catch_unwind(AssertUnwindSafe(|| sim.results()))
            .map_err(|p| EngineError::new_err(format!("engine fault collecting results (seed {seed}): {}", panic_message(&*p))))?;
        let out = PyDict::new(py);
        let tables = [("flows", &res.flows), ("samples", &res.samples), ("queues", &res.queues), ("links", &res.links), ("subflows", &res.subflows)];
        for (name, table) in tables {
            out.set_item(name, table_to_dict(py, table)?)?;
        }
        Ok(out)
    }
}

fn table_to_dict<'py>(py: Python<'py>, table: &Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in &table.columns {
        match col {
            Column::F64(v) => {
                let mut bytes = Vec::with_capacity(v.len() * 8);
                for x in v {
                    bytes.extend_from_slice(&x.to_le_bytes());
                }
                d.set_item(*name, PyBytes::new(py, &bytes))?;
            }
            Column::Str(v) => d.set_item(*name, PyList::new(py, v)?)?,
        }
    }
    Ok(d)
}

/// Every flavor the engine implements: [{name, family, summary, source, default_recovery, params: [{name, default, doc}]}].
#[pyfunction]
fn flavors(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for f in catalogue() {
        let d = PyDict::new(py);
        d.set_item("name", f.name)?;
        d.set_item("family", f.family)?;
        d.set_item("summary", f.summary)?;
        d.set_item("source", f.source)?;
        d.set_item("default_recovery", f.default_recovery)?;
        d.set_item("transport", f.transport)?;
        d.set_item("needs_ecn", f.needs_ecn)?;
        d.set_item("l4s", f.l4s)?;
        let params = PyList::empty(py);
        for p in f.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", p.default)?;
            pd.set_item("doc", p.doc)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        list.append(d)?;
    }
    Ok(list)
}

/// The engine's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Parse a spec (JSON) as the engine does, structure only (unknown and missing fields are
/// errors, values are not checked), and write it back as JSON naming every field (null where
/// absent): what the engine understood, for checking that a front end's spec model agrees with
/// `ccarena_sim::spec::Spec` field for field. Raises ValueError for a malformed spec.
#[pyfunction]
fn spec_roundtrip(json: &str) -> PyResult<String> {
    ccarena_sim::Spec::roundtrip_json(json).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Check one resolved queue (the engine spec's `links[i].queue` object, JSON) as the engine
/// checks a link's queue (`ccarena_link::QueueSpec::validate`, the one place its rules
/// live). Returns None; raises ValueError((field, message)) for a bad queue, `field` relative to
/// the queue (`"codel.target_ns"`, `""` for the queue itself or malformed JSON).
#[pyfunction]
fn validate_queue(json: &str) -> PyResult<()> {
    ccarena_sim::Spec::validate_queue_json(json).map_err(|e| PyValueError::new_err((e.path, e.message)))
}

/// Check an MPTCP flow's explicit subflow source ports (`ports`) for `subflows` subflows as the
/// engine checks a spec's `mptcp.source_ports` (`ccarena_sim::spec::check_source_ports`, the one
/// place the rule lives: one port per subflow, each in 1..65535, none twice). Returns None;
/// raises ValueError(message) naming what is wrong and the fix.
#[pyfunction]
fn check_source_ports(ports: Vec<i64>, subflows: u8) -> PyResult<()> {
    ccarena_sim::spec::check_source_ports(&ports, subflows).map_err(PyValueError::new_err)
}

/// Per flow, the link indices of its data path and of its ACK path at time 0, as the engine
/// routes them: `[(data_links, ack_links)]` in flow order. Exact with a static table and with
/// `routing.mode = "ecmp"` (the flow's 5-tuple hash, docs/engine-spec.md "Routing"); with
/// `"spray"` each packet picks its own next hop, and this is the path of every node's first
/// choice (its lowest-index next hop), one of the paths the flow's packets take. Validates the
/// spec as `Simulation(spec_json)` does: raises ValueError("path: message") for a bad spec (an
/// unreachable destination is `flows[i].dst: no route from 'a' to 'b'`).
#[pyfunction]
fn flow_paths(py: Python<'_>, spec_json: &str) -> PyResult<Vec<(Vec<usize>, Vec<usize>)>> {
    let built = py.detach(|| catch_unwind(|| Simulation::from_json(spec_json).map(|sim| sim.flow_paths())));
    match built {
        Ok(Ok(paths)) => Ok(paths),
        Ok(Err(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(p) => Err(EngineError::new_err(format!("engine fault while routing: {}", panic_message(&*p)))),
    }
}

/// Per flow, per subflow, the link indices of the subflow's data path and ACK path at time 0:
/// `[[(data_links, ack_links)]]` in flow order, one entry for a single-path flow (its path, as
/// [`flow_paths`]) and one per subflow for an MPTCP flow (each subflow has its own 5-tuple, so
/// ECMP may place each on its own path). Raises as [`flow_paths`].
#[pyfunction]
fn subflow_paths(py: Python<'_>, spec_json: &str) -> PyResult<Vec<Vec<(Vec<usize>, Vec<usize>)>>> {
    let built = py.detach(|| catch_unwind(|| Simulation::from_json(spec_json).map(|sim| sim.subflow_paths())));
    match built {
        Ok(Ok(paths)) => Ok(paths),
        Ok(Err(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(p) => Err(EngineError::new_err(format!("engine fault while routing: {}", panic_message(&*p)))),
    }
}

/// The module.
#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySimulation>()?;
    m.add_function(wrap_pyfunction!(flavors, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(spec_roundtrip, m)?)?;
    m.add_function(wrap_pyfunction!(flow_paths, m)?)?;
    m.add_function(wrap_pyfunction!(subflow_paths, m)?)?;
    m.add_function(wrap_pyfunction!(validate_queue, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_ports, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The commit the extension was built from (build.rs), "unknown" when built outside git.
    m.add("__git_revision__", env!("CCARENA_GIT_REVISION"))?;
    m.add_function(wrap_pyfunction!(relay::relay_run, m)?)?;
    m.add_function(wrap_pyfunction!(relay::relay_set_start, m)?)?;
    udp::register(m)?;
    quinn::register(m)?;
    m.add("EngineError", m.py().get_type::<EngineError>())?;
    m.add("BudgetExceeded", m.py().get_type::<BudgetExceeded>())?;
    m.add("SPEC_FORMAT", ccarena_sim::spec::SPEC_FORMAT)?;
    Ok(())
}
