//! The scenario sink's state machine (`ccarena_udp::Sink`, the receiving end of every flow on
//! the udp backend), structure-aware: the input is a script of packets from a few peers —
//! HELLOs, STREAM_OFFERs with valid cookies (so a stream is accepted; TCP-like, UDT or QUIC; bounded
//! or not; asking for classic, DCTCP or Accurate ECN feedback or none), file OFFERs (a sink
//! refuses them), DATA, QUIC_DATA and UDT_DATA at chosen sequence numbers, offsets and lengths (DATA with
//! any IP ECN codepoint, CE included, so the AccECN counters run and wrap), UDT_ACK2s, PINGs,
//! CLOSEs, raw bytes (`ccarena_udp_fuzz::next_datagram`) — fed to `Sink::on_datagram_with_ecn`. Nothing may panic, the stream's out-of-order ranges stay within
//! `MAX_OOO_RANGES`, and the bytes delivered in order never go back.
#![no_main]

use ccarena_udp::MAX_OOO_RANGES;
use ccarena_udp::{Sink, SinkOptions};
use ccarena_udp_fuzz::{next_datagram, Script, Service};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = SinkOptions { rwnd_bytes: Some(256 * 1024), ..SinkOptions::default() };
    let mut sink = Sink::bind("127.0.0.1:0", opts).unwrap();
    let mut s = Script(data);
    let mut pns = [0u64; 3];
    let mut buf = Vec::new();
    let mut delivered = 0;
    loop {
        let cookie = |peer, conn_id| sink.cookie_for(peer, conn_id);
        let Some((peer, ecn)) = next_datagram(&mut s, Service::Sink, &mut pns, &cookie, &mut buf) else { break };
        sink.on_datagram_with_ecn(&buf, peer, ecn);
        assert!(sink.out_of_order_ranges() <= MAX_OOO_RANGES);
        let now = sink.delivered_bytes();
        assert!(now >= delivered, "delivered bytes went back from {delivered} to {now}");
        delivered = now;
    }
});
