//! Transfers over loopback: byte-exact for several flavors, on a lossy/reordering/duplicating
//! path (the `Impaired` shim at both ends), resume after an interruption, refusals.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use ccarena_udp::sha256::{hex, sha256_of};
use ccarena_udp::{send_file, Counters, Event, Impairment, Receiver, ReceiverOptions, SendOptions, TransferError, TransferRecord};

use crate::common::tempdir;

/// A file of `bytes` pseudo-random bytes (SplitMix64).
fn make_file(dir: &Path, name: &str, bytes: usize) -> PathBuf {
    let mut x = bytes as u64;
    let mut data = Vec::with_capacity(bytes + 8);
    while data.len() < bytes {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        data.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    data.truncate(bytes);
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn digest(p: &Path) -> String {
    hex(&sha256_of(std::fs::File::open(p).unwrap()).unwrap())
}

/// A receiver serving `dir` on an ephemeral loopback port in a thread until stopped.
struct Server {
    addr: String,
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<Counters>>,
}

impl Server {
    fn start(dir: &Path, opts: ReceiverOptions) -> Server {
        let mut rx = Receiver::bind("127.0.0.1:0", dir, opts).unwrap();
        let addr = rx.local_addr().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = thread::spawn(move || {
            rx.serve(false, &mut |_e: &Event<'_>| !s.load(Ordering::Relaxed)).unwrap();
            rx.counters()
        });
        Server { addr, stop, handle: Some(handle) }
    }

    fn stop(mut self) -> Counters {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

fn send(path: &Path, addr: &str, opts: &SendOptions) -> Result<TransferRecord, TransferError> {
    send_file(path, addr, opts, &mut |_| true)
}

#[test]
fn byte_exact_for_reno_cubic_and_bbr() {
    let src = tempdir("exact-src");
    let dst = tempdir("exact-dst");
    let file = make_file(&src, "ten.bin", 10_000_000);
    let server = Server::start(&dst, ReceiverOptions::default());
    for flavor in ["reno", "cubic", "bbr"] {
        let opts = SendOptions { flavor: flavor.into(), name: Some(format!("{flavor}.bin")), ..SendOptions::default() };
        let rec = send(&file, &server.addr, &opts).unwrap();
        assert_eq!(rec.stream_bytes, 10_000_000, "{flavor}");
        assert_eq!(digest(&dst.join(format!("{flavor}.bin"))), digest(&file), "{flavor}");
        assert!(rec.rtt.samples > 0 && rec.rtt.p50_ms > 0.0, "{flavor}: {:?}", rec.rtt);
        assert!(!rec.cwnd_samples.is_empty(), "{flavor}");
        eprintln!("{flavor}: {:.1} Mbit/s, {} retransmissions", rec.goodput_bps / 1e6, rec.retransmissions);
    }
    let c = server.stop();
    assert_eq!(c.completed, 3);
    assert_eq!(c.failed, 0);
}

#[test]
fn byte_exact_with_ten_percent_loss_reordering_and_duplication() {
    let src = tempdir("lossy-src");
    let dst = tempdir("lossy-dst");
    let file = make_file(&src, "lossy.bin", 2_000_000);
    let imp = |seed| Impairment { loss: 0.10, duplicate: 0.02, reorder: 0.02, seed };
    let server = Server::start(&dst, ReceiverOptions { impairment: Some(imp(1)), ..ReceiverOptions::default() });
    for (i, flavor) in ["cubic", "bbr"].iter().enumerate() {
        let opts = SendOptions {
            flavor: flavor.to_string(),
            name: Some(format!("{flavor}.bin")),
            impairment: Some(imp(10 + i as u64)),
            // The handshake itself crosses the lossy path.
            handshake_timeout: std::time::Duration::from_secs(10),
            // Loopback's RTT is ~0.1 ms: a 20 ms floor keeps the lost retransmissions' timeouts
            // from dominating the test's run time.
            min_rto: std::time::Duration::from_millis(20),
            ..SendOptions::default()
        };
        let rec = send(&file, &server.addr, &opts).unwrap();
        eprintln!("{flavor}: {:.2} s, {} retransmissions, {} RTOs", rec.duration_s, rec.retransmissions, rec.rto_count);
        assert_eq!(digest(&dst.join(format!("{flavor}.bin"))), digest(&file), "{flavor}");
        // About a tenth of the data was lost and had to be sent again.
        assert!(rec.retransmissions as f64 > 0.05 * (2_000_000.0 / 1400.0), "{flavor}: {rec:?}");
    }
    let c = server.stop();
    assert_eq!(c.completed, 2);
    // Duplicated DATA is caught by the anti-replay window before the transport sees it.
    assert!(c.replayed > 0, "{c:?}");
}

#[test]
fn the_last_ack_leaves_before_the_receiver_hashes_the_file() {
    // The receiver hashes the whole file once the last byte is in; its ACK of that byte used to
    // wait in the batching socket's queue until after the hash, and the sender counted the hash
    // (0.05-0.2 s for 64 MB here) into its transfer time. The sender's transfer (ACCEPT to last
    // ACK) must now end within half the hash time of the receiver's (ACCEPT to last byte); the
    // best of three, as the VM stalls now and then.
    let src = tempdir("lastack-src");
    let dst = tempdir("lastack-dst");
    let file = make_file(&src, "big.bin", 64_000_000);
    let t = std::time::Instant::now();
    digest(&file);
    let hash_s = t.elapsed().as_secs_f64();
    let mut rx = Receiver::bind("127.0.0.1:0", &dst, ReceiverOptions { force: true, ..ReceiverOptions::default() }).unwrap();
    let addr = rx.local_addr().to_string();
    let (tx_rec, rx_rec) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let server = thread::spawn(move || {
        rx.serve(false, &mut |e: &Event<'_>| match e {
            Event::Finished(r) => tx_rec.send(r.duration_s).is_ok(),
            Event::Failed { reason, .. } => panic!("{reason}"),
            _ => !s2.load(Ordering::Relaxed),
        })
    });
    let mut gaps = Vec::new();
    for _ in 0..3 {
        let sent = send(&file, &addr, &SendOptions::default()).unwrap();
        let received_s = rx_rec.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        gaps.push(sent.duration_s - received_s);
        if gaps.last().unwrap() < &(hash_s / 2.0) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap().unwrap();
    eprintln!("sender's transfer minus the receiver's: {gaps:?} s; hashing the file takes {hash_s:.3} s");
    let _ = (std::fs::remove_dir_all(&src), std::fs::remove_dir_all(&dst));
    assert!(gaps.last().unwrap() < &(hash_s / 2.0), "sender's transfer longer by {gaps:?} s; hashing takes {hash_s:.3} s");
}

/// Interrupt a transfer with `flavor` after 2 MB are acknowledged, then send again: only what
/// the receiver does not hold crosses the network.
fn interrupted_transfer_resumes(flavor: &str) {
    let src = tempdir(&format!("resume-src-{flavor}"));
    let dst = tempdir(&format!("resume-dst-{flavor}"));
    let size = 8_000_000u64;
    let file = make_file(&src, "resume.bin", size as usize);
    let server = Server::start(&dst, ReceiverOptions::default());
    let opts = SendOptions { flavor: flavor.into(), ..SendOptions::default() };
    let first = SendOptions { stop_after_bytes: Some(2_000_000), ..opts.clone() };
    match send(&file, &server.addr, &first) {
        Err(TransferError::Interrupted { acked_bytes }) => assert!(acked_bytes >= 2_000_000),
        other => panic!("expected an interruption, got {other:?}"),
    }
    assert!(!dst.join("resume.bin").exists());
    // The receiver saves what arrived when the sender's CLOSE reaches it (in its own thread).
    let (part_name, ranges_name) = ccarena_udp::store::partial_names("resume.bin");
    let sidecar = dst.join(&ranges_name);
    for _ in 0..100 {
        if sidecar.exists() {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(20));
    }
    let listing: Vec<_> = std::fs::read_dir(&dst).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(sidecar.exists(), "{listing:?}");
    let rec = send(&file, &server.addr, &opts).unwrap();
    assert_eq!(rec.flavor, flavor);
    assert!(rec.resumed_bytes >= 2_000_000, "{rec:?}");
    assert_eq!(rec.resumed_bytes + rec.stream_bytes, size);
    // Only the missing bytes crossed the network again (plus retransmissions of those).
    assert!(rec.bytes_sent - rec.bytes_retransmitted == rec.stream_bytes, "{rec:?}");
    assert_eq!(digest(&dst.join("resume.bin")), digest(&file));
    assert!(!dst.join(&ranges_name).exists());
    assert!(!dst.join(&part_name).exists());
    server.stop();
}

#[test]
fn an_interrupted_transfer_resumes_sending_only_what_is_missing() {
    interrupted_transfer_resumes("cubic");
}

#[test]
fn an_interrupted_udt_transfer_resumes_sending_only_what_is_missing() {
    interrupted_transfer_resumes("udt");
}

#[test]
fn udt_transfers_are_byte_exact_clean_and_with_ten_percent_loss_reordering_and_duplication() {
    let src = tempdir("udt-src");
    let dst = tempdir("udt-dst");
    let clean = make_file(&src, "clean.bin", 10_000_000);
    // UDT takes every loss as congestion (Gu & Grossman 2007): at 10 % and loopback's 0.1 ms RTT it
    // sends about 20 packets/s, so a small file.
    let lossy = make_file(&src, "lossy.bin", 150_000);
    let imp = |seed| Impairment { loss: 0.10, duplicate: 0.02, reorder: 0.02, seed };
    let server = Server::start(&dst, ReceiverOptions { impairment: Some(imp(3)), ..ReceiverOptions::default() });
    let clean_server = Server::start(&dst, ReceiverOptions::default());
    let udt = SendOptions { flavor: "udt".into(), handshake_timeout: std::time::Duration::from_secs(10), ..SendOptions::default() };
    let rec = send(&clean, &clean_server.addr, &udt).unwrap();
    assert_eq!(digest(&dst.join("clean.bin")), digest(&clean));
    assert_eq!((rec.flavor.as_str(), rec.recovery.as_str(), rec.stream_bytes), ("udt", "nak", 10_000_000));
    assert!(rec.rtt.samples > 0 && rec.rtt.p50_ms > 0.0, "{:?}", rec.rtt);
    assert!(!rec.cwnd_samples.is_empty());
    eprintln!("udt clean: {:.1} Mbit/s, {} retransmissions", rec.goodput_bps / 1e6, rec.retransmissions);
    let rec = send(&lossy, &server.addr, &SendOptions { impairment: Some(imp(4)), ..udt.clone() }).unwrap();
    eprintln!("udt lossy: {:.2} s, {} retransmissions, {} EXP", rec.duration_s, rec.retransmissions, rec.rto_count);
    assert_eq!(digest(&dst.join("lossy.bin")), digest(&lossy));
    // About a tenth of the data was lost and had to be sent again.
    assert!(rec.retransmissions as f64 > 0.05 * (150_000.0 / 1400.0), "{rec:?}");
    assert_eq!(clean_server.stop().completed, 1);
    let c = server.stop();
    assert_eq!((c.completed, c.failed), (1, 0), "{c:?}");
}

#[test]
fn udt_refuses_what_its_transport_does_not_have() {
    let src = tempdir("udt-bad-src");
    let file = make_file(&src, "f.bin", 1000);
    let udt = SendOptions { flavor: "udt".into(), ..SendOptions::default() };
    for opts in [
        SendOptions { recovery: Some("sack".into()), ..udt.clone() },
        SendOptions { max_rate_bps: Some(1_000_000), ..udt.clone() },
        SendOptions { mss_bytes: 1450, ..udt.clone() },
    ] {
        let e = send(&file, "127.0.0.1:9", &opts).unwrap_err();
        assert!(matches!(e, TransferError::Config { .. }), "{e}");
    }
}

#[test]
fn existing_files_are_not_overwritten_without_force() {
    let src = tempdir("force-src");
    let dst = tempdir("force-dst");
    let file = make_file(&src, "keep.bin", 100_000);
    std::fs::write(dst.join("keep.bin"), b"precious").unwrap();
    let server = Server::start(&dst, ReceiverOptions::default());
    match send(&file, &server.addr, &SendOptions::default()) {
        Err(e @ TransferError::Rejected { .. }) => assert!(e.to_string().contains("--force"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(std::fs::read(dst.join("keep.bin")).unwrap(), b"precious");
    server.stop();
    let server = Server::start(&dst, ReceiverOptions { force: true, ..ReceiverOptions::default() });
    send(&file, &server.addr, &SendOptions::default()).unwrap();
    assert_eq!(digest(&dst.join("keep.bin")), digest(&file));
    server.stop();
}

#[test]
fn names_that_escape_and_symlinks_are_refused() {
    let src = tempdir("escape-src");
    let dst = tempdir("escape-dst");
    let outside = tempdir("escape-outside");
    let file = make_file(&src, "x.bin", 10_000);
    std::os::unix::fs::symlink(outside.join("target"), dst.join("link.bin")).unwrap();
    std::os::unix::fs::symlink(outside.join("part"), dst.join(ccarena_udp::store::partial_names("linkpart.bin").0)).unwrap();
    let server = Server::start(&dst, ReceiverOptions { force: true, ..ReceiverOptions::default() });
    for name in ["../escape.bin", "/tmp/abs.bin", "..", ".hidden", "link.bin", "linkpart.bin"] {
        let opts = SendOptions { name: Some(name.into()), ..SendOptions::default() };
        let r = send(&file, &server.addr, &opts);
        assert!(matches!(r, Err(TransferError::Rejected { .. })), "{name}: {r:?}");
    }
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none(), "something was written outside");
    let c = server.stop();
    assert_eq!(c.rejected_offers, 6);
}

#[test]
fn bad_input_is_one_clear_error() {
    let src = tempdir("bad-src");
    let file = make_file(&src, "f.bin", 1000);
    // Nothing listens: ICMP port unreachable.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap().to_string();
    drop(dead);
    let e = send(&file, &dead_addr, &SendOptions::default()).unwrap_err();
    assert!(matches!(e, TransferError::Refused { .. }), "{e}");
    let e = send(&src.join("nope"), &dead_addr, &SendOptions::default()).unwrap_err();
    assert!(matches!(e, TransferError::MissingFile { .. }), "{e}");
    let e = send(&file, &dead_addr, &SendOptions { flavor: "cubik".into(), ..SendOptions::default() }).unwrap_err();
    assert!(e.to_string().contains("cubic"), "{e}");
    // A port in use.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = Receiver::bind(&taken.local_addr().unwrap().to_string(), &src, ReceiverOptions::default()).err().unwrap();
    assert!(matches!(e, TransferError::PortInUse { .. }), "{e}");
    // A peer of another version answers HELLO with its own version.
    let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let other_addr = other.local_addr().unwrap().to_string();
    let t = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let (n, from) = other.recv_from(&mut buf).unwrap();
        let mut reply = buf[..20.min(n)].to_vec();
        reply[2] = 7; // version 7
        reply[3] = 0x02;
        reply.extend_from_slice(&[0; 16]);
        other.send_to(&reply, from).unwrap();
    });
    let e = send(&file, &other_addr, &SendOptions::default()).unwrap_err();
    t.join().unwrap();
    assert!(matches!(e, TransferError::VersionMismatch { theirs: 7, .. }), "{e}");
}

#[test]
fn every_tcp_flavor_of_the_catalogue_transfers_a_file() {
    let src = tempdir("all-src");
    let dst = tempdir("all-dst");
    let file = make_file(&src, "all.bin", 1_000_000);
    let want = digest(&file);
    let server = Server::start(&dst, ReceiverOptions::default());
    let flavors: Vec<&str> = ccarena_cc::catalogue().iter().filter(|c| c.transport == "tcp").map(|c| c.name).collect();
    assert!(flavors.len() >= 20, "{flavors:?}");
    for flavor in &flavors {
        let name = format!("{flavor}.bin");
        let opts = SendOptions { flavor: flavor.to_string(), name: Some(name.clone()), ..SendOptions::default() };
        let rec = send(&file, &server.addr, &opts).unwrap_or_else(|e| panic!("{flavor}: {e}"));
        assert_eq!(rec.flavor, *flavor);
        assert_eq!(digest(&dst.join(&name)), want, "{flavor}");
    }
    assert_eq!(server.stop().completed, flavors.len() as u64);
}
