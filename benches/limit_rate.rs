//! `ccarena send --limit-rate` on loopback: the goodput against the cap and the sender's CPU per
//! Mbit/s, on a quiet machine and with one core kept busy (issue 29, item 6: within 3 % of the
//! cap at 50, 100 and 200 Mbit/s, and no more CPU per Mbit/s than an unlimited transfer). No
//! assertions — the figures are for people and the note.
//!
//! `cargo bench -p ccarena-udp --bench limit_rate` sends a file through `send_file` to a
//! `Receiver` in another thread of this process, for each cap of `LIMIT_BENCH_RATES` (Mbit/s,
//! default `0,50,100,200`; 0: no limit), `LIMIT_BENCH_REPEATS` times (default 3), each transfer
//! about `LIMIT_BENCH_SECONDS` long at its cap (default 4; the unlimited one moves 400 MB), first
//! quiet, then with `yes > /dev/null` running (`LIMIT_BENCH_BUSY=0` skips it, `=only` runs only
//! it). Printed per cap: the median goodput and its range over the repeats, as a fraction of the
//! cap, and the sender's MHz per Mbit/s (the record's: the sending thread's CPU over the
//! transfer, `getrusage(RUSAGE_THREAD)`, times the clock, over the goodput — seed 001's figure).
//! The transfer duration runs from the first DATA to the last ACK, so the goodput is what the
//! receiver got over that time.
//!
//! An unlimited transfer's figure on loopback is measured at 1–2 Gbit/s, where the costs a
//! sender pays per wake-up rather than per packet vanish. For the figure of an unlimited sender
//! that something else holds to a rate, `LIMIT_BENCH_UNCAPPED=1` sends each file (still sized for
//! its listed rate) without `--limit-rate`, and `LIMIT_BENCH_RWND_BYTES` sets the receiver's
//! window; run it where loopback itself is held to the rate, e.g. in a network namespace of its
//! own: `unshare -n sh -c 'ip link set lo up; tc qdisc add dev lo root tbf rate 52mbit burst 64kb
//! latency 400ms; LIMIT_BENCH_UNCAPPED=1 LIMIT_BENCH_RATES=50 LIMIT_BENCH_RWND_BYTES=262144
//! LIMIT_BENCH_BUSY=0 limit_rate-…'` (the cap column then shows the listed rate for reference).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use ccarena_udp::{send_file, Receiver, ReceiverOptions, SendOptions, TransferRecord};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A file of `mb` MB of pseudo-random bytes under `dir`.
fn make_file(dir: &Path, mb: usize) -> PathBuf {
    let path = dir.join(format!("limit-{mb}.bin"));
    let mut data = vec![0u8; mb * 1_000_000];
    let mut x = 1u64;
    for chunk in data.chunks_mut(8) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(&path, &data).unwrap();
    path
}

/// One transfer of `file` with `max_rate_bps` to a fresh receiver in another thread advertising
/// `rwnd_bytes` (`None`: the receiver's default).
fn transfer(file: &Path, dst: &Path, max_rate_bps: Option<u64>, rwnd_bytes: Option<u64>) -> TransferRecord {
    std::fs::create_dir_all(dst).unwrap();
    let mut ropts = ReceiverOptions::default();
    if let Some(r) = rwnd_bytes {
        ropts.rcvbuf_bytes = r;
    }
    let mut rx = Receiver::bind("127.0.0.1:0", dst, ropts).unwrap();
    let addr = rx.local_addr().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let server = thread::spawn(move || rx.serve(false, &mut |_| !s.load(Ordering::Relaxed)).unwrap());
    let opts = SendOptions { max_rate_bps, ..SendOptions::default() };
    let rec = send_file(file, &addr, &opts, &mut |_| true).unwrap();
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    let _ = std::fs::remove_dir_all(dst);
    rec
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `yes > /dev/null`: one core kept busy until killed.
fn busy() -> Child {
    Command::new("yes").stdout(Stdio::null()).spawn().expect("yes")
}

fn main() {
    let rates: Vec<u64> = std::env::var("LIMIT_BENCH_RATES")
        .unwrap_or_else(|_| "0,50,100,200".into())
        .split(',')
        .map(|r| r.trim().parse().expect("LIMIT_BENCH_RATES: Mbit/s, comma-separated"))
        .collect();
    let repeats: usize = env("LIMIT_BENCH_REPEATS", 3).max(1);
    let seconds: f64 = env("LIMIT_BENCH_SECONDS", 4.0);
    let busy_mode = std::env::var("LIMIT_BENCH_BUSY").unwrap_or_else(|_| "1".into());
    let uncapped = std::env::var("LIMIT_BENCH_UNCAPPED").is_ok_and(|v| v == "1");
    let rwnd_bytes: Option<u64> = std::env::var("LIMIT_BENCH_RWND_BYTES").ok().and_then(|v| v.parse().ok());
    let base = std::env::temp_dir().join(format!("ccarena-limit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    let modes: &[bool] = match busy_mode.as_str() {
        "0" => &[false],
        "only" => &[true],
        _ => &[false, true],
    };
    println!("cap Mbit/s | machine | goodput Mbit/s: median (range) | of the cap | sender MHz per Mbit/s: median (range)");
    for &loaded in modes {
        let mut load = loaded.then(busy);
        for &mbps in &rates {
            let mb = if mbps == 0 { 400 } else { ((mbps as f64 * seconds / 8.0) as usize).max(1) };
            let file = make_file(&base, mb);
            let (mut goodput, mut mhz) = (Vec::new(), Vec::new());
            for i in 0..repeats {
                let cap = (mbps > 0 && !uncapped).then_some(mbps * 1_000_000);
                let rec = transfer(&file, &base.join(format!("dst-{i}")), cap, rwnd_bytes);
                goodput.push(rec.goodput_bps / 1e6);
                mhz.push(rec.mhz_per_mbps);
            }
            let _ = std::fs::remove_file(&file);
            let range = |v: &[f64], digits: usize| {
                let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                format!("{lo:.digits$}–{hi:.digits$}")
            };
            let (g_range, m_range) = (range(&goodput, 1), range(&mhz, 2));
            let g = median(&mut goodput);
            let of_cap = if mbps == 0 { "—".to_string() } else { format!("{:.1} %", g / mbps as f64 * 100.0) };
            let cap = match (mbps, uncapped) {
                (0, _) => "none".to_string(),
                (_, true) => format!("({mbps})"),
                _ => mbps.to_string(),
            };
            println!(
                "{cap:>10} | {:<7} | {g:8.1} ({g_range}) | {of_cap:>8} | {:.2} ({m_range})",
                if loaded { "busy" } else { "quiet" },
                median(&mut mhz),
            );
        }
        if let Some(mut child) = load.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}
