//! UDT flows over loopback: the UDT transport's sender (flavor `udt`) into a sink that runs UDT's
//! receiver; a finite flow delivers exactly its bytes over UDT's own packets (UDT_DATA, UDT_ACK,
//! UDT_ACK2) and both ends sample one grid; an unbounded one stops at its stop time.

use std::thread;
use std::time::Duration;

use ccarena_udp::clock::mono_ns;
use ccarena_udp::wire::MAX_UDT_PAYLOAD_BYTES;
use ccarena_udp::{send_stream, Sink, SinkOptions, StreamOptions, TransferError};

const MS: u64 = 1_000_000;

fn run(opts: StreamOptions) -> (ccarena_udp::StreamRecord, ccarena_udp::SinkRecord) {
    let sink_opts = SinkOptions {
        t0_mono_ns: opts.t0_mono_ns,
        duration_ns: opts.duration_ns,
        interval_ns: 100 * MS,
        grace: Duration::from_secs(2),
        ..SinkOptions::default()
    };
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts).unwrap();
    let addr = sink.local_addr().to_string();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let rec = send_stream(Some("127.0.0.1"), &addr, &opts, &mut || true).unwrap();
    (rec, h.join().unwrap())
}

fn udt(t0: u64) -> StreamOptions {
    StreamOptions { flavor: "udt".into(), mss_bytes: MAX_UDT_PAYLOAD_BYTES as u32, t0_mono_ns: t0, ..StreamOptions::default() }
}

#[test]
fn a_finite_udt_flow_delivers_its_bytes_and_reports_udts_state() {
    let t0 = mono_ns() + 100 * MS;
    let bytes = 3_000_000;
    let opts = StreamOptions { bytes: Some(bytes), start_ns: 200 * MS, duration_ns: 1500 * MS, ..udt(t0) };
    let (rec, sink) = run(opts);
    assert_eq!(sink.received_bytes, bytes);
    assert_eq!(sink.at_end_bytes, bytes);
    assert!(sink.closed_by_sender);
    assert_eq!(rec.recovery, "nak");
    assert_eq!(rec.at_end.bytes_acked, bytes);
    let done = rec.completion_time_s.expect("a finite flow completes");
    assert!(done > 0.0 && done < 1.3, "completion {done}");
    let packets = bytes.div_ceil(MAX_UDT_PAYLOAD_BYTES as u64);
    assert!(rec.drained.data_segs_out >= packets && sink.data_segs_in >= packets);
    let times: Vec<f64> = rec.samples.iter().map(|s| s.time_s).collect();
    assert_eq!(times, (2..=15).map(|k| k as f64 / 10.0).collect::<Vec<_>>());
    assert_eq!(sink.samples[0].1, 0, "nothing is delivered before the start");
    // The receiver's ACK/ACK2 RTT reached the sender (loopback: well under a millisecond, but
    // smoothed from UDT's initial 100 ms).
    let rtt_us = rec.at_end.min_rtt_us.expect("UDT ACKs carry an RTT");
    assert!(rtt_us < 100_000, "RTT {rtt_us} µs");
    assert!(rec.samples.iter().all(|s| s.ssthresh_bytes.is_none() && s.cwnd_bytes > 0));
}

#[test]
fn an_unbounded_udt_flow_stops_at_its_stop_time() {
    let t0 = mono_ns() + 100 * MS;
    let opts = StreamOptions { stop_ns: Some(300 * MS), duration_ns: 800 * MS, ..udt(t0) };
    let (rec, sink) = run(opts);
    let at = |t: f64| sink.samples.iter().find(|s| (s.0 - t).abs() < 1e-9).unwrap().1;
    assert!(at(0.3) > 0);
    assert_eq!(at(0.5), at(0.8), "bytes still arriving long after the stop");
    assert_eq!(sink.at_end_bytes, rec.at_end.bytes_acked);
    assert_eq!(rec.completion_time_s, None);
}

#[test]
fn a_finite_flow_stopped_before_its_last_byte_never_completes() {
    // 10 GB cannot cross loopback in the 300 ms before the stop; what was sent is delivered, and
    // that is not the flow's completion (it was once taken for it: the sender is "complete" when
    // everything it was offered after the stop is acknowledged).
    for flavor in ["udt", "cubic"] {
        let t0 = mono_ns() + 100 * MS;
        let mss_bytes = if flavor == "udt" { MAX_UDT_PAYLOAD_BYTES as u32 } else { StreamOptions::default().mss_bytes };
        let opts = StreamOptions {
            flavor: flavor.into(),
            mss_bytes,
            bytes: Some(10_000_000_000),
            t0_mono_ns: t0,
            stop_ns: Some(300 * MS),
            duration_ns: 800 * MS,
            ..StreamOptions::default()
        };
        let (rec, sink) = run(opts);
        assert!(sink.at_end_bytes > 0 && sink.at_end_bytes < 10_000_000_000, "{flavor}: {}", sink.at_end_bytes);
        assert_eq!(rec.drained.bytes_acked, sink.received_bytes, "{flavor}: what was sent is delivered");
        assert_eq!(rec.completion_time_s, None, "{flavor}");
    }
}

#[test]
fn a_udt_payload_beyond_the_udt_frame_is_refused() {
    let opts = StreamOptions { mss_bytes: MAX_UDT_PAYLOAD_BYTES as u32 + 1, ..udt(mono_ns()) };
    let err = send_stream(Some("127.0.0.1"), "127.0.0.1:9", &opts, &mut || true).unwrap_err();
    assert!(matches!(err, TransferError::Config { .. }), "{err}");
}

#[test]
fn a_udt_sink_drops_what_does_not_belong_to_its_stream() {
    use ccarena_udp::wire::{encode, kind_of, Frame, Header, VERSION};
    let opts = SinkOptions { t0_mono_ns: mono_ns(), duration_ns: 1000 * MS, interval_ns: 100 * MS, ..SinkOptions::default() };
    let mut sink = Sink::bind("127.0.0.1:0", opts).unwrap();
    let peer: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let packet = |pn: u64, frame: &Frame<'_>| {
        let mut buf = Vec::new();
        encode(&Header { version: VERSION, kind: kind_of(frame), conn_id: 5, pn }, frame, &mut buf);
        buf
    };
    let stream_bytes = 10 * 1000;
    let offer = Frame::StreamOffer { cookie: sink.cookie_for(peer, 5), stream_bytes, mss_bytes: 1000, flavor: "udt", ecn: None, quic: None };
    sink.on_datagram(&packet(0, &offer), peer);
    assert!(sink.connected());
    let udt = |seq: u64| Frame::UdtData { seq, offset: seq * 1000, timestamp_ns: 1, flags: 0, payload: &[0u8; 1000] };
    sink.on_datagram(&packet(1, &udt(0)), peer);
    assert_eq!(sink.delivered_bytes(), 1000);
    // TCP-like DATA on a UDT stream, UDT_DATA beyond the stream or far beyond the flow window:
    // dropped and counted; nothing more is delivered.
    sink.on_datagram(&packet(2, &Frame::Data { offset: 1000, ts_val_ns: 1, flags: 0, payload: &[0u8; 1000] }), peer);
    sink.on_datagram(&packet(3, &udt(10)), peer);
    sink.on_datagram(&packet(4, &Frame::UdtData { seq: 1 << 40, offset: 1000, timestamp_ns: 1, flags: 0, payload: &[0u8; 10] }), peer);
    assert_eq!(sink.counters().out_of_bounds, 3);
    assert_eq!(sink.delivered_bytes(), 1000);
    // A replayed packet number is dropped; the next in-order packet is delivered.
    sink.on_datagram(&packet(4, &udt(1)), peer);
    assert_eq!(sink.counters().replayed, 1);
    sink.on_datagram(&packet(5, &udt(1)), peer);
    assert_eq!(sink.delivered_bytes(), 2000);
}
