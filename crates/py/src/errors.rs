//! The extension's two exception types and the text of a caught panic: shared by the simulator
//! binding (the crate root) and the relay binding, so neither imports the other.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    _engine,
    EngineError,
    PyException,
    "An engine fault (a bug, not a user mistake); the message carries the run's seed and time so it can be replayed."
);

create_exception!(
    _engine,
    BudgetExceeded,
    PyException,
    "The run stopped at a budget set with Simulation.set_budget (events or memory): a run too large for this machine, not a fault."
);

/// The message a panic carried (`&str` or `String` payloads; anything else is "unknown panic").
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
