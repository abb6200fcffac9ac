//! Traffic phase effects (Floyd & Jacobson, "On Traffic Phase Effects in Packet-Switched
//! Gateways", 1992). Two flows whose paths have equal rates and delays send their packets into a
//! shared DropTail queue on one fixed lattice of instants; in a simulator with no timing noise
//! their phases lock, so one flow's packets always find the queue full and the tail drop hits
//! them every time, retransmissions and timeout probes included, while the other never loses.
//! Linux hosts on the same network share it (measured on the kernel backend: a leaf-spine whose
//! links are all 20 Mbit/s, 1 ms, 50-packet queues; CUBIC 1.9 MB and Reno 2.9 MB in 2 s, no
//! RTO). With `link_jitter` the simulator's links forward with a random jitter within one
//! serialization time, which breaks the lock as the paper prescribes.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, run, tcp};

/// CUBIC and Reno (both with Linux's recovery, as a kernel twin has) from two hosts whose access
/// links run at the bottleneck's rate, through a 50-packet DropTail queue: equal paths, equal
/// starts, `link_jitter = 1`. Without jitter (the default, and the only behaviour before it
/// existed) CUBIC delivers 96 KB in 2 s with 3 RTOs: its packets reach the queue in the same
/// nanosecond as Reno's or just after them, every time, so nearly all of them are dropped.
#[test]
fn equal_paths_into_a_droptail_queue_do_not_lock_one_flow_out() {
    let mut d = Dumbbell::new(2, mbps(20), ms(1), 50);
    d.access_rate_bps = mbps(20);
    d.access_delay_ns = vec![ms(1); 2];
    d.access_queue_packets = 50;
    for seed in [1, 2, 3] {
        let flows = ["cubic", "reno"]
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut flow = tcp_flow(f, d.left(i), d.right(i), f);
                flow.recovery = "linux".into();
                tcp(flow)
            })
            .collect();
        let mut spec = d.spec(seed, secs(2), ms(100), flows);
        spec.link_jitter = Some(1.0);
        let res = run(spec);
        assert_conservation(&res);
        let delivered = res.flows.f64("bytes_delivered");
        let rtos = res.flows.f64("rto_count");
        let total = delivered[0] + delivered[1];
        println!("seed {seed}: cubic {} B ({} RTOs), reno {} B ({} RTOs)", delivered[0], rtos[0], delivered[1], rtos[1]);
        // Together they fill the link (20 Mbit/s for 2 s is 5 MB of wire; slow start and the
        // headers take some).
        assert!(total > 3.5e6, "seed {seed}: {total} B delivered in all");
        for (i, name) in ["cubic", "reno"].iter().enumerate() {
            assert!(delivered[i] > 0.2 * total, "seed {seed}: {name} got {} of {total} B", delivered[i]);
            assert!(rtos[i] <= 1.0, "seed {seed}: {name} took {} RTOs", rtos[i]);
        }
    }
}
