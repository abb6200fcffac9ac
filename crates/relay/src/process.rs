//! Process-level behaviour of a relay process: stop cleanly on SIGTERM/SIGINT (so the stats still
//! get written) and die with the parent that started it.

use std::io;
use std::mem::zeroed;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the signal handler; the relay's stop flag while a [`ProcessGuard`] is alive.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// While alive: SIGTERM and SIGINT set [`ProcessGuard::stop_flag`] instead of killing the process,
/// and the process receives SIGTERM when its parent dies. Dropping it restores the previous signal
/// handlers and parent-death signal, so a Python interpreter that called the relay gets its own
/// Ctrl-C handling back.
pub struct ProcessGuard {
    old_term: libc::sigaction,
    old_int: libc::sigaction,
    old_pdeathsig: libc::c_int,
}

fn sigaction(sig: libc::c_int, new: &libc::sigaction) -> io::Result<libc::sigaction> {
    // SAFETY: both pointers are valid sigaction structs.
    let mut old: libc::sigaction = unsafe { zeroed() };
    if unsafe { libc::sigaction(sig, new, &mut old) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old)
}

impl ProcessGuard {
    /// Install the handlers and the parent-death signal, and clear the stop flag. If the parent is
    /// already gone (the process was re-parented to init before this ran), the flag starts set.
    ///
    /// # Errors
    /// The OS error of a failing sigaction or prctl.
    pub fn install() -> io::Result<ProcessGuard> {
        STOP.store(false, Ordering::Relaxed);
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid. SA_RESTART
        // keeps blocking sends from failing with EINTR; sleeps and polls still return early and
        // the relay loops re-check their flags.
        let mut sa: libc::sigaction = unsafe { zeroed() };
        sa.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        let old_term = sigaction(libc::SIGTERM, &sa)?;
        let old_int = match sigaction(libc::SIGINT, &sa) {
            Ok(o) => o,
            Err(e) => {
                let _ = sigaction(libc::SIGTERM, &old_term);
                return Err(e);
            }
        };
        let mut old_pdeathsig: libc::c_int = 0;
        // SAFETY: prctl with integer arguments, and a pointer to a live c_int for GET.
        unsafe {
            libc::prctl(libc::PR_GET_PDEATHSIG, &mut old_pdeathsig as *mut libc::c_int);
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) < 0 {
                let e = io::Error::last_os_error();
                let _ = sigaction(libc::SIGTERM, &old_term);
                let _ = sigaction(libc::SIGINT, &old_int);
                return Err(e);
            }
            // The parent may have died before the prctl: then nobody would ever stop us.
            if libc::getppid() == 1 {
                STOP.store(true, Ordering::Relaxed);
            }
        }
        Ok(ProcessGuard { old_term, old_int, old_pdeathsig })
    }

    /// The flag SIGTERM/SIGINT (and the parent's death) set.
    pub fn stop_flag(&self) -> &'static AtomicBool {
        &STOP
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        let _ = sigaction(libc::SIGTERM, &self.old_term);
        let _ = sigaction(libc::SIGINT, &self.old_int);
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, self.old_pdeathsig as libc::c_ulong) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigterm_sets_the_flag_and_the_old_handler_comes_back() {
        let guard = ProcessGuard::install().unwrap();
        assert!(!guard.stop_flag().load(Ordering::Relaxed) || unsafe { libc::getppid() } == 1);
        // SAFETY: signalling our own process; the handler only stores to an atomic.
        unsafe { libc::raise(libc::SIGTERM) };
        assert!(guard.stop_flag().load(Ordering::Relaxed));
        drop(guard);
        // The default SIGTERM disposition is back (the test harness never installed one).
        let mut cur: libc::sigaction = unsafe { zeroed() };
        unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut cur) };
        assert_eq!(cur.sa_sigaction, libc::SIG_DFL);
    }
}
