//! The receiving service's state machine, structure-aware: the input is a script of packets
//! from a few peers — HELLOs, OFFERs with valid cookies (so connections are made; TCP-like or
//! UDT), DATA and UDT_DATA at chosen sequence numbers, offsets and lengths, UDT_ACK2s, PINGs,
//! CLOSEs, raw bytes (`ccarena_udp_fuzz::next_datagram`) — fed to `Receiver::on_datagram`. Nothing
//! may panic, the connection table stays within its limit, and no file appears outside the
//! directory or under a name the receiver should have refused.
//!
//! The connection table's rules are within reach: two slots for three peers (a full table evicts
//! a finished connection to make room), one connection per address (two peers share one), resume
//! takeovers (the two on one host offer the same names, sizes and hashes), and caps of two
//! partial files per address and 8 MiB declared over all (offer sizes reach 16 MiB). After every
//! datagram: the table, each address and the partial bytes are within their caps; at the end,
//! every partial file on disk is one the receiver counts, under the hashed name of an allowed file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use ccarena_udp::store::partial_names;
use ccarena_udp::{Receiver, ReceiverOptions};
use ccarena_udp_fuzz::{next_datagram, peers, Script, Service, ALLOWED_NAMES};
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

fuzz_target!(|data: &[u8]| {
    const CAP: u64 = 8 << 20;
    // Each input starts from an empty directory: partial files left by the last one would count
    // against the caps from the start.
    for entry in std::fs::read_dir(dir()).unwrap() {
        let _ = std::fs::remove_file(entry.unwrap().path());
    }
    let opts = ReceiverOptions {
        force: true,
        max_connections: 2,
        max_connections_per_source: 1,
        max_partials_per_source: 2,
        max_partial_bytes: CAP,
        rcvbuf_bytes: 64 * 1024,
        ..ReceiverOptions::default()
    };
    let mut rx = Receiver::bind("127.0.0.1:0", dir(), opts).unwrap();
    let mut s = Script(data);
    let mut pns = [0u64; 3];
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        let cookie = |peer, conn_id| rx.cookie_for(peer, conn_id);
        // A file transfer runs without ECN: the codepoint DATA would arrive with is not read.
        let Some((peer, _ecn)) = next_datagram(&mut s, Service::FileReceiver, &mut pns, &cookie, &mut buf) else { break };
        rx.on_datagram(&buf, peer, &mut out);
        assert!(rx.connections() <= 2);
        for p in peers() {
            assert!(rx.connections_from(p.ip()) <= 1);
        }
        assert!(rx.partials().1 <= CAP, "{:?}", rx.partials());
    }
    let mut on_disk = 0;
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let ok = ALLOWED_NAMES.iter().any(|a| {
            let (part, ranges) = partial_names(a);
            on_disk += usize::from(name == part);
            name == *a || name == part || name == ranges
        });
        assert!(ok, "unexpected file {name}");
    }
    assert!(on_disk <= rx.partials().0, "{on_disk} partial files on disk, {:?} counted", rx.partials());
});
