//! Unshaped loopback goodput and CPU cost of ccarena's transport on UDP (issue 14, item 5's
//! loopback figure; no assertions — the figures are for people and the note).
//!
//! `cargo bench -p ccarena-udp --bench udp_loopback` sends one file (`UDP_BENCH_MB`, default
//! 200 MB, in the system temp dir) through `send_file` to a `Receiver` in another thread of this
//! process, per flavor (`UDP_BENCH_FLAVORS`, default `cubic,reno,bbr`), and prints: goodput,
//! retransmissions, RTT p50/p99, and each side's CPU seconds per GB moved (the thread's own CPU
//! time, `CLOCK_THREAD_CPUTIME_ID`, user + system: syscalls included, the kernel's softirq work
//! for loopback delivery partly charged to whichever thread triggered it). The sender's figure
//! includes hashing the file once (SHA-256) and the receiver's hashing it at the end; the SHA-256
//! cost alone is printed first so it can be taken out.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use ccarena_udp::sha256::sha256_of;
use ccarena_udp::{send_file, Receiver, ReceiverOptions, SendOptions};

/// This thread's CPU time (user + system), seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc_timespec();
    // SAFETY: a valid timespec pointer for clock_gettime.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn libc_timespec() -> libc::timespec {
    libc::timespec { tv_sec: 0, tv_nsec: 0 }
}

fn main() {
    let mb: usize = std::env::var("UDP_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let flavors = std::env::var("UDP_BENCH_FLAVORS").unwrap_or_else(|_| "cubic,reno,bbr".into());
    let base = std::env::temp_dir().join(format!("ccarena-udp-bench-{}", std::process::id()));
    let src_dir = base.join("src");
    std::fs::create_dir_all(&src_dir).unwrap();
    let file: PathBuf = src_dir.join("bench.bin");
    let mut data = vec![0u8; mb * 1_000_000];
    let mut x = 1u64;
    for chunk in data.chunks_mut(8) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    std::fs::write(&file, &data).unwrap();
    drop(data);
    let gb = mb as f64 / 1000.0;

    let c0 = thread_cpu_s();
    let t0 = Instant::now();
    sha256_of(std::fs::File::open(&file).unwrap()).unwrap();
    println!(
        "sha256 alone: {:.2} CPU s/GB ({:.0} MB/s)",
        (thread_cpu_s() - c0) / gb,
        mb as f64 / t0.elapsed().as_secs_f64()
    );

    for flavor in flavors.split(',') {
        let dst = base.join(format!("dst-{flavor}"));
        std::fs::create_dir_all(&dst).unwrap();
        let mut rx = Receiver::bind("127.0.0.1:0", &dst, ReceiverOptions::default()).unwrap();
        let addr = rx.local_addr().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let server = thread::spawn(move || {
            let c = thread_cpu_s();
            rx.serve(false, &mut |_| !s.load(Ordering::Relaxed)).unwrap();
            thread_cpu_s() - c
        });
        let opts = SendOptions { flavor: flavor.to_string(), ..SendOptions::default() };
        let c = thread_cpu_s();
        let t = Instant::now();
        let rec = send_file(&file, &addr, &opts, &mut |_| true).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let sender_cpu = thread_cpu_s() - c;
        stop.store(true, Ordering::Relaxed);
        let receiver_cpu = server.join().unwrap();
        println!(
            "{flavor:>6}: {:.0} Mbit/s goodput ({:.2} s transfer, {:.2} s wall with hashing), \
             {} retransmissions, RTT p50 {:.2} ms p99 {:.2} ms; CPU per GB: sender {:.2} s, \
             receiver {:.2} s (both with SHA-256)",
            rec.goodput_bps / 1e6,
            rec.duration_s,
            wall,
            rec.retransmissions,
            rec.rtt.p50_ms,
            rec.rtt.p99_ms,
            sender_cpu / gb,
            receiver_cpu / gb,
        );
        let _ = std::fs::remove_dir_all(&dst);
    }
    let _ = std::fs::remove_dir_all(&base);
}
