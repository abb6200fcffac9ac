//! The receiving service's state machine, structure-aware: the input is a script of packets
//! from a few peers — HELLOs, OFFERs with valid cookies (so connections are made; TCP-like or
//! UDT), DATA and UDT_DATA at chosen sequence numbers, offsets and lengths, UDT_ACK2s, PINGs,
//! CLOSEs, raw bytes — fed to `Receiver::on_datagram` and its
//! timers. Nothing may panic, the connection table stays within its limit, and no file appears
//! outside the directory or under a name the receiver should have refused.
#![no_main]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

use ccarena_udp::wire::{self, encode, kind_of, Frame, Header, Offer};
use ccarena_udp::{Receiver, ReceiverOptions};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // /dev/shm when there is one: the target creates and writes files on every input.
        let shm = std::path::Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let d = base.join(format!("ccarena-udp-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

struct Script<'a>(&'a [u8]);

impl Script<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u64(&mut self, bytes: usize) -> Option<u64> {
        let mut v = 0u64;
        for _ in 0..bytes {
            v = (v << 8) | self.byte()? as u64;
        }
        Some(v)
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

const NAMES: [&str; 6] = ["a.bin", "b.bin", "../up", ".hidden", "a/b", "c.bin"];

fuzz_target!(|data: &[u8]| {
    let opts = ReceiverOptions { force: true, max_connections: 3, rcvbuf_bytes: 64 * 1024, ..ReceiverOptions::default() };
    let mut rx = Receiver::bind("127.0.0.1:0", dir(), opts).unwrap();
    let peers: [SocketAddr; 3] = ["192.0.2.1:1000".parse().unwrap(), "192.0.2.2:1000".parse().unwrap(), "192.0.2.1:1001".parse().unwrap()];
    let mut s = Script(data);
    let mut pns = [0u64; 3];
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while let Some(op) = s.byte() {
        let who = (op >> 4) as usize % 3;
        let peer = peers[who];
        let conn_id = who as u64 + 1;
        let pn = pns[who];
        pns[who] += 1;
        let frame_pn = if op & 0x08 != 0 { pn.saturating_sub(1) } else { pn };
        let h = |f: &Frame<'_>| Header { version: wire::VERSION, kind: kind_of(f), conn_id, pn: frame_pn };
        match op & 0x07 {
            0 => {
                let f = Frame::Hello;
                encode(&h(&f), &f, &mut buf);
            }
            1 => {
                let Some(size) = s.u64(3) else { break };
                let Some(mss) = s.u64(2) else { break };
                let Some(n) = s.byte() else { break };
                let name = NAMES[n as usize % NAMES.len()];
                let f = Frame::Offer(Offer {
                    cookie: rx.cookie_for(peer, conn_id),
                    file_bytes: size,
                    sha256: [0; 32],
                    mss_bytes: mss as u16,
                    name,
                    flavor: if n & 0x80 != 0 { "udt" } else { "cubic" },
                });
                encode(&h(&f), &f, &mut buf);
            }
            2 => {
                let Some(offset) = s.u64(3) else { break };
                let Some(len) = s.u64(2) else { break };
                let len = (len as usize % wire::MAX_PAYLOAD_BYTES) + 1;
                let payload = vec![op; len];
                let f = Frame::Data { offset, ts_val_ns: 0, flags: 0, payload: &payload };
                encode(&h(&f), &f, &mut buf);
            }
            3 => {
                let Some(seq) = s.u64(3) else { break };
                let Some(offset) = s.u64(3) else { break };
                let Some(len) = s.u64(2) else { break };
                let len = (len as usize % wire::MAX_UDT_PAYLOAD_BYTES) + 1;
                let payload = vec![op; len];
                let f = Frame::UdtData { seq, offset, timestamp_ns: 0, flags: op & 0x01, payload: &payload };
                encode(&h(&f), &f, &mut buf);
            }
            4 => {
                let f = Frame::Ping;
                encode(&h(&f), &f, &mut buf);
            }
            5 => {
                let f = Frame::Close { code: 1, message: "x" };
                encode(&h(&f), &f, &mut buf);
            }
            6 => {
                let Some(ack_seq) = s.u64(2) else { break };
                let f = Frame::UdtAck2 { ack_seq };
                encode(&h(&f), &f, &mut buf);
            }
            _ => {
                let Some(n) = s.byte() else { break };
                buf = s.take(n as usize).to_vec();
            }
        }
        rx.on_datagram(&buf, peer, &mut out);
        assert!(rx.connections() <= 3);
    }
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let plain = name.trim_start_matches('.').split(".ccarena-").next().unwrap().to_string();
        assert!(["a.bin", "b.bin", "c.bin"].contains(&plain.as_str()), "unexpected file {name}");
    }
});
