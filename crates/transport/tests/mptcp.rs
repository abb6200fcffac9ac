//! MPTCP connection tests (RFC 8684): the scheduler's choice, reinjection after a subflow's RTO
//! and stale subflows, a subflow whose path goes down while the connection completes, the
//! shared receive window and data-level head-of-line blocking, joins, the send buffer, and the
//! coupling view lent to the subflows' controllers. Explicit-time tests drive an
//! `MptcpSender` and an `MptcpReceiver` by hand; the others run them over `mptcp_net`.

use std::sync::{Arc, Mutex};

use ccarena_cc::coupled::{Coupling, SubflowView};
use ccarena_cc::{new_controller, AckSample, CongestionControl, CwndState, Duration, LossEvent, Params, SimTime};
use ccarena_transport::mptcp::{DssData, MptcpConfig, MptcpReceiver, MptcpSender, Scheduler};
use crate::mptcp_net::{config, renos, Net};
use crate::support::{LinkCfg, MSS};

const M: u64 = MSS as u64;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

fn clean(delay_ms: u64) -> (LinkCfg, LinkCfg) {
    (LinkCfg::clean(Duration::from_millis(delay_ms)), LinkCfg::clean(Duration::from_millis(delay_ms)))
}

/// A link of `delay_ms` one way whose data direction serializes at `rate_bps` behind a
/// 100-packet drop-tail queue.
fn rated(delay_ms: u64, rate_bps: u64) -> (LinkCfg, LinkCfg) {
    let mut fwd = LinkCfg::clean(Duration::from_millis(delay_ms));
    fwd.rate_bps = Some(rate_bps);
    fwd.queue_limit = Some(100);
    (fwd, LinkCfg::clean(Duration::from_millis(delay_ms)))
}

fn drain(tx: &mut MptcpSender, now: SimTime) -> Vec<DssData> {
    std::iter::from_fn(|| tx.poll_transmit(now)).collect()
}

/// A full-sized data segment of `subflow` at subflow sequence `seq` carrying DSN `dsn`.
fn full_segment(subflow: u8, seq: u64, dsn: u64) -> DssData {
    DssData {
        subflow,
        seg: ccarena_transport::DataSegment {
            seq,
            len: MSS,
            ts_val: SimTime::ZERO,
            ecn: ccarena_transport::Ecn::NotEct,
            cwr: false,
            retransmit: false,
        },
        dsn,
    }
}

#[test]
fn config_validation_names_the_field() {
    let ok = config(2, Scheduler::MinRtt);
    assert_eq!(ok.validate(), Ok(()));
    let field = |c: MptcpConfig| c.validate().unwrap_err().field;
    assert_eq!(field(MptcpConfig { subflows: 0, ..ok }), "subflows");
    assert_eq!(field(MptcpConfig { subflows: 33, ..ok }), "subflows");
    assert_eq!(field(MptcpConfig { rcvbuf_bytes: Some(0), ..ok }), "rcvbuf_bytes");
    assert_eq!(field(MptcpConfig { sndbuf_bytes: Some(0), ..ok }), "sndbuf_bytes");
    assert_eq!(field(MptcpConfig { stale_loss_count: 0, ..ok }), "stale_loss_count");
    let mut bad_mss = ok;
    bad_mss.sender.mss_bytes = 0;
    assert_eq!(field(bad_mss), "mss_bytes");
    assert_eq!("roundrobin".parse::<Scheduler>(), Ok(Scheduler::RoundRobin));
    assert!("fastest".parse::<Scheduler>().is_err());
}

#[test]
fn two_clean_subflows_carry_a_transfer_exactly_once() {
    let mut net = Net::new(config(2, Scheduler::MinRtt), renos(2), &[clean(5), clean(20)], 1);
    let bytes = 400_000;
    assert!(net.transfer(bytes, ms(10_000)));
    assert_eq!(net.rx.data_rcv_nxt(), bytes);
    assert_eq!(net.delivered, bytes);
    let (s0, s1) = (net.tx.subflow_stats(0), net.tx.subflow_stats(1));
    assert_eq!(s0.bytes_scheduled + s1.bytes_scheduled, bytes, "each DSN first sent once");
    assert!(s0.bytes_scheduled > 0 && s1.bytes_scheduled > 0, "both subflows used: {s0:?} {s1:?}");
    assert_eq!(s0.bytes_reinjected + s1.bytes_reinjected, 0);
    // Completion stops everything.
    assert_eq!(net.tx.poll_timeout(), None);
    assert!(net.tx.poll_transmit(net.now).is_none());
}

/// MinRtt in explicit time: with IW = 1 MSS, the first chunk goes to subflow 0 (no RTT sample
/// on either: a tie, lower index), the second to subflow 1 (subflow 0 is full). Subflow 1's
/// ACK comes back after 10 ms, subflow 0's after 50 ms; then new data goes first to subflow 1
/// (lower smoothed RTT) until it is cwnd-limited, and then to subflow 0.
#[test]
fn min_rtt_prefers_the_faster_subflow_until_its_window_is_full() {
    let mut cfg = config(2, Scheduler::MinRtt);
    cfg.sender.initial_cwnd_bytes = M;
    cfg.receiver.delayed_ack = Duration::ZERO;
    cfg.receiver.ack_every_segments = 1;
    let mut tx = MptcpSender::new(cfg, renos(2), SimTime::ZERO);
    let mut rx = MptcpReceiver::new(cfg);
    tx.app_write(3 * M);
    let first = drain(&mut tx, SimTime::ZERO);
    let placed: Vec<(u8, u64)> = first.iter().map(|d| (d.subflow, d.dsn)).collect();
    assert_eq!(placed, vec![(0, 0), (1, M)], "tie → subflow 0, then the other; the third waits");

    // Subflow 1's segment arrives first: held above the DATA_ACK.
    assert_eq!(rx.on_segment(ms(5), &first[1]), 0);
    let a1 = rx.poll_ack(ms(5)).unwrap();
    assert_eq!((a1.subflow, a1.data_ack), (1, 0));
    let _ = tx.on_ack(ms(10), &a1);
    assert_eq!(tx.subflow(1).srtt(), Some(Duration::from_millis(10)));
    assert_eq!(tx.subflow(1).cwnd().cwnd_bytes, 2 * M, "grew: it was cwnd-limited with data waiting");
    let third = drain(&mut tx, ms(10));
    assert_eq!(third.iter().map(|d| (d.subflow, d.dsn)).collect::<Vec<_>>(), vec![(1, 2 * M)]);

    assert_eq!(rx.on_segment(ms(25), &first[0]), 2 * M, "fills the gap: both chunks delivered");
    let a0 = rx.poll_ack(ms(25)).unwrap();
    assert_eq!((a0.subflow, a0.data_ack), (0, 2 * M));
    let _ = tx.on_ack(ms(50), &a0);
    assert_eq!(tx.data_una(), 2 * M);
    assert_eq!(tx.subflow(0).srtt(), Some(Duration::from_millis(50)));
    assert_eq!(tx.subflow(0).cwnd().cwnd_bytes, 2 * M);

    // Subflow 1 (10 ms) has room for one more MSS, subflow 0 (50 ms) for two.
    tx.app_write(4 * M);
    let next: Vec<(u8, u64)> = drain(&mut tx, ms(50)).iter().map(|d| (d.subflow, d.dsn)).collect();
    assert_eq!(next, vec![(1, 3 * M), (0, 4 * M), (0, 5 * M)]);
    assert_eq!(tx.data_nxt(), 6 * M, "the last chunk waits for a window");
}

#[test]
fn round_robin_takes_the_subflows_in_turn() {
    let cfg = config(3, Scheduler::RoundRobin);
    let mut tx = MptcpSender::new(cfg, renos(3), SimTime::ZERO);
    tx.app_write(7 * M);
    let order: Vec<u8> = drain(&mut tx, SimTime::ZERO).iter().map(|d| d.subflow).collect();
    assert_eq!(order, vec![0, 1, 2, 0, 1, 2, 0]);
    // MinRtt with no samples fills subflow 0's window (10 MSS) before using subflow 1.
    let mut tx = MptcpSender::new(config(3, Scheduler::MinRtt), renos(3), SimTime::ZERO);
    tx.app_write(12 * M);
    let order: Vec<u8> = drain(&mut tx, SimTime::ZERO).iter().map(|d| d.subflow).collect();
    assert_eq!(order, [vec![0; 10], vec![1; 2]].concat());
}

#[test]
fn subflows_join_after_the_join_delay() {
    let mut cfg = config(2, Scheduler::RoundRobin);
    cfg.join_delay = Duration::from_millis(30);
    let mut net = Net::new(cfg, renos(2), &[clean(10), clean(10)], 3);
    assert!(net.tx.subflow_stats(0).joined && !net.tx.subflow_stats(1).joined);
    assert!(net.transfer(300_000, ms(10_000)));
    assert!(net.tx.subflow_stats(1).joined);
    let first_on_1 = net.sent_log.iter().find(|(_, d)| d.subflow == 1).expect("subflow 1 used").0;
    assert!(first_on_1 >= ms(30), "subflow 1 sent at {first_on_1:?}, before it joined");
    assert!(net.sent_log.iter().any(|(t, d)| d.subflow == 0 && *t < ms(30)));
}

/// Subflow 1's path goes down at 300 ms (both directions drop everything). Its RTO fires, the
/// DSNs it held that were not DATA_ACKed are reinjected on subflow 0 (once), it goes stale after
/// `stale_loss_count` RTOs in a row and gets no new data, and the connection completes.
#[test]
fn a_dead_subflow_is_reinjected_goes_stale_and_does_not_block_completion() {
    let mut cfg = config(2, Scheduler::MinRtt);
    cfg.stale_loss_count = 3;
    let paths = [rated(10, 20_000_000), rated(10, 20_000_000)];
    let mut net = Net::new(cfg, renos(2), &paths, 7);
    let down = ms(300);
    net.dead_from[1] = Some(down);
    let bytes = 8_000_000; // ~1.6 s at 40 Mbit/s, ~3.2 s on subflow 0 alone
    net.tx.app_write(bytes);
    net.pump();
    // Up to the first RTO of subflow 1.
    while net.tx.subflow(1).stats().rto_count == 0 {
        assert!(net.step() && net.now < ms(3_000));
    }
    let first_rto = net.now;
    assert!(first_rto > down);
    // What subflow 1 held that was not DATA_ACKed: its new segments at or above data_una.
    let data_una = net.tx.data_una();
    let mut stuck: Vec<(u64, u64)> = net
        .sent_log
        .iter()
        .filter(|(_, d)| d.subflow == 1 && !d.seg.retransmit && d.dsn + d.seg.len as u64 > data_una)
        .map(|(_, d)| (d.dsn.max(data_una), d.dsn + d.seg.len as u64))
        .collect();
    stuck.sort();
    assert!(!stuck.is_empty());
    let stuck_bytes: u64 = stuck.iter().map(|(a, b)| b - a).sum();
    let log_len = net.sent_log.len();

    assert!(net.transfer(0, ms(20_000)), "the connection completes without subflow 1");
    assert_eq!(net.delivered, bytes);
    // Reinjections ran on subflow 0 as new segments of its own: exactly the stuck ranges, once.
    let s0 = net.tx.subflow_stats(0);
    assert_eq!(s0.bytes_reinjected, stuck_bytes, "each stuck byte reinjected once");
    let mut reinjected: Vec<(u64, u64)> = net.sent_log[log_len..]
        .iter()
        .filter(|(_, d)| d.subflow == 0 && !d.seg.retransmit && stuck.iter().any(|(a, b)| d.dsn >= *a && d.dsn < *b))
        .map(|(_, d)| (d.dsn, d.dsn + d.seg.len as u64))
        .collect();
    reinjected.sort();
    reinjected.dedup();
    assert_eq!(reinjected, stuck, "the stuck ranges went out on subflow 0");
    // Reinjection comes before new data: the first segments subflow 0 sends after the RTO
    // are the stuck ranges.
    let first_new_after: Vec<u64> = net.sent_log[log_len..]
        .iter()
        .filter(|(_, d)| d.subflow == 0 && !d.seg.retransmit)
        .take(stuck.len())
        .map(|(_, d)| d.dsn)
        .collect();
    assert!(first_new_after.iter().all(|dsn| stuck.iter().any(|(a, b)| dsn >= a && dsn < b)));

    let s1 = net.tx.subflow_stats(1);
    eprintln!(
        "down at {down:?}, first RTO {first_rto:?}, complete at {:?}; reinjected {stuck_bytes} B in {} ranges; subflow 1: {} RTOs, {s1:?}; subflow 0: {s0:?}",
        net.now,
        stuck.len(),
        net.tx.subflow(1).stats().rto_count
    );
    assert!(s1.stale, "subflow 1 stale after {} RTOs", net.tx.subflow(1).stats().rto_count);
    assert!(net.tx.subflow(1).stats().rto_count >= 3);
    // After the path died, subflow 1 only retransmitted: no new chunk was handed to it.
    let new_on_1_after = net
        .sent_log
        .iter()
        .filter(|(t, d)| d.subflow == 1 && *t >= first_rto && !d.seg.retransmit)
        .count();
    assert_eq!(new_on_1_after, 0);
    assert!(s1.bytes_scheduled < bytes / 4, "subflow 1 carried only its share before {down:?}");
    // Complete: no more timers, nothing more to send, although subflow 1 still holds data.
    assert!(net.tx.subflow(1).snd_una() < net.tx.subflow(1).snd_nxt());
    assert_eq!(net.tx.poll_timeout(), None);
    assert!(net.tx.poll_transmit(SimTime(u64::MAX / 2)).is_none());
}

/// A stale subflow whose path comes back is revived by the first ACK that advances it.
#[test]
fn a_stale_subflow_revives_when_its_path_returns() {
    let mut cfg = config(2, Scheduler::RoundRobin);
    cfg.stale_loss_count = 2;
    let mut net = Net::new(cfg, renos(2), &[rated(10, 20_000_000), rated(10, 20_000_000)], 9);
    net.dead_from[1] = Some(ms(200));
    net.tx.app_write(u64::MAX / 4);
    net.pump();
    while !net.tx.subflow_stats(1).stale {
        assert!(net.step() && net.now < ms(5_000));
    }
    let stale_at = net.now;
    net.dead_from[1] = None;
    let scheduled = net.tx.subflow_stats(1).bytes_scheduled;
    net.run_until(stale_at + Duration::from_secs(6));
    let s1 = net.tx.subflow_stats(1);
    assert!(!s1.stale, "an ACK advancing subflow 1 revives it");
    assert!(s1.bytes_scheduled > scheduled + 100 * M, "it gets new data again: {s1:?}");
}

/// Head-of-line blocking at the data level: one fast (5 ms) and one slow (100 ms) subflow
/// behind a 40 KB shared receive buffer. Data on the fast subflow waits for the slow one's in
/// the reassembly buffer (ReorderStats), the window caps what is outstanding at the buffer, and
/// the transfer is slower than with an unlimited buffer.
#[test]
fn a_slow_subflow_blocks_the_head_of_line_within_the_shared_window() {
    let run = |rcvbuf: Option<u64>| {
        let mut cfg = config(2, Scheduler::MinRtt);
        cfg.rcvbuf_bytes = rcvbuf;
        let mut net = Net::new(cfg, renos(2), &[rated(5, 50_000_000), rated(100, 50_000_000)], 11);
        let mut max_held = 0;
        net.tx.app_write(3_000_000);
        net.pump();
        while !net.tx.is_complete() {
            assert!(net.step() && net.now < ms(60_000));
            max_held = max_held.max(net.rx.held_bytes());
        }
        assert_eq!(net.delivered, 3_000_000);
        (net.now, net.max_outstanding, max_held, net.rx.reorder_stats())
    };
    let buf = 40_000;
    let (t_small, outstanding, held, reorder) = run(Some(buf));
    let (t_big, outstanding_big, _, reorder_big) = run(None);
    eprintln!("rcvbuf {buf}: done {t_small:?}, max outstanding {outstanding}, max held {held}, {reorder:?}");
    eprintln!("unlimited: done {t_big:?}, max outstanding {outstanding_big}, {reorder_big:?}");
    assert!(outstanding <= buf, "outstanding {outstanding} > buffer {buf}");
    assert!(held <= buf);
    assert!(outstanding_big > buf, "the unlimited run is not window-bound: {outstanding_big}");
    assert!(reorder.segments_delayed > 0);
    // A segment behind a slow-subflow gap waits about the paths' one-way difference.
    assert!(reorder.max_delay_ns >= 50_000_000, "{reorder:?}");
    assert!(reorder.total_delay_ns >= reorder.max_delay_ns);
    assert!(t_small > t_big, "a small shared buffer slows the transfer: {t_small:?} vs {t_big:?}");
}

#[test]
fn the_send_buffer_caps_outstanding_connection_data() {
    let mut cfg = config(3, Scheduler::MinRtt);
    cfg.sndbuf_bytes = Some(25_000);
    let mut net = Net::new(cfg, renos(3), &[clean(10), clean(20), clean(30)], 5);
    assert!(net.transfer(500_000, ms(20_000)));
    assert!(net.max_outstanding <= 25_000 && net.max_outstanding >= 20_000, "{}", net.max_outstanding);
}

/// Every coupling view lent: (the subflow it was lent to, the view).
type Seen = Arc<Mutex<Vec<(usize, Vec<SubflowView>)>>>;

/// Reno that records every coupling view it is lent.
#[derive(Debug)]
struct Recorder {
    inner: Box<dyn CongestionControl>,
    seen: Seen,
}

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.inner.cong_avoid(st, ack);
    }
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.inner.ssthresh(st, ev)
    }
    fn set_coupling_view(&mut self, subflows: &[SubflowView], me: usize) {
        self.seen.lock().unwrap().push((me, subflows.to_vec()));
    }
}

fn recorders(n: u8) -> (Vec<Box<dyn CongestionControl>>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let ccs = (0..n)
        .map(|_| {
            Box::new(Recorder { inner: new_controller("reno", &Params::default()).unwrap(), seen: seen.clone() })
                as Box<dyn CongestionControl>
        })
        .collect();
    (ccs, seen)
}

#[test]
fn coupled_controllers_are_lent_the_view_of_every_subflow() {
    let mut cfg = config(2, Scheduler::MinRtt);
    cfg.coupling = Coupling::Lia;
    cfg.join_delay = Duration::from_millis(100);
    let (ccs, seen) = recorders(2);
    let mut lossy = rated(10, 20_000_000);
    lossy.0.loss = 0.02;
    let mut net = Net::new(cfg, ccs, &[lossy, rated(30, 20_000_000)], 13);
    assert!(net.transfer(2_000_000, ms(30_000)));
    let seen = seen.lock().unwrap();
    assert!(seen.iter().any(|(me, _)| *me == 0) && seen.iter().any(|(me, _)| *me == 1));
    assert!(seen.iter().all(|(_, v)| v.len() == 2 && v.iter().all(|s| s.mss_bytes == M)));
    // Before subflow 1 joins, subflow 0's controller sees it inactive.
    assert!(!seen[0].1[1].active && seen[0].1[0].active);
    // Later views carry both windows and RTTs.
    let both = seen.iter().filter(|(_, v)| v.iter().all(|s| s.active && s.srtt.is_some())).count();
    assert!(both > 100, "{both} views with both subflows measured");
    let srtt0 = seen.iter().rev().find_map(|(_, v)| v[0].srtt).unwrap();
    let srtt1 = seen.iter().rev().find_map(|(_, v)| v[1].srtt).unwrap();
    assert!(srtt1 > srtt0, "the 30 ms path has the larger srtt: {srtt0:?} {srtt1:?}");
    assert!(seen.iter().any(|(_, v)| v[0].cwnd_bytes != v[1].cwnd_bytes));
    // The lossy subflow's congestion events close intervals of acknowledged bytes.
    assert!(net.tx.subflow(0).stats().fast_recoveries > 0);
    assert!(seen.iter().any(|(_, v)| v[0].acked_between_losses_bytes > 0));
    assert!(seen.iter().any(|(_, v)| v[0].acked_since_loss_bytes > v[0].acked_between_losses_bytes));
    // ℓ2 only grows between two views of the same subflow, unless a loss reset it.
    for w in seen.windows(2) {
        let (a, b) = (&w[0].1[1], &w[1].1[1]);
        assert!(b.acked_since_loss_bytes >= a.acked_since_loss_bytes || b.acked_between_losses_bytes > 0);
    }
}

#[test]
fn uncoupled_controllers_are_not_lent_a_view() {
    let (ccs, seen) = recorders(2);
    let mut net = Net::new(config(2, Scheduler::MinRtt), ccs, &[clean(10), clean(10)], 2);
    assert!(net.transfer(200_000, ms(10_000)));
    assert!(seen.lock().unwrap().is_empty());
}

/// The data-level receiver in explicit time: out-of-order data is held, duplicates (a
/// reinjection and the original) count once, the window shrinks by what is held and its right
/// edge never moves left, and each held segment's wait is recorded when the gap fills.
#[test]
fn receiver_reassembles_counts_duplicates_once_and_records_waits() {
    let mut cfg = config(2, Scheduler::MinRtt);
    cfg.rcvbuf_bytes = Some(10 * M);
    cfg.receiver.delayed_ack = Duration::ZERO;
    cfg.receiver.ack_every_segments = 1;
    let mut rx = MptcpReceiver::new(cfg);
    let seg = full_segment;
    // Subflow 1 brings DSN 2M and 3M; DSN 0 and M are on subflow 0, late.
    assert_eq!(rx.on_segment(ms(1), &seg(1, 0, 2 * M)), 0);
    assert_eq!(rx.on_segment(ms(2), &seg(1, M, 3 * M)), 0);
    assert_eq!(rx.held_bytes(), 2 * M);
    let acks: Vec<_> = std::iter::from_fn(|| rx.poll_ack(ms(2))).collect();
    assert_eq!(acks.last().unwrap().data_rwnd_bytes, 10 * M, "the right edge never moves left");
    assert!(acks.iter().all(|a| a.subflow == 1 && a.data_ack == 0));
    // A reinjected copy of DSN 3M on subflow 0 (its subflow seq 0): a duplicate, held once.
    assert_eq!(rx.on_segment(ms(3), &seg(0, 0, 3 * M)), 0);
    assert_eq!(rx.held_bytes(), 2 * M);
    assert_eq!(rx.duplicate_data_bytes(), M, "new on subflow 0, a duplicate at the data level");
    // DSN 0 on subflow 0: delivered alone (DSN M is still missing). The window is the buffer
    // less what is held (M + 10M − 2M), but the right edge stays at 10M.
    assert_eq!(rx.on_segment(ms(10), &seg(0, M, 0)), M);
    let a = std::iter::from_fn(|| rx.poll_ack(ms(10))).last().unwrap();
    assert_eq!((a.data_ack, a.data_rwnd_bytes), (M, 9 * M));
    // DSN M fills the gap: M, 2M, 3M delivered; the two held segments waited 20 and 19 ms.
    assert_eq!(rx.on_segment(ms(21), &seg(0, 2 * M, M)), 3 * M);
    assert_eq!(rx.data_rcv_nxt(), 4 * M);
    assert_eq!(rx.held_bytes(), 0);
    let r = rx.reorder_stats();
    assert_eq!(r.segments_delayed, 2);
    assert_eq!(r.max_delay_ns, 20_000_000);
    assert_eq!(r.total_delay_ns, 20_000_000 + 19_000_000);
    let last = std::iter::from_fn(|| rx.poll_ack(ms(21))).last().unwrap();
    assert_eq!((last.data_ack, last.data_rwnd_bytes), (4 * M, 10 * M));
    // Old data again: nothing delivered.
    assert_eq!(rx.on_segment(ms(30), &seg(1, 0, 2 * M)), 0);
    assert_eq!(rx.data_rcv_nxt(), 4 * M);
    // That one is a duplicate on its subflow too: counted there, not again here.
    assert_eq!(rx.subflow(1).stats().duplicate_bytes, M);
    assert_eq!(rx.duplicate_data_bytes(), M);
    // A reinjected copy overlapping delivered data, new on its subflow (seq 3M of subflow 0).
    assert_eq!(rx.on_segment(ms(31), &seg(0, 3 * M, 3 * M + M / 2)), M / 2);
    assert_eq!(rx.duplicate_data_bytes(), M + M / 2);
}

/// Opportunistic retransmission and penalisation (Raiciu et al., NSDI 2012, §4.2) in explicit
/// time. Round-robin, IW = 4 MSS, a shared buffer of 8 MSS: at 0 the chunks alternate, DSN 0,
/// 2, 4, 6 (× MSS) on subflow 0 and 1, 3, 5, 7 on subflow 1, and the window is full. Subflow 0
/// is fast (its ACKs return at 10 ms); subflow 1's are held back (it has no RTT sample: its RTT
/// counts as the initial RTO, 1 s). At 10 ms subflow 0 has room, the DATA_ACK is 1 MSS and the
/// window blocks new data: with the option, subflow 0 resends DSN 1 MSS (subflow 1's) and
/// subflow 1's cwnd is halved (4 → 2 MSS, ssthresh 2 MSS). At 20 ms the resent segment has
/// moved the DATA_ACK to 3 MSS; one new chunk fits, then the window blocks again and subflow 0
/// resends DSN 3 MSS, but subflow 1, penalised within its RTT, is not halved again. Without the
/// option nothing is resent and subflow 1 keeps its window.
#[test]
fn opportunistic_retransmission_resends_the_head_and_penalises_the_slow_subflow_once_per_rtt() {
    let run = |opportunistic: bool| {
        let mut cfg = config(2, Scheduler::RoundRobin);
        cfg.sender.initial_cwnd_bytes = 4 * M;
        cfg.receiver.delayed_ack = Duration::ZERO;
        cfg.receiver.ack_every_segments = 1;
        cfg.rcvbuf_bytes = Some(8 * M);
        cfg.opportunistic = opportunistic;
        let mut tx = MptcpSender::new(cfg, renos(2), SimTime::ZERO);
        let mut rx = MptcpReceiver::new(cfg);
        tx.app_write(100 * M);
        let first = drain(&mut tx, SimTime::ZERO);
        let placed: Vec<(u8, u64)> = first.iter().map(|d| (d.subflow, d.dsn / M)).collect();
        assert_eq!(placed, vec![(0, 0), (1, 1), (0, 2), (1, 3), (0, 4), (1, 5), (0, 6), (1, 7)]);
        // Subflow 0's segments arrive at 5 ms; their ACKs return at 10 ms. Subflow 1's are lost
        // from view (held back) for the whole test.
        let deliver = |rx: &mut MptcpReceiver, tx: &mut MptcpSender, segs: &[DssData], at: u64| {
            for d in segs.iter().filter(|d| d.subflow == 0) {
                rx.on_segment(ms(at - 5), d);
            }
            while let Some(a) = rx.poll_ack(ms(at - 5)) {
                if a.subflow == 0 {
                    let _ = tx.on_ack(ms(at), &a);
                }
            }
        };
        deliver(&mut rx, &mut tx, &first, 10);
        assert_eq!(tx.data_una(), M);
        assert_eq!(tx.data_nxt(), 8 * M);
        let at10 = drain(&mut tx, ms(10));
        let cwnd1_at10 = tx.subflow(1).cwnd().cwnd_bytes;
        let ssthresh1_at10 = tx.subflow(1).cwnd().ssthresh_bytes;
        let stats10 = (tx.subflow_stats(0), tx.subflow_stats(1));
        deliver(&mut rx, &mut tx, &at10, 20);
        let at20 = drain(&mut tx, ms(20));
        (at10, cwnd1_at10, ssthresh1_at10, stats10, at20, tx.subflow(1).cwnd().cwnd_bytes, tx, rx)
    };

    let (at10, cwnd1, ssthresh1, (s0, s1), at20, cwnd1_at20, tx, rx) = run(true);
    let sent10: Vec<(u8, u64, u32)> = at10.iter().map(|d| (d.subflow, d.dsn / M, d.seg.len)).collect();
    assert_eq!(sent10, vec![(0, 1, MSS)], "subflow 0 resends the segment at the DATA_ACK, once");
    assert_eq!((cwnd1, ssthresh1), (2 * M, 2 * M), "subflow 1 halved, ssthresh set to the new cwnd");
    assert_eq!((s0.opportunistic_retransmits, s0.opportunistic_bytes, s0.penalisations), (1, M, 0));
    assert_eq!((s1.opportunistic_retransmits, s1.penalisations), (0, 1));
    assert_eq!(s0.bytes_scheduled + s1.bytes_scheduled, 8 * M, "a resend is not new data");
    assert_eq!(rx.data_rcv_nxt(), 3 * M, "the resent DSN 1 filled the gap up to subflow 1's DSN 3");
    let sent20: Vec<(u8, u64)> = at20.iter().map(|d| (d.subflow, d.dsn / M)).collect();
    assert_eq!(sent20, vec![(0, 8), (0, 3)], "one new chunk fits the window, then DSN 3 is resent");
    assert_eq!(cwnd1_at20, 2 * M, "not penalised again within its RTT");
    let (s0, s1) = (tx.subflow_stats(0), tx.subflow_stats(1));
    assert_eq!((s0.opportunistic_retransmits, s1.penalisations), (2, 1));

    let (at10, cwnd1, _, (s0, s1), at20, cwnd1_at20, _, rx) = run(false);
    assert!(at10.is_empty(), "without the option the blocked window sends nothing: {at10:?}");
    assert!(at20.is_empty(), "{at20:?}");
    assert_eq!((cwnd1, cwnd1_at20), (4 * M, 4 * M));
    assert_eq!((s0.opportunistic_retransmits, s1.penalisations), (0, 0));
    assert_eq!(rx.data_rcv_nxt(), M);
}

/// The linux host's rules reach every subflow (each is a TCP connection of its own, RFC 8684
/// §3.2, as on Linux): its handshake's round trip is its first RTT sample — at once for subflow
/// 0, when it joins for subflow 1 — and its RTO follows Linux's rule, SRTT + an rttvar floored
/// at min_rto (`tests/linux_host.rs` checks the rule itself on a single-path sender).
#[test]
fn linux_rto_rule_and_handshake_samples_reach_every_subflow() {
    let mut cfg = config(2, Scheduler::MinRtt);
    cfg.join_delay = Duration::from_millis(100);
    let handshakes = [Duration::from_millis(40), Duration::from_millis(60)];
    let mut linux = MptcpSender::new(cfg, renos(2), ms(0));
    linux.set_rto_rule(ccarena_transport::rtt::RtoRule::Linux);
    linux.on_handshake_rtts(&handshakes, ms(0));
    let mut rfc = MptcpSender::new(cfg, renos(2), ms(0));
    rfc.on_handshake_rtts(&handshakes, ms(0));
    // Subflow 0: srtt 40 ms, rttvar 20 ms. Linux: 40 + max(20, 200) = 240 ms; RFC 6298:
    // max(200, 40 + 4·20) = 200 ms.
    assert_eq!(linux.subflow(0).srtt(), Some(Duration::from_millis(40)));
    assert_eq!(linux.subflow(0).rto(), Duration::from_millis(240));
    assert_eq!(rfc.subflow(0).rto(), Duration::from_millis(200));
    // Subflow 1 has no sample before it joins, and its own handshake's once it has.
    assert_eq!(linux.subflow(1).srtt(), None);
    linux.app_write(100 * M);
    drain(&mut linux, ms(99));
    assert_eq!(linux.subflow(1).srtt(), None, "not joined at 99 ms");
    drain(&mut linux, ms(100));
    assert!(linux.subflow_stats(1).joined);
    assert_eq!(linux.subflow(1).srtt(), Some(Duration::from_millis(60)));
    assert_eq!(linux.subflow(1).rto(), Duration::from_millis(260));
}

/// Quick-ACK mode on every subflow's receiver: with it, each of the first in-order segments of
/// a subflow is acknowledged at once; without it the first waits for a second segment or the
/// 40 ms delayed-ACK timer (RFC 5681 §4.2).
#[test]
fn quick_ack_mode_reaches_every_subflow_receiver() {
    let cfg = config(2, Scheduler::MinRtt);
    let seg = full_segment;
    let acks_after_each = |quickack: u32| -> Vec<usize> {
        let mut rx = MptcpReceiver::new(cfg);
        rx.set_quickack(quickack, None);
        [(0, 0, 0), (1, 0, M), (0, M, 2 * M), (1, M, 3 * M)]
            .iter()
            .enumerate()
            .map(|(k, &(sub, seq, dsn))| {
                let now = ms(1 + k as u64);
                let _ = rx.on_segment(now, &seg(sub, seq, dsn));
                std::iter::from_fn(|| rx.poll_ack(now)).count()
            })
            .collect()
    };
    assert_eq!(acks_after_each(16), vec![1, 1, 1, 1], "each segment acknowledged at once");
    // Without: each subflow's first segment waits, its second completes the pair.
    assert_eq!(acks_after_each(0), vec![0, 0, 1, 1]);
}
