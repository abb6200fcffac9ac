//! What a direction does next, given the time and its head frame's due time: send, spin, sleep or
//! wait for traffic. Pure, so the timing rules are tested without sockets.
//!
//! The rules, and why:
//! - Head due → send it now.
//! - Head due within `spin_ns` → busy-wait for it: a sleep and wake-up costs about as much as that
//!   and adds the wake-up latency (about 20 µs on a VM) on top; `spin_ns` bounds the CPU this burns
//!   per frame, and 0 (the default) turns it off.
//! - Head due later → sleep until `spin_ns` before it (then the previous rule applies), but not
//!   sooner than `min_wake_interval_ns` after the previous wake-up: a wake-up costs far more than
//!   sending a frame (25–45 µs of CPU on a virtual machine's timer path), so frames due closer
//!   together than that are sent in one batch, each at most that much late. And no longer than
//!   `drain_interval_ns`: while asleep, arriving frames wait in the socket's receive buffer with
//!   their kernel timestamps (so their due times are unaffected), and the cap bounds how much
//!   that buffer must hold. Frames arriving during the sleep are never due before the head (due
//!   times follow arrival order), so nothing is missed by not waking for them.
//! - Nothing queued → block until a frame arrives, waking every `idle_timeout_ns` to notice a stop.

/// Timing knobs of a direction's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// SCHED_FIFO priority of the thread (1–99), or 0 to leave it normally scheduled.
    pub rt_priority: u8,
    /// Busy-wait instead of sleeping when the head is due within this long, ns.
    pub spin_ns: u64,
    /// Sleep no shorter than this after the previous wake-up, ns (batches close frames).
    pub min_wake_interval_ns: u64,
    /// Longest sleep while frames are queued, ns (bounds the receive buffer's backlog).
    pub drain_interval_ns: u64,
    /// Longest block while nothing is queued, ns (bounds how late a stop is noticed).
    pub idle_timeout_ns: u64,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            rt_priority: crate::config::DEFAULT_RT_PRIORITY,
            spin_ns: crate::config::DEFAULT_SPIN_NS,
            min_wake_interval_ns: crate::config::DEFAULT_MIN_WAKE_INTERVAL_NS,
            drain_interval_ns: 2_000_000,
            idle_timeout_ns: 50_000_000,
        }
    }
}

/// The next step of a direction's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The head frame is due: send it.
    Send,
    /// Busy-wait until this CLOCK_MONOTONIC time, ns (the head's due time).
    SpinUntil(u64),
    /// Sleep until this CLOCK_MONOTONIC time, ns, then drain the socket and decide again.
    SleepUntil(u64),
    /// Nothing queued: block on the socket for at most this long, ns.
    AwaitTraffic(u64),
}

/// What a direction does next while bringing its link up to an instant `t` ([`next_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// Apply the next scheduled link change, due at this instant (ns).
    Change(u64),
    /// Record the next queue sample.
    Sample,
}

/// The next thing due on the way to `t_ns`, given when the next scheduled change applies and the
/// next sample instant (each `None` if there is none): changes at or before `t_ns`, samples
/// before it (at it too with `samples_at_t`), in time order, a change first at the same instant
/// (the simulator applies an event before anything else at its instant). `None` when nothing is
/// due. Called before offering a frame stamped `t_ns` (`samples_at_t = false`: the frame belongs
/// in the sample at its instant) and when no earlier frame can still come (`true`).
pub fn next_due(change_at: Option<u64>, sample_at: Option<u64>, t_ns: u64, samples_at_t: bool) -> Option<Due> {
    let change = change_at.filter(|&c| c <= t_ns);
    let sample = sample_at.filter(|&s| s < t_ns || (samples_at_t && s == t_ns));
    match (change, sample) {
        (Some(c), Some(s)) if s < c => Some(Due::Sample),
        (Some(c), _) => Some(Due::Change(c)),
        (None, Some(_)) => Some(Due::Sample),
        (None, None) => None,
    }
}

/// Decide the next step at `now_ns` with the head frame due at `head_due_ns` (if any), the
/// thread having last woken from a sleep at `last_wake_ns`.
pub fn next_step(now_ns: u64, head_due_ns: Option<u64>, last_wake_ns: u64, t: &Tuning) -> Step {
    let Some(due) = head_due_ns else {
        return Step::AwaitTraffic(t.idle_timeout_ns);
    };
    if due <= now_ns {
        return Step::Send;
    }
    if due - now_ns <= t.spin_ns {
        return Step::SpinUntil(due);
    }
    let wake = (due - t.spin_ns).max(last_wake_ns.saturating_add(t.min_wake_interval_ns));
    Step::SleepUntil(wake.min(now_ns.saturating_add(t.drain_interval_ns)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Tuning = Tuning { rt_priority: 0, spin_ns: 20_000, min_wake_interval_ns: 0, drain_interval_ns: 2_000_000, idle_timeout_ns: 50_000_000 };

    #[test]
    fn due_or_overdue_frames_are_sent() {
        assert_eq!(next_step(1_000, Some(1_000), 0, &T), Step::Send);
        assert_eq!(next_step(1_000, Some(10), 0, &T), Step::Send);
    }

    #[test]
    fn close_frames_are_spun_for_far_ones_slept_for() {
        assert_eq!(next_step(0, Some(20_000), 0, &T), Step::SpinUntil(20_000));
        assert_eq!(next_step(0, Some(1), 0, &T), Step::SpinUntil(1));
        // Wake spin_ns early so the wake-up latency is absorbed by the spin.
        assert_eq!(next_step(0, Some(500_000), 0, &T), Step::SleepUntil(480_000));
    }

    #[test]
    fn long_sleeps_are_cut_to_the_drain_interval() {
        assert_eq!(next_step(7, Some(50_000_000), 0, &T), Step::SleepUntil(2_000_007));
    }

    #[test]
    fn an_empty_line_waits_for_traffic() {
        assert_eq!(next_step(0, None, 0, &T), Step::AwaitTraffic(50_000_000));
    }

    #[test]
    fn no_spin_means_sleeping_to_the_exact_due_time() {
        let t = Tuning { spin_ns: 0, ..T };
        assert_eq!(next_step(0, Some(1), 0, &t), Step::SleepUntil(1));
        assert_eq!(next_step(0, Some(1_500_000), 0, &t), Step::SleepUntil(1_500_000));
    }

    #[test]
    fn following_the_steps_never_sends_early_and_converges() {
        // Simulate a loop whose sleeps overshoot by a fixed wake-up latency: every frame is sent
        // at or after its due time, and late by no more than the latency beyond the spin window.
        for latency in [0u64, 5_000, 30_000, 100_000] {
            let mut now = 0u64;
            for due in [1_000u64, 30_000, 3_000_000, 3_000_100, 9_999_999] {
                loop {
                    match next_step(now, Some(due), 0, &T) {
                        Step::Send => break,
                        Step::SpinUntil(u) => now = u,
                        Step::SleepUntil(u) => now = u + latency,
                        Step::AwaitTraffic(_) => unreachable!(),
                    }
                }
                assert!(now >= due);
                assert!(now - due <= latency.saturating_sub(T.spin_ns), "due {due} sent {now} latency {latency}");
            }
        }
    }

    #[test]
    fn changes_and_samples_come_in_time_order_a_change_first() {
        assert_eq!(next_due(Some(10), Some(5), 20, false), Some(Due::Sample));
        assert_eq!(next_due(Some(5), Some(10), 20, false), Some(Due::Change(5)));
        assert_eq!(next_due(Some(10), Some(10), 20, false), Some(Due::Change(10)));
        // Up to the instant: a change at it applies, a sample at it only when asked.
        assert_eq!(next_due(Some(20), None, 20, false), Some(Due::Change(20)));
        assert_eq!(next_due(None, Some(20), 20, false), None);
        assert_eq!(next_due(None, Some(20), 20, true), Some(Due::Sample));
        // Nothing later than the instant, and nothing at all without a change or a grid.
        assert_eq!(next_due(Some(21), Some(21), 20, true), None);
        assert_eq!(next_due(None, None, 20, true), None);
    }

    #[test]
    fn close_frames_wait_for_the_next_batch() {
        let t = Tuning { spin_ns: 0, min_wake_interval_ns: 200_000, ..T };
        // Woke at 1000; the head is due 12 µs later: sleep until the batch boundary instead.
        assert_eq!(next_step(1_000, Some(13_000), 1_000, &t), Step::SleepUntil(201_000));
        // A head due after the boundary is slept for exactly.
        assert_eq!(next_step(1_000, Some(900_000), 1_000, &t), Step::SleepUntil(900_000));
        // Due frames are sent whatever the batching says.
        assert_eq!(next_step(1_000, Some(1_000), 1_000, &t), Step::Send);
        // The drain cap still wins.
        let slow = Tuning { min_wake_interval_ns: 5_000_000, ..t };
        assert_eq!(next_step(1_000, Some(2_000), 1_000, &slow), Step::SleepUntil(2_001_000));
    }

    #[test]
    fn batching_bounds_wake_ups_and_lateness() {
        // Frames due every 12 µs (1 Gbit/s of 1500-byte frames) with a 30 µs wake-up overshoot:
        // at most one wake-up per interval, no frame early, none later than interval + overshoot.
        let t = Tuning { spin_ns: 0, min_wake_interval_ns: 200_000, ..T };
        let dues: Vec<u64> = (1..=10_000u64).map(|k| k * 12_000).collect();
        let (mut now, mut last_wake, mut wakes, mut i) = (0u64, 0u64, 0u64, 0usize);
        while i < dues.len() {
            match next_step(now, Some(dues[i]), last_wake, &t) {
                Step::Send => {
                    assert!(now >= dues[i] && now - dues[i] <= 230_000, "frame {i} late by {}", now - dues[i]);
                    i += 1;
                }
                Step::SleepUntil(u) => {
                    now = u + 30_000;
                    last_wake = now;
                    wakes += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // 120 ms of frames, one wake-up per 230 µs at most.
        assert!(wakes <= 120_000_000 / 230_000 + 2, "{wakes} wake-ups");
    }
}
