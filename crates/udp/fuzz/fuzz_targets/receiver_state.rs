//! The receiving service's state machine, structure-aware: the input is a script of packets
//! from a few peers — HELLOs, OFFERs with valid cookies (so connections are made; TCP-like or
//! UDT), DATA and UDT_DATA at chosen sequence numbers, offsets and lengths, UDT_ACK2s, PINGs,
//! CLOSEs, raw bytes (`ccarena_udp_fuzz::next_datagram`) — fed to `Receiver::on_datagram`. Nothing
//! may panic, the connection table stays within its limit, and no file appears outside the
//! directory or under a name the receiver should have refused.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use ccarena_udp::{Receiver, ReceiverOptions};
use ccarena_udp_fuzz::{next_datagram, Script, Service, ALLOWED_NAMES};
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
    let opts = ReceiverOptions { force: true, max_connections: 3, rcvbuf_bytes: 64 * 1024, ..ReceiverOptions::default() };
    let mut rx = Receiver::bind("127.0.0.1:0", dir(), opts).unwrap();
    let mut s = Script(data);
    let mut pns = [0u64; 3];
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        let cookie = |peer, conn_id| rx.cookie_for(peer, conn_id);
        let Some(peer) = next_datagram(&mut s, Service::FileReceiver, &mut pns, &cookie, &mut buf) else { break };
        rx.on_datagram(&buf, peer, &mut out);
        assert!(rx.connections() <= 3);
    }
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let plain = name.trim_start_matches('.').split(".ccarena-").next().unwrap().to_string();
        assert!(ALLOWED_NAMES.contains(&plain.as_str()), "unexpected file {name}");
    }
});
