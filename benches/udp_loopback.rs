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
//!
//! Then the socket layer alone (`UDP_BENCH_IO_MB`, default 500 MB of 1472-byte datagrams, no
//! transport): the sending thread's CPU seconds per GB and its system calls for one `send_to` per
//! datagram, `sendmmsg` (64 datagrams a call), and `sendmmsg` with UDP GSO
//! ([`ccarena_udp::batch`]), each to a reader draining with `recv_from` or `recvmmsg` (+ GRO for
//! the GSO case); what the reader got is printed (a reader that falls behind drops, as a
//! full socket buffer does).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use ccarena_udp::batch::{self, RecvBatch, SendQueue};
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

/// How the socket-layer run sends and reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Io {
    /// One `send_to`/`recv_from` per datagram.
    Plain,
    /// `sendmmsg`/`recvmmsg`.
    Mmsg,
    /// `sendmmsg` with UDP GSO, `recvmmsg` with UDP GRO.
    Gso,
}

/// Send `mb` MB of 1472-byte datagrams over loopback the `io` way: the sender thread's CPU
/// seconds, its system calls, and the datagrams the reader got.
fn socket_layer(io: Io, mb: usize) -> (f64, usize, usize, u64) {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    const DGRAM: usize = 1472;
    let n = mb * 1_000_000 / DGRAM;
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = rx.local_addr().unwrap();
    tx.connect(to).unwrap();
    for s in [&rx, &tx] {
        batch::set_int_option(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
        batch::set_int_option(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 8 << 20);
    }
    if io == Io::Gso {
        batch::set_int_option(rx.as_raw_fd(), libc::SOL_UDP, libc::UDP_GRO, 1);
    }
    rx.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
    let reader = thread::spawn(move || {
        let mut got = 0u64;
        let mut buf = vec![0u8; 65_536];
        let mut b = RecvBatch::new(batch::MAX_MESSAGES, if io == Io::Gso { batch::GRO_SLOT_BYTES } else { DGRAM + 1 });
        loop {
            if io == Io::Plain {
                match rx.recv(&mut buf) {
                    Ok(_) => got += 1,
                    Err(_) => return got,
                }
            } else {
                // Block for the first, then take what is waiting.
                match rx.peek(&mut buf[..1]) {
                    Ok(_) => {}
                    Err(_) => return got,
                }
                batch::recv_batch(rx.as_raw_fd(), &mut b).unwrap();
                got += b.iter().count() as u64;
            }
        }
    });
    let payload = vec![7u8; DGRAM];
    let c = thread_cpu_s();
    let mut calls = 0;
    match io {
        Io::Plain => {
            for _ in 0..n {
                let _ = tx.send(&payload);
                calls += 1;
            }
        }
        Io::Mmsg | Io::Gso => {
            tx.set_nonblocking(true).unwrap();
            let mut gso = io == Io::Gso;
            let mut q = SendQueue::default();
            let mut left = n;
            while left > 0 {
                q.clear();
                for _ in 0..left.min(batch::MAX_MESSAGES) {
                    q.push(&payload, to);
                }
                left -= q.len();
                calls += batch::send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap().calls;
            }
        }
    }
    let cpu = thread_cpu_s() - c;
    (cpu, calls, n, reader.join().unwrap())
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

    let io_mb: usize = std::env::var("UDP_BENCH_IO_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    for io in [Io::Plain, Io::Mmsg, Io::Gso] {
        let (cpu, calls, sent, got) = socket_layer(io, io_mb);
        println!(
            "socket layer, {io:?}: sender {:.3} CPU s/GB ({:.2} µs a datagram), {calls} system calls for {sent} \
             datagrams; the reader got {got}",
            cpu / (io_mb as f64 / 1000.0),
            cpu / sent as f64 * 1e6,
        );
    }
}
