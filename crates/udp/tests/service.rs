//! The receiver as a service under attack (issue 37): its connection table and partial files
//! against peers that complete the handshake and then hold slots with pings, offer and vanish,
//! open many connections from one address, declare huge files, or resume right after a sender
//! died; and a load test in which about 1,000 hostile peers on loopback addresses hold and churn
//! connections while a legitimate sender completes a transfer.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::tempdir;

use ccarena_udp::sha256::sha256_of;
use ccarena_udp::store::PART_PREFIX;
use ccarena_udp::wire::{self, decode, encode, kind_of, Frame, Header, Offer, RejectCode};
use ccarena_udp::{send_file, Counters, Receiver, ReceiverOptions, SendOptions, TransferRecord};

fn make_file(dir: &Path, name: &str, bytes: usize) -> PathBuf {
    let data: Vec<u8> = (0..bytes as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn packet(conn_id: u64, pn: u64, frame: &Frame<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    encode(&Header { version: wire::VERSION, kind: kind_of(frame), conn_id, pn }, frame, &mut buf);
    buf
}

fn partial_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(PART_PREFIX))
        .collect()
}

struct Server {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<Counters>,
}

impl Server {
    fn start(dir: &Path, opts: ReceiverOptions) -> Server {
        let mut rx = Receiver::bind("127.0.0.1:0", dir, opts).unwrap();
        let addr = rx.local_addr().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = thread::spawn(move || {
            rx.serve(false, &mut |_| !s.load(Ordering::Relaxed)).unwrap();
            rx.counters()
        });
        Server { addr, stop, thread }
    }

    fn stop(self) -> Counters {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// A hand-driven peer: one socket (on `ip`), HELLO → RETRY → OFFER, then what the test sends.
struct Peer {
    sock: UdpSocket,
    to: String,
    conn_id: u64,
    pn: u64,
}

impl Peer {
    fn new(ip: &str, to: &str, conn_id: u64) -> Peer {
        let sock = UdpSocket::bind(format!("{ip}:0")).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        Peer { sock, to: to.to_string(), conn_id, pn: 0 }
    }

    fn send(&mut self, frame: &Frame<'_>) {
        self.sock.send_to(&packet(self.conn_id, self.pn, frame), &self.to).unwrap();
        self.pn += 1;
    }

    /// The next reply that is not an ACK or PING (`None`: none within the timeout).
    fn reply(&self) -> Option<Vec<u8>> {
        let mut buf = [0u8; 2048];
        loop {
            let n = self.sock.recv(&mut buf).ok()?;
            match decode(&buf[..n]) {
                Ok((_, Frame::Ack { .. } | Frame::Ping)) => continue,
                _ => return Some(buf[..n].to_vec()),
            }
        }
    }

    /// Handshake offering `name`; the reply to the OFFER (ACCEPT or REJECT).
    fn offer(&mut self, name: &str, file_bytes: u64, sha256: [u8; 32]) -> Vec<u8> {
        self.send(&Frame::Hello);
        let r = self.reply().expect("a RETRY");
        let Ok((_, Frame::Retry { cookie })) = decode(&r) else { panic!("no RETRY: {r:?}") };
        self.send(&Frame::Offer(Offer { cookie, file_bytes, sha256, mss_bytes: 1000, name, flavor: "cubic" }));
        self.reply().expect("a reply to the OFFER")
    }
}

fn is_accept(r: &[u8]) -> bool {
    matches!(decode(r), Ok((_, Frame::Accept { .. })))
}

fn reject(r: &[u8]) -> Option<(RejectCode, String)> {
    match decode(r) {
        Ok((_, Frame::Reject { code, message })) => Some((code, message.to_string())),
        _ => None,
    }
}

fn send(path: &Path, addr: &str, opts: &SendOptions) -> TransferRecord {
    send_file(path, addr, opts, &mut |_| true).unwrap()
}

#[test]
fn pinging_idle_peers_do_not_hold_slots_against_a_new_sender() {
    let src = tempdir("svc-idle-src");
    let dst = tempdir("svc-idle-dst");
    let file = make_file(&src, "good.bin", 500_000);
    let server = Server::start(&dst, ReceiverOptions { max_connections: 4, ..ReceiverOptions::default() });
    let mut idle: Vec<Peer> = (0..4).map(|i| Peer::new(&format!("127.0.0.{}", i + 2), &server.addr, 100 + i)).collect();
    for (i, p) in idle.iter_mut().enumerate() {
        assert!(is_accept(&p.offer(&format!("idle{i}.bin"), 1 << 30, [0; 32])));
    }
    // They keep pinging (so the 10 s idle timeout never fires) past the eviction grace.
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        idle.iter_mut().for_each(|p| p.send(&Frame::Ping));
        thread::sleep(Duration::from_millis(200));
    }
    let rec = send(&file, &server.addr, &SendOptions::default());
    assert_eq!(rec.stream_bytes, 500_000);
    let c = server.stop();
    assert!(c.evicted >= 1 && c.connection_limit == 0, "{c:?}");
    // The evicted peers wrote nothing: their 1 GiB partial files are gone.
    assert!(partial_files(&dst).is_empty(), "{:?}", partial_files(&dst));
}

#[test]
fn peers_that_offer_and_vanish_leave_no_partial_file() {
    let dst = tempdir("svc-vanish-dst");
    let opts = ReceiverOptions { idle_timeout: Duration::from_millis(500), ..ReceiverOptions::default() };
    let server = Server::start(&dst, opts);
    for i in 0..20u64 {
        let mut p = Peer::new(&format!("127.0.1.{}", i + 1), &server.addr, i + 1);
        // 64 GiB each: 1.25 TiB declared, under the default cap of 2 TiB.
        assert!(is_accept(&p.offer(&format!("v{i}.bin"), 1 << 36, [0; 32])));
    }
    assert_eq!(partial_files(&dst).len(), 20);
    let t0 = Instant::now();
    while !partial_files(&dst).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(partial_files(&dst).is_empty(), "{:?}", partial_files(&dst));
    assert!(std::fs::read_dir(&dst).unwrap().next().is_none(), "sidecars left");
    assert_eq!(server.stop().failed, 20);
}

#[test]
fn one_address_is_held_to_its_connections_and_partial_files_to_their_bytes() {
    let dst = tempdir("svc-caps-dst");
    let opts = ReceiverOptions {
        max_connections_per_source: 2,
        max_partials_per_source: 3,
        max_partial_bytes: 10 << 20,
        ..ReceiverOptions::default()
    };
    let server = Server::start(&dst, opts);
    let mut held = Vec::new();
    for i in 0..2 {
        let mut p = Peer::new("127.0.2.1", &server.addr, 10 + i);
        assert!(is_accept(&p.offer(&format!("s{i}.bin"), 1 << 20, [0; 32])));
        held.push(p);
    }
    let mut third = Peer::new("127.0.2.1", &server.addr, 12);
    let (code, m) = reject(&third.offer("s2.bin", 1 << 20, [0; 32])).expect("a REJECT");
    assert_eq!(code, RejectCode::Busy);
    assert!(m.contains("per address"), "{m}");
    // Another address may still come in, up to the cap on declared partial bytes.
    let mut other = Peer::new("127.0.2.2", &server.addr, 20);
    assert!(is_accept(&other.offer("big.bin", 8 << 20, [0; 32])));
    let mut over = Peer::new("127.0.2.3", &server.addr, 30);
    let (code, m) = reject(&over.offer("over.bin", 1 << 20, [0; 32])).expect("a REJECT");
    assert_eq!(code, RejectCode::TooLarge);
    assert!(m.contains("cap"), "{m}");
    let c = server.stop();
    assert_eq!((c.connection_limit, c.rejected_offers), (1, 2), "{c:?}");
}

#[test]
fn names_up_to_the_filesystem_limit_are_received() {
    let src = tempdir("svc-long-src");
    let dst = tempdir("svc-long-dst");
    let name = "n".repeat(255);
    let file = make_file(&src, "x.bin", 300_000);
    let server = Server::start(&dst, ReceiverOptions::default());
    let rec = send(&file, &server.addr, &SendOptions { name: Some(name.clone()), ..SendOptions::default() });
    assert_eq!(rec.stream_bytes, 300_000);
    assert_eq!(std::fs::read(dst.join(&name)).unwrap(), std::fs::read(&file).unwrap());
    assert_eq!(server.stop().completed, 1);
}

#[test]
fn a_resume_right_after_the_sender_died_takes_over_its_partial_file() {
    let src = tempdir("svc-takeover-src");
    let dst = tempdir("svc-takeover-dst");
    let file = make_file(&src, "t.bin", 400_000);
    let data = std::fs::read(&file).unwrap();
    let sha = sha256_of(std::fs::File::open(&file).unwrap()).unwrap();
    let server = Server::start(&dst, ReceiverOptions::default());
    // A sender that delivered the first 3000 bytes and was killed (no CLOSE).
    let mut dead = Peer::new("127.0.0.1", &server.addr, 77);
    assert!(is_accept(&dead.offer("t.bin", data.len() as u64, sha)));
    for k in 0..3u64 {
        let off = (k * 1000) as usize;
        dead.send(&Frame::Data { offset: off as u64, ts_val_ns: 1, flags: 0, payload: &data[off..off + 1000] });
    }
    thread::sleep(Duration::from_millis(100));
    drop(dead);
    // Right away, from the same address, the same file: taken over (not "being received from
    // another sender" until the 10 s idle timeout), and only the rest is sent.
    let t0 = Instant::now();
    let rec = send(&file, &server.addr, &SendOptions::default());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(rec.resumed_bytes, 3000, "{rec:?}");
    assert_eq!(std::fs::read(dst.join("t.bin")).unwrap(), data);
    // From another address the same file is still refused while a transfer is live.
    let mut live = Peer::new("127.0.0.1", &server.addr, 78);
    assert!(is_accept(&live.offer("u.bin", 1000, [1; 32])));
    let mut other = Peer::new("127.0.3.1", &server.addr, 79);
    let (code, m) = reject(&other.offer("u.bin", 1000, [1; 32])).expect("a REJECT");
    assert_eq!(code, RejectCode::Busy);
    assert!(m.contains("another sender"), "{m}");
    let c = server.stop();
    assert_eq!((c.completed, c.evicted), (1, 1), "{c:?}");
}

/// One hostile socket's state in the load test.
struct Hostile {
    sock: UdpSocket,
    conn_id: u64,
    pn: u64,
    /// 0: idle; 1: HELLO sent; 2: OFFER sent; 3: connected.
    state: u8,
    since: Instant,
    /// What it does once connected: 0 hold (ping), 1 vanish, 2 ping briefly then churn to a new
    /// connection, 3 offer and at once start over.
    kind: usize,
}

#[test]
fn a_sender_completes_while_a_thousand_hostile_peers_hold_and_churn_connections() {
    let src = tempdir("svc-load-src");
    let dst = tempdir("svc-load-dst");
    let file = make_file(&src, "legit.bin", 2_000_000);
    // This test is of the connection table: the handshake rate limit is set above the hostiles'
    // pace (about 500 handshake packets a second) so that they reach the table.
    let opts = ReceiverOptions {
        idle_timeout: Duration::from_secs(2),
        handshakes_per_s: 2000.0,
        handshake_burst: 200.0,
        ..ReceiverOptions::default()
    };
    let server = Server::start(&dst, opts);
    let to: SocketAddr = server.addr.parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let hostile = thread::spawn({
        let stop = stop.clone();
        move || {
            // 125 addresses (127.0.4.1 to 127.0.4.125) × 8 ports = 1,000 peers.
            let mut peers: Vec<Hostile> = (0..1000)
                .map(|i| {
                    let sock = UdpSocket::bind(format!("127.0.4.{}:0", i / 8 + 1)).unwrap();
                    sock.set_nonblocking(true).unwrap();
                    Hostile { sock, conn_id: i as u64 * 1_000_000, pn: 0, state: 0, since: Instant::now(), kind: i % 4 }
                })
                .collect();
            let (mut accepted, mut refused) = (0u64, 0u64);
            let mut next = 0;
            let mut buf = [0u8; 2048];
            let t0 = Instant::now();
            while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                // Start 5 handshakes per 10 ms round (500 HELLO + 500 OFFER a second).
                for _ in 0..5 {
                    let count = peers.len();
                    let p = &mut peers[next];
                    next = (next + 1) % count;
                    if p.state == 0 {
                        p.conn_id += 1;
                        p.pn = 0;
                        let _ = p.sock.send_to(&packet(p.conn_id, 0, &Frame::Hello), to);
                        p.state = 1;
                        p.since = Instant::now();
                    }
                }
                for (i, p) in peers.iter_mut().enumerate() {
                    while let Ok(n) = p.sock.recv(&mut buf) {
                        match decode(&buf[..n]) {
                            Ok((_, Frame::Retry { cookie })) if p.state == 1 => {
                                let name = format!("h{i}-{}.bin", p.conn_id);
                                let o = Offer { cookie, file_bytes: 1 << 30, sha256: [0; 32], mss_bytes: 1000, name: &name, flavor: "cubic" };
                                p.pn = 1;
                                let _ = p.sock.send_to(&packet(p.conn_id, 1, &Frame::Offer(o)), to);
                                p.state = 2;
                            }
                            Ok((_, Frame::Accept { .. })) if p.state == 2 => {
                                accepted += 1;
                                p.state = if p.kind == 3 { 0 } else { 3 };
                                p.since = Instant::now();
                            }
                            Ok((_, Frame::Reject { .. })) => {
                                refused += 1;
                                p.state = 0;
                            }
                            _ => {}
                        }
                    }
                    let age = p.since.elapsed();
                    match (p.state, p.kind) {
                        // A lost reply: start over.
                        (1 | 2, _) if age > Duration::from_secs(1) => p.state = 0,
                        (3, 0) | (3, 2) if age.as_millis() % 500 < 10 => {
                            p.pn += 1;
                            let _ = p.sock.send_to(&packet(p.conn_id, p.pn, &Frame::Ping), to);
                            if p.kind == 2 && age > Duration::from_secs(3) {
                                p.state = 0;
                            }
                        }
                        _ => {}
                    }
                }
                thread::sleep(Duration::from_millis(10));
            }
            (accepted, refused)
        }
    });
    // Let the hostiles fill the table and sit in it past the eviction grace.
    thread::sleep(Duration::from_secs(4));
    let t0 = Instant::now();
    let opts = SendOptions { handshake_timeout: Duration::from_secs(10), ..SendOptions::default() };
    let rec = send(&file, &server.addr, &opts);
    let took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (accepted, refused) = hostile.join().unwrap();
    let c = server.stop();
    eprintln!("legit transfer {took:?}; hostile offers accepted {accepted}, refused {refused}; {c:?}");
    assert_eq!(rec.stream_bytes, 2_000_000);
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(std::fs::read(dst.join("legit.bin")).unwrap(), std::fs::read(&file).unwrap());
    assert!(accepted > 64 && c.evicted > 0, "the hostiles did not reach the table: {accepted} {c:?}");
    // The hostiles never sent data: none of their partial files is left.
    assert!(partial_files(&dst).is_empty(), "{} partial files left", partial_files(&dst).len());
}

#[test]
fn a_connection_that_moves_no_new_data_is_evicted_by_age_though_it_pings() {
    let dst = tempdir("svc-stall-dst");
    let opts = ReceiverOptions { stall_timeout: Duration::from_millis(800), ..ReceiverOptions::default() };
    let server = Server::start(&dst, opts);
    let mut p = Peer::new("127.0.5.1", &server.addr, 5);
    assert!(is_accept(&p.offer("stall.bin", 1 << 20, [0; 32])));
    p.sock.set_read_timeout(Some(Duration::from_millis(150))).unwrap();
    // The same out-of-order segment again and again, and pings: no new bytes.
    let t0 = Instant::now();
    let mut closed = None;
    while closed.is_none() && t0.elapsed() < Duration::from_secs(4) {
        p.send(&Frame::Data { offset: 2000, ts_val_ns: 1, flags: 0, payload: &[3; 1000] });
        p.send(&Frame::Ping);
        if let Some(r) = p.reply() {
            if let Ok((_, Frame::Close { code, message })) = decode(&r) {
                closed = Some((code, message.to_string(), t0.elapsed()));
            }
        }
    }
    let (code, message, at) = closed.expect("no CLOSE: the connection was kept");
    assert_eq!(code, 2);
    assert!(message.contains("no data"), "{message}");
    assert!(at >= Duration::from_millis(700), "{at:?}");
    let c = server.stop();
    assert_eq!(c.evicted, 1, "{c:?}");
    // It wrote a segment: its partial file is kept for a resume.
    assert_eq!(partial_files(&dst).len(), 1);
}

#[test]
fn an_offer_that_is_refused_evicts_nobody() {
    let dst = tempdir("svc-noevict-dst");
    let opts = ReceiverOptions { max_connections: 1, max_file_bytes: 1 << 20, ..ReceiverOptions::default() };
    let server = Server::start(&dst, opts);
    let mut held = Peer::new("127.0.8.1", &server.addr, 1);
    assert!(is_accept(&held.offer("held.bin", 1000, [0; 32])));
    let mut big = Peer::new("127.0.8.2", &server.addr, 2);
    let (code, _) = reject(&big.offer("big.bin", 2 << 20, [0; 32])).expect("a REJECT");
    assert_eq!(code, RejectCode::TooLarge);
    // A valid offer then takes the slot of the one that moved no data.
    let mut next = Peer::new("127.0.8.3", &server.addr, 3);
    assert!(is_accept(&next.offer("next.bin", 1000, [0; 32])));
    let c = server.stop();
    assert_eq!((c.evicted, c.rejected_offers), (1, 1), "{c:?}");
}
