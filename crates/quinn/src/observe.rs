//! [`Observed`]: a transparent wrapper around whichever controller runs in quinn (ccarena's or
//! quinn's own) that records what quinn tells it, so both kinds fill the same tables.
//!
//! quinn exposes only its smoothed RTT and min RTT; the per-ACK samples RFC 9002 §5.1 defines
//! (latest_rtt: now minus the send time of the largest newly acknowledged packet) reach only the
//! controller, through `on_ack`'s send times. The wrapper takes one sample per ACK batch from
//! the newest send time acknowledged in it, and counts congestion events and persistent
//! congestion, then forwards every call unchanged.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// What the wrapper has recorded; shared with the driver.
#[derive(Clone, Debug, Default)]
pub struct ObservedLog {
    /// latest_rtt per ACK batch (RFC 9002 §5.1), in order.
    pub rtt_samples: Vec<Duration>,
    /// Congestion events quinn reported with lost bytes (loss).
    pub loss_events: u64,
    /// Congestion events quinn reported with no lost bytes (ECN-CE).
    pub ecn_events: u64,
    /// Congestion events with persistent congestion (RFC 9002 §7.6).
    pub persistent_congestions: u64,
    /// Bytes quinn reported lost to the controller.
    pub lost_bytes: u64,
}

/// A shared handle on an [`ObservedLog`].
pub type SharedLog = Arc<Mutex<ObservedLog>>;

/// The wrapper. See the module documentation.
pub struct Observed {
    inner: Box<dyn Controller>,
    log: SharedLog,
    newest_sent: Option<Instant>,
}

impl Observed {
    /// Wrap `inner`, recording into `log`.
    pub fn new(inner: Box<dyn Controller>, log: SharedLog) -> Observed {
        Observed { inner, log, newest_sent: None }
    }

    fn with_log(&self, f: impl FnOnce(&mut ObservedLog)) {
        if let Ok(mut l) = self.log.lock() {
            f(&mut l);
        }
    }
}

impl Controller for Observed {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.newest_sent = Some(self.newest_sent.map_or(sent, |t| t.max(sent)));
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        if let Some(sent) = self.newest_sent.take() {
            let sample = now.saturating_duration_since(sent);
            self.with_log(|l| l.rtt_samples.push(sample));
        }
        self.inner.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        self.with_log(|l| {
            if lost_bytes == 0 {
                l.ecn_events += 1;
            } else {
                l.loss_events += 1;
            }
            l.lost_bytes += lost_bytes;
            l.persistent_congestions += is_persistent_congestion as u64;
        });
        self.inner.on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Observed::new(self.inner.clone_box(), self.log.clone()))
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self.inner.into_any()
    }
}

/// Wraps every controller `inner` builds in an [`Observed`] sharing one log.
pub struct ObservedFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
    log: SharedLog,
}

impl ObservedFactory {
    /// A factory around `inner` and the log its controllers write to.
    pub fn new(inner: Arc<dyn ControllerFactory + Send + Sync>) -> (ObservedFactory, SharedLog) {
        let log = SharedLog::default();
        (ObservedFactory { inner, log: log.clone() }, log)
    }
}

impl ControllerFactory for ObservedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Observed::new(self.inner.clone().build(now, current_mtu), self.log.clone()))
    }
}
