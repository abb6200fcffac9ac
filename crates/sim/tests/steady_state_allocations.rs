//! No allocation per packet or per ACK once a run is in steady state (issue 35, item 2): the
//! engine's queues, pipes, scoreboards and box pools reach their working size during start-up
//! and are reused after; a change that allocates on the per-packet path (a boxed ACK not
//! returned to its pool, a scratch vector built per ACK) shows here as thousands of
//! allocations where there are a handful.
//!
//! Allocations are counted per thread by a counting global allocator around the system's, so
//! tests running beside this one in the same process do not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ccarena_cc::SimTime;
use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{mbps, ms, mptcp_flow, quic_flow, secs, tcp_flow, udt_flow, Dumbbell};
use ccarena_sim::Simulation;

thread_local! {
    /// Allocations and reallocations made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated less bytes freed by this thread.
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

/// The system allocator, counting each `alloc` and `realloc` of the calling thread and the
/// bytes it holds.
struct Counting;

fn count(grown_bytes: i64) {
    // `try_with`: a thread being torn down may still allocate after its counter is gone.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    held(grown_bytes);
}

fn held(grown_bytes: i64) {
    let _ = LIVE_BYTES.try_with(|n| n.set(n.get() + grown_bytes));
}

// SAFETY: every call is passed unchanged to `System`, which upholds GlobalAlloc's contract.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        held(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn live_bytes() -> i64 {
    LIVE_BYTES.with(Cell::get)
}

/// Packets lost so far, all flows.
fn lost_packets(sim: &mut Simulation) -> f64 {
    sim.results().flows.f64("packets_lost").iter().sum()
}

/// Allocations made while a run of `flows` on `d` goes from 10 s to 30 s, the bottleneck packets
/// sent meanwhile, and the packets lost meanwhile (the queue must overflow for loss recovery to
/// run).
fn steady_state(d: &Dumbbell, flows: Vec<FlowSpec>) -> (u64, u64, f64) {
    let mut sim = Simulation::new(d.spec(3, secs(30), ms(100), flows)).expect("valid spec");
    sim.run_until(SimTime(secs(10)));
    let lost_before = lost_packets(&mut sim);
    let (allocs_before, packets_before) = (allocations(), sim.links()[d.bottleneck_link()].counters().departures);
    sim.run_until(SimTime(secs(30)));
    let allocs = allocations() - allocs_before;
    let packets = sim.links()[d.bottleneck_link()].counters().departures - packets_before;
    let lost = lost_packets(&mut sim) - lost_before;
    assert!(packets > 150_000, "the bottleneck sent only {packets} packets in 20 s");
    assert!(lost > 100.0, "the queue overflowed too rarely ({lost} packets lost): loss recovery was not exercised");
    (allocs, packets, lost)
}

/// Seven TCP flows (CUBIC, Reno, BBR, Vegas) share a 100 Mbit/s, 20 ms dumbbell whose 300-packet DropTail queue overflows again and again (loss recovery,
/// RACK, timers and delayed ACKs all run). From 10 s to 30 s the bottleneck sends over 150,000
/// packets; the run may allocate now and then as a window or a histogram reaches a new high
/// (50 times here), never once per packet, per ACK or per loss (about 20 times as many): at
/// most one allocation per 1,000 bottleneck packets.
#[test]
fn tcp_flows_in_steady_state_allocate_nothing_per_packet() {
    let flavors = ["cubic", "reno", "bbr", "vegas", "cubic", "reno", "bbr"];
    let d = Dumbbell::new(flavors.len(), mbps(100), ms(20), 300);
    let flows = flavors.iter().enumerate().map(|(i, f)| FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), d.left(i), d.right(i), f))).collect();
    let (allocs, packets, _) = steady_state(&d, flows);
    assert!(allocs * 1_000 <= packets, "{allocs} allocations for {packets} bottleneck packets in steady state");
}

/// QUIC (over CUBIC and over BBR), MPTCP (2-subflow LIA and OLIA connections) and UDT on the same
/// dumbbell. These allocate in proportion to loss, not to packets: a dropped QUIC or MPTCP
/// packet frees its boxed header, so the next packet sent allocates one, and UDT's receiver
/// holds out-of-order packets in a B-tree whose nodes come and go with the holes (about one
/// allocation per packet lost here). At most two per packet lost; an allocation per ACK or per
/// data packet (UDT's ACKs were boxed anew, and its arrival-speed filter collected a vector per
/// ACK: one allocation per 3 packets) is far over it.
#[test]
fn multipath_quic_and_udt_flows_allocate_only_per_loss() {
    let d = Dumbbell::new(5, mbps(100), ms(20), 300);
    let flows = vec![
        FlowSpec::Tcp(quic_flow("quic", d.left(0), d.right(0), "cubic")),
        FlowSpec::Tcp(quic_flow("quic-bbr", d.left(1), d.right(1), "bbr")),
        FlowSpec::Tcp(mptcp_flow("mptcp", d.left(2), d.right(2), "reno", 2, "lia")),
        FlowSpec::Tcp(mptcp_flow("mptcp2", d.left(3), d.right(3), "reno", 2, "olia")),
        FlowSpec::Udt(udt_flow("udt", d.left(4), d.right(4))),
    ];
    let (allocs, packets, lost) = steady_state(&d, flows);
    assert!(allocs as f64 <= 2.0 * lost, "{allocs} allocations for {lost} packets lost ({packets} bottleneck packets) in steady state");
}

/// The memory a run holds stays flat in steady state: what a sender keeps per segment goes
/// when the segment is acknowledged. A sender kept, for the rest of the run, an entry per
/// segment sent in RACK's send-order list when it did not run RACK (textbook Tahoe, Reno and
/// NewReno recovery, MPTCP's Reno subflows: 16 bytes per segment, 34 MB per simulated second
/// of a k = 4 fat-tree at 10 Gbit/s), and an entry per retransmission in RFC 6675's
/// retransmission list when it did not run RFC 6675's rules (RACK and the recoveries without
/// SACK). Here 3% random loss on the bottleneck keeps every flow retransmitting; from 10 s to
/// 30 s the run held 276 KB more with both lists, 112 KB with the second alone, 9 KB with
/// neither. Samples are taken only at the end, so none is held between 10 s and 30 s.
#[test]
fn memory_held_stays_flat_in_steady_state() {
    let flavors = ["tahoe", "reno", "newreno", "cubic", "bbr"];
    let mut d = Dumbbell::new(flavors.len() + 1, mbps(100), ms(20), 300);
    d.bottleneck_loss = 0.03;
    let mut flows: Vec<FlowSpec> = flavors.iter().enumerate().map(|(i, f)| FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), d.left(i), d.right(i), f))).collect();
    let m = flavors.len();
    flows.push(FlowSpec::Tcp(mptcp_flow("mptcp", d.left(m), d.right(m), "reno", 2, "lia")));
    let mut sim = Simulation::new(d.spec(3, secs(40), secs(40), flows)).expect("valid spec");
    sim.run_until(SimTime(secs(10)));
    let (live_before, packets_before) = (live_bytes(), sim.links()[d.bottleneck_link()].counters().departures);
    sim.run_until(SimTime(secs(30)));
    let grown = live_bytes() - live_before;
    let packets = sim.links()[d.bottleneck_link()].counters().departures - packets_before;
    assert!(packets > 100_000, "the bottleneck sent only {packets} packets in 20 s");
    assert!(grown < 48 * 1024, "the run holds {grown} bytes more after {packets} more bottleneck packets");
}

/// A finished transfer gives back the storage of its largest window: its sender's lists and
/// its header boxes kept that capacity to the end of the run, which a data-center run of many
/// short flows paid for every flow. Per finished 200 KB flow (1,000 of them, one starting each
/// millisecond, all done well before the end), held before and after: TCP (CUBIC) 9.2 and
/// 3.8 KB, QUIC 10.2 and 5.0 KB, MPTCP (two LIA subflows) 22.4 and 12.2 KB.
#[test]
fn finished_flows_give_back_their_window_storage() {
    let n = 1000;
    for (kind, most_bytes) in [("tcp", 6 * 1024), ("quic", 7 * 1024), ("mptcp", 16 * 1024)] {
        let d = Dumbbell::new(2, mbps(1000), ms(5), 300);
        let flows: Vec<FlowSpec> = (0..n)
            .map(|i| {
                let (name, src, dst) = (format!("f{i}"), d.left(i % 2), d.right(i % 2));
                let mut f = match kind {
                    "tcp" => tcp_flow(&name, src, dst, "cubic"),
                    "quic" => quic_flow(&name, src, dst, "cubic"),
                    _ => mptcp_flow(&name, src, dst, "reno", 2, "lia"),
                };
                f.bytes = Some(200_000);
                f.start_ns = ms(1) * i as u64;
                FlowSpec::Tcp(f)
            })
            .collect();
        let before = live_bytes();
        let mut sim = Simulation::new(d.spec(3, secs(10), secs(10), flows)).expect("valid spec");
        sim.run_until(SimTime(secs(9)));
        let completed = sim.results().flows.f64("completion_time_s").iter().filter(|v| v.is_finite()).count();
        assert_eq!(completed, n, "every {kind} flow finishes before the end");
        let per_flow = (live_bytes() - before) / n as i64;
        assert!(per_flow < most_bytes, "a finished {kind} flow holds {per_flow} bytes");
    }
}
