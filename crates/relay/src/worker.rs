//! A relay worker: one thread serving many link directions with one epoll loop.
//!
//! A relay has a bounded number of workers (by default one per CPU, [`default_workers`]) however
//! many links it emulates: a k = 4 fat-tree has 48 links, 96 directions, and one thread per
//! direction would mean 96 real-time threads competing for two CPUs, each paying its own timer
//! wake-ups. A worker keeps, per direction, when it next needs serving ([`Next`]) and:
//!
//! - serves every direction that is due (its head frame due, a burst cut short, a change due, or
//!   its socket reported readable while its line was empty);
//! - then waits, in `epoll_pwait2` with a nanosecond timeout, until the earliest direction falls
//!   due — but wakes on a timer no sooner than `min_wake_interval_ns` after its previous timed
//!   wake-up, so frames due close together, in one direction or in several, go out in one batch,
//!   each at most that much late (the same rule and bound as a thread per direction had,
//!   [`crate::schedule`]) — or until a socket of an *empty* direction becomes readable. A
//!   direction with frames queued is not watched (EPOLLONESHOT, re-armed only when its line
//!   empties): its arrivals cannot be due before its head, and they keep their kernel
//!   timestamps while they wait in the socket.
//!
//! Directions are dealt to workers round-robin in config order (`a → b` and `b → a` of a pipe on
//! different workers when there are two or more), so the two directions of a busy flow's path
//! run on different CPUs, as before.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::direction::{Direction, Next};
use crate::schedule::Tuning;
use crate::stats::DirectionStats;
use crate::sys::{self, Epoll, RxBatch};

/// Frames read per `recvmmsg` call (one receive batch per worker, shared by its directions).
const RX_BATCH: usize = 32;

/// The number of workers when none is asked for: one per CPU this process may run on.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Which worker of `workers` serves direction `index` (directions numbered `2·pipe + d`, `d` = 0
/// for `a → b`, 1 for `b → a`).
pub fn worker_of(index: usize, workers: usize) -> usize {
    index % workers.max(1)
}

struct Slot {
    /// The direction's number (`2·pipe + d`).
    index: usize,
    dir: Direction,
    /// Serve it at or after this CLOCK_MONOTONIC instant, ns (`u64::MAX`: only when readable).
    due_ns: u64,
    /// Its socket is armed in the epoll set.
    armed: bool,
}

/// Serve `dirs` (each with its number `2·pipe + d`) until `halt` is set; returns each
/// direction's counters with its number. Scheduled link changes count from the instant `start`
/// holds (see [`Direction::service`]).
///
/// # Errors
/// An unexpected OS error (epoll, or receiving on a direction's socket).
pub fn run(dirs: Vec<(usize, Direction)>, halt: &AtomicBool, start: &AtomicU64) -> io::Result<Vec<(usize, DirectionStats)>> {
    let Some(tuning) = dirs.first().map(|(_, d)| *d.tuning()) else { return Ok(Vec::new()) };
    sys::precise_timers_for_this_thread();
    let realtime_denied = tuning.rt_priority > 0 && sys::make_this_thread_realtime(tuning.rt_priority).is_err();
    let mut epoll = Epoll::new(dirs.len())?;
    let mut slots = Vec::with_capacity(dirs.len());
    for (token, (index, mut dir)) in dirs.into_iter().enumerate() {
        if realtime_denied {
            dir.note_realtime_denied();
        }
        epoll.add(dir.rx_fd(), token as u64)?;
        slots.push(Slot { index, dir, due_ns: 0, armed: true });
    }
    let mut batch = RxBatch::new(RX_BATCH);
    let mut last_timed_wake_ns = sys::mono_ns();
    while !halt.load(Ordering::Relaxed) {
        let now = sys::mono_ns();
        for (token, slot) in slots.iter_mut().enumerate() {
            if slot.due_ns > now {
                continue;
            }
            match slot.dir.service(&mut batch, start)? {
                Next::Again => slot.due_ns = 0,
                Next::At(t) => slot.due_ns = t,
                Next::Idle(change) => {
                    slot.due_ns = change.unwrap_or(u64::MAX);
                    if !slot.armed {
                        epoll.arm(slot.dir.rx_fd(), token as u64)?;
                        slot.armed = true;
                    }
                }
            }
        }
        let timeout_ns = match next_wait(&slots, sys::mono_ns(), last_timed_wake_ns, &tuning) {
            None => continue,
            Some(Wait::Spin(until)) => {
                while sys::mono_ns() < until {
                    std::hint::spin_loop();
                }
                continue;
            }
            Some(Wait::Sleep(ns)) => ns,
        };
        let mut woke_by_traffic = false;
        for token in epoll.wait(timeout_ns)? {
            let slot = &mut slots[token as usize];
            slot.armed = false;
            slot.due_ns = 0;
            woke_by_traffic = true;
        }
        if !woke_by_traffic {
            last_timed_wake_ns = sys::mono_ns();
        }
    }
    slots.into_iter().map(|s| Ok((s.index, s.dir.finish(&mut batch)?))).collect()
}

/// How a worker waits before its next turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Busy-wait until this instant, ns (the earliest due direction is within `spin_ns`).
    Spin(u64),
    /// Wait in epoll for at most this long, ns.
    Sleep(u64),
}

/// The wait before the next turn at `now_ns` (None: a direction is due already), given when
/// each direction is next due, the worker's previous timed wake-up and the timing knobs: until
/// the earliest due instant, but a timed wake-up no sooner than `min_wake_interval_ns` after the
/// previous one, and no longer than `idle_timeout_ns` (a stop is noticed within it).
fn next_wait(slots: &[Slot], now_ns: u64, last_timed_wake_ns: u64, t: &Tuning) -> Option<Wait> {
    next_wait_for(slots.iter().map(|s| s.due_ns).min().unwrap_or(u64::MAX), now_ns, last_timed_wake_ns, t)
}

fn next_wait_for(earliest_ns: u64, now_ns: u64, last_timed_wake_ns: u64, t: &Tuning) -> Option<Wait> {
    if earliest_ns <= now_ns {
        return None;
    }
    if earliest_ns - now_ns <= t.spin_ns {
        return Some(Wait::Spin(earliest_ns));
    }
    let wake = earliest_ns.saturating_sub(t.spin_ns).max(last_timed_wake_ns.saturating_add(t.min_wake_interval_ns));
    Some(Wait::Sleep((wake - now_ns).min(t.idle_timeout_ns)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Tuning = Tuning { rt_priority: 0, spin_ns: 0, min_wake_interval_ns: 200_000, drain_interval_ns: 2_000_000, idle_timeout_ns: 50_000_000 };

    #[test]
    fn directions_are_dealt_round_robin_so_a_pipes_two_directions_part() {
        assert_eq!((0..6).map(|i| worker_of(i, 2)).collect::<Vec<_>>(), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!((0..4).map(|i| worker_of(i, 1)).collect::<Vec<_>>(), vec![0, 0, 0, 0]);
        assert_eq!(worker_of(5, 0), 0);
    }

    #[test]
    fn a_worker_waits_for_its_earliest_direction_batching_timed_wake_ups() {
        // Something due now: no wait.
        assert_eq!(next_wait_for(1_000, 1_000, 0, &T), None);
        // Woke at 1000 on a timer; a frame due 12 µs later waits for the batch boundary.
        assert_eq!(next_wait_for(13_000, 1_000, 1_000, &T), Some(Wait::Sleep(200_000)));
        // A later one is waited for exactly.
        assert_eq!(next_wait_for(900_000, 1_000, 1_000, &T), Some(Wait::Sleep(899_000)));
        // Nothing queued anywhere: wait for traffic, noticing a stop within the idle timeout.
        assert_eq!(next_wait_for(u64::MAX, 1_000, 1_000, &T), Some(Wait::Sleep(50_000_000)));
        // Close enough to spin, when spinning is on.
        let spin = Tuning { spin_ns: 20_000, min_wake_interval_ns: 0, ..T };
        assert_eq!(next_wait_for(11_000, 1_000, 0, &spin), Some(Wait::Spin(11_000)));
        assert_eq!(next_wait_for(101_000, 1_000, 0, &spin), Some(Wait::Sleep(80_000)));
    }

    #[test]
    fn batching_bounds_wake_ups_and_lateness_across_directions() {
        // Two directions with frames due every 12 µs each, offset by 6 µs (two 1 Gbit/s links),
        // a 30 µs wake-up overshoot: one worker sends each frame at most interval + overshoot
        // late, with at most one timed wake-up per interval.
        let dues: [Vec<u64>; 2] = [(1..=5_000u64).map(|k| k * 12_000).collect(), (1..=5_000u64).map(|k| k * 12_000 + 6_000).collect()];
        let (mut next, mut now, mut last_wake, mut wakes) = ([0usize; 2], 0u64, 0u64, 0u64);
        while next.iter().zip(&dues).any(|(&i, d)| i < d.len()) {
            let mut sent = false;
            for (i, d) in next.iter_mut().zip(&dues) {
                while *i < d.len() && d[*i] <= now {
                    assert!(now - d[*i] <= 230_000, "late by {}", now - d[*i]);
                    *i += 1;
                    sent = true;
                }
            }
            let earliest = next.iter().zip(&dues).filter_map(|(&i, d)| d.get(i).copied()).min().unwrap_or(u64::MAX);
            if earliest == u64::MAX {
                break;
            }
            match next_wait_for(earliest, now, last_wake, &T) {
                None => assert!(sent),
                Some(Wait::Sleep(ns)) => {
                    now += ns + 30_000;
                    last_wake = now;
                    wakes += 1;
                }
                Some(Wait::Spin(_)) => unreachable!(),
            }
        }
        assert!(wakes <= 60_000_000 / 230_000 + 2, "{wakes} wake-ups");
    }
}
