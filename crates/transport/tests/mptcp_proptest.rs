//! MPTCP reliability under faults (RFC 8684 §3.3): for 1–4 subflows with random one-way
//! delays, loss both ways (0–10 %), reordering, a random join delay, scheduler, recovery mode,
//! shared receive buffer and send buffer, and (with two or more subflows) one subflow whose path
//! goes down mid-transfer, the connection completes and its receiver delivers every byte
//! exactly once, in order, and only bytes some segment carried (checked by `mptcp_net` as it
//! runs, with the DSS mapping of every retransmission and the connection window).

use crate::support;

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::mptcp::Scheduler;
use ccarena_transport::RecoveryMode;
use crate::mptcp_net::{config, renos, Net};
use proptest::prelude::*;
use crate::support::LinkCfg;

/// Generous bound on simulated time: 10 % loss both ways with RTO backoffs capped at 4 s.
const LIMIT: SimTime = SimTime(2_000 * 1_000_000_000);

#[derive(Clone, Debug)]
struct Path {
    delay_ms: u64,
    loss_fwd: f64,
    loss_rev: f64,
    reorder: f64,
    reorder_extra_ms: u64,
}

#[derive(Clone, Debug)]
struct Case {
    bytes: u64,
    paths: Vec<Path>,
    round_robin: bool,
    recovery: RecoveryMode,
    join_delay_ms: u64,
    rcvbuf: Option<u64>,
    sndbuf: Option<u64>,
    /// (subflow, time in ms) whose path drops everything from then on.
    dies: Option<(usize, u64)>,
    seed: u64,
}

fn path() -> impl Strategy<Value = Path> {
    (1u64..80, 0.0..0.1f64, 0.0..0.1f64, 0.0..0.3f64, 0u64..30).prop_map(
        |(delay_ms, loss_fwd, loss_rev, reorder, reorder_extra_ms)| Path {
            delay_ms,
            loss_fwd,
            loss_rev,
            reorder,
            reorder_extra_ms,
        },
    )
}

fn case() -> impl Strategy<Value = Case> {
    (
        1u64..1_000_000,
        prop::collection::vec(path(), 1..=4),
        any::<bool>(),
        prop::sample::select(vec![RecoveryMode::Linux, RecoveryMode::Sack, RecoveryMode::NewReno]),
        0u64..200,
        prop::option::of(8_000u64..200_000),
        prop::option::of(8_000u64..200_000),
        (any::<bool>(), 0usize..4, 0u64..800),
        any::<u64>(),
    )
        .prop_map(|(bytes, paths, round_robin, recovery, join_delay_ms, rcvbuf, sndbuf, (die, who, at), seed)| {
            let dies = (die && paths.len() > 1).then(|| (who % paths.len(), at));
            Case { bytes, paths, round_robin, recovery, join_delay_ms, rcvbuf, sndbuf, dies, seed }
        })
}

fn link(delay_ms: u64, loss: f64, p: &Path) -> LinkCfg {
    LinkCfg {
        delay: Duration::from_millis(delay_ms),
        rate_bps: None,
        queue_limit: None,
        loss,
        reorder: p.reorder,
        reorder_extra: Duration::from_millis(p.reorder_extra_ms),
        dup: 0.0,
    }
}

fn run(c: Case) {
    let n = c.paths.len() as u8;
    let mut cfg = config(n, if c.round_robin { Scheduler::RoundRobin } else { Scheduler::MinRtt });
    cfg.sender.recovery = c.recovery;
    cfg.receiver = support::receiver_cfg_for(c.recovery);
    cfg.join_delay = Duration::from_millis(c.join_delay_ms);
    cfg.rcvbuf_bytes = c.rcvbuf;
    cfg.sndbuf_bytes = c.sndbuf;
    let paths: Vec<(LinkCfg, LinkCfg)> =
        c.paths.iter().map(|p| (link(p.delay_ms, p.loss_fwd, p), link(p.delay_ms, p.loss_rev, p))).collect();
    let mut net = Net::new(cfg, renos(n), &paths, c.seed);
    if let Some((i, at_ms)) = c.dies {
        net.dead_from[i] = Some(SimTime(at_ms * 1_000_000));
    }
    assert!(net.transfer(c.bytes, LIMIT), "incomplete at {:?}: data_una {} of {}", net.now, net.tx.data_una(), c.bytes);
    assert_eq!(net.delivered, c.bytes, "every byte delivered once");
    assert_eq!(net.rx.data_rcv_nxt(), c.bytes);
    // Every byte received is delivered once or counted as a duplicate once, at the subflow
    // level or at the data level.
    let received: u64 = (0..n as usize).map(|i| net.rx.subflow(i).stats().bytes_received).sum();
    let sub_dups: u64 = (0..n as usize).map(|i| net.rx.subflow(i).stats().duplicate_bytes).sum();
    assert_eq!(received, c.bytes + sub_dups + net.rx.duplicate_data_bytes());
    let scheduled: u64 = (0..n as usize).map(|i| net.tx.subflow_stats(i).bytes_scheduled).sum();
    assert_eq!(scheduled, c.bytes, "every DSN handed out as new data exactly once");
    if let Some(b) = c.sndbuf {
        assert!(net.max_outstanding <= b);
    }
    if let Some(b) = c.rcvbuf {
        assert!(net.max_outstanding <= b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_byte_arrives_once_in_order(c in case()) { run(c) }
}
