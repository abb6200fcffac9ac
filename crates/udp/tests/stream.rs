//! Scenario flows over loopback: a stream sender and a sink sampled on one grid; a finite flow
//! delivers exactly its bytes and reports its completion; an unbounded flow stops writing at its
//! stop time; a sink takes one stream and refuses files; a file receiver refuses streams.

use std::thread;
use std::time::Duration;

use crate::common;

use ccarena_udp::clock::mono_ns;
use ccarena_udp::{send_file, send_stream, Receiver, ReceiverOptions, SendOptions, Sink, SinkOptions, StreamOptions, TransferError};

const MS: u64 = 1_000_000;

fn sink_opts(t0: u64, duration_ns: u64) -> SinkOptions {
    SinkOptions { t0_mono_ns: t0, duration_ns, interval_ns: 100 * MS, grace: Duration::from_secs(2), ..SinkOptions::default() }
}

/// Run one flow (sender options `opts`) into a fresh sink; return both records.
fn run(opts: StreamOptions) -> (ccarena_udp::StreamRecord, ccarena_udp::SinkRecord) {
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts(opts.t0_mono_ns, opts.duration_ns)).unwrap();
    let addr = sink.local_addr().to_string();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let rec = send_stream(Some("127.0.0.1"), &addr, &opts, &mut || true).unwrap();
    (rec, h.join().unwrap())
}

#[test]
fn a_finite_flow_delivers_its_bytes_and_both_ends_sample_the_same_grid() {
    let t0 = mono_ns() + 100 * MS;
    let bytes = 3_000_000;
    let opts = StreamOptions {
        flavor: "newreno".into(),
        bytes: Some(bytes),
        t0_mono_ns: t0,
        start_ns: 200 * MS,
        duration_ns: 1000 * MS,
        ..StreamOptions::default()
    };
    let (rec, sink) = run(opts);
    assert_eq!(sink.received_bytes, bytes);
    assert_eq!(sink.at_end_bytes, bytes);
    assert!(sink.closed_by_sender);
    let done = rec.completion_time_s.expect("a finite flow completes");
    assert!(done > 0.0 && done < 0.8, "completion {done}");
    assert_eq!(rec.at_end.bytes_acked, bytes);
    assert!(rec.drained.data_segs_out >= bytes.div_ceil(rec.mss_bytes as u64));
    assert!(sink.data_segs_in >= bytes.div_ceil(rec.mss_bytes as u64));
    // Samples from the first instant at or after the start (0.2 s) to the end (1.0 s).
    let times: Vec<f64> = rec.samples.iter().map(|s| s.time_s).collect();
    let expected: Vec<f64> = (2..=10).map(|k| k as f64 / 10.0).collect();
    assert_eq!(times, expected);
    let sink_times: Vec<f64> = sink.samples.iter().map(|s| s.0).collect();
    assert_eq!(sink_times, (1..=10).map(|k| k as f64 / 10.0).collect::<Vec<_>>());
    assert_eq!(sink.samples[0].1, 0, "nothing is delivered before the start");
    assert!(rec.samples[0].srtt_s.is_none() || rec.samples[0].acked_bytes > 0);
    assert!(rec.at_end.min_rtt_us.is_some());
}

#[test]
fn an_unbounded_flow_stops_writing_at_its_stop_time() {
    let t0 = mono_ns() + 100 * MS;
    let opts = StreamOptions {
        flavor: "vegas".into(),
        t0_mono_ns: t0,
        start_ns: 0,
        stop_ns: Some(300 * MS),
        duration_ns: 800 * MS,
        ..StreamOptions::default()
    };
    let (rec, sink) = run(opts);
    assert!(sink.received_bytes > 0);
    let at = |t: f64| sink.samples.iter().find(|s| (s.0 - t).abs() < 1e-9).unwrap().1;
    // Stopped at 0.3 s: what was sent by then is delivered by 0.5 s and nothing after.
    assert!(at(0.3) > 0);
    assert_eq!(at(0.5), at(0.8), "bytes still arriving long after the stop");
    assert_eq!(sink.at_end_bytes, rec.at_end.bytes_acked);
    assert_eq!(rec.completion_time_s, None);
}

#[test]
fn a_sink_takes_one_stream_and_no_file_and_a_file_receiver_takes_no_stream() {
    let t0 = mono_ns();
    // The file receiver refuses a stream.
    let dir = common::tempdir("stream");
    let mut rx = Receiver::bind("127.0.0.1:0", &dir, ReceiverOptions::default()).unwrap();
    let raddr = rx.local_addr().to_string();
    let h = thread::spawn(move || {
        let start = std::time::Instant::now();
        rx.serve(false, &mut |_| start.elapsed() < Duration::from_secs(2)).unwrap();
    });
    let opts = StreamOptions { t0_mono_ns: t0, duration_ns: 500 * MS, ..StreamOptions::default() };
    match send_stream(None, &raddr, &opts, &mut || true) {
        Err(TransferError::Rejected { message, .. }) => assert!(message.contains("not streams"), "{message}"),
        other => panic!("a file receiver took a stream: {other:?}"),
    }
    h.join().unwrap();

    // A sink refuses a file.
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts(mono_ns(), 1000 * MS)).unwrap();
    let saddr = sink.local_addr().to_string();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let file = dir.join("f.bin");
    std::fs::write(&file, b"hello").unwrap();
    match send_file(&file, &saddr, &SendOptions::default(), &mut |_| true) {
        Err(TransferError::Rejected { message, .. }) => assert!(message.contains("stream sink"), "{message}"),
        other => panic!("a sink took a file: {other:?}"),
    }
    let rec = h.join().unwrap();
    assert!(!rec.connected);
    assert_eq!(rec.counters.rejected_offers, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sink_drops_hostile_input_and_its_state_stays_bounded() {
    use ccarena_udp::wire::{encode, kind_of, Frame, Header, VERSION};
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts(mono_ns(), 1000 * MS)).unwrap();
    let peer: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let packet = |conn_id: u64, pn: u64, frame: &Frame<'_>| {
        let mut buf = Vec::new();
        encode(&Header { version: VERSION, kind: kind_of(frame), conn_id, pn }, frame, &mut buf);
        buf
    };
    // Garbage, and an offer without a valid cookie: dropped, no state.
    let mut x = 7u64;
    for _ in 0..2000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let len = (x >> 53) as usize;
        let bytes: Vec<u8> = (0..len).map(|i| (x >> (i % 56)) as u8).collect();
        sink.on_datagram(&bytes, peer);
    }
    let offer = |cookie| Frame::StreamOffer { cookie, stream_bytes: 1 << 30, mss_bytes: 1000, flavor: "cubic", ecn: None, quic: None };
    sink.on_datagram(&packet(5, 0, &offer([0; 16])), peer);
    assert!(!sink.connected());
    assert!(sink.counters().malformed > 0 && sink.counters().bad_cookie == 1);
    // A real offer; then a second stream is refused.
    sink.on_datagram(&packet(5, 0, &offer(sink.cookie_for(peer, 5))), peer);
    assert!(sink.connected());
    sink.on_datagram(&packet(6, 0, &offer(sink.cookie_for(peer, 6))), peer);
    assert_eq!(sink.counters().connection_limit, 1);
    let data = |offset: u64| Frame::Data { offset, ts_val_ns: 1, flags: 0, payload: &[0u8; 1000] };
    // DATA of another connection, beyond the stream, a replayed packet number: dropped.
    sink.on_datagram(&packet(6, 1, &data(0)), peer);
    assert_eq!(sink.counters().unknown_connection, 1);
    sink.on_datagram(&packet(5, 1, &data((1 << 30) - 10)), peer);
    sink.on_datagram(&packet(5, 2, &data(0)), peer);
    sink.on_datagram(&packet(5, 2, &data(1000)), peer);
    assert_eq!(sink.counters().replayed, 1);
    assert_eq!(sink.delivered_bytes(), 1000);
    // Scattered DATA (every other segment) cannot open more than 1024 out-of-order ranges.
    for k in 0..3000u64 {
        sink.on_datagram(&packet(5, 3 + k, &data(2000 + 2000 * k)), peer);
    }
    assert_eq!(sink.out_of_order_ranges(), ccarena_udp::MAX_OOO_RANGES);
    assert!(sink.counters().out_of_bounds >= 3000 - 1024);
}

fn quic_settings() -> ccarena_udp::wire::QuicOffer {
    ccarena_udp::wire::QuicOffer {
        ack_eliciting_threshold: 2,
        reordering_threshold: 1,
        max_ack_delay_ns: 25 * MS,
        initial_rtt_ns: 333 * MS,
        max_stream_data_bytes: u64::MAX,
        pacing: true,
    }
}

#[test]
fn a_quic_flow_delivers_its_bytes_within_the_sinks_connection_window() {
    let t0 = mono_ns() + 100 * MS;
    let bytes = 3_000_000;
    let opts = StreamOptions {
        flavor: "cubic".into(),
        bytes: Some(bytes),
        t0_mono_ns: t0,
        start_ns: 200 * MS,
        duration_ns: 1000 * MS,
        quic: Some(quic_settings()),
        ..StreamOptions::default()
    };
    // A 256 KiB receive window: the connection's MAX_DATA credit (RFC 9000 §4.1).
    let sopts = SinkOptions { rwnd_bytes: Some(256 * 1024), ..sink_opts(opts.t0_mono_ns, opts.duration_ns) };
    let mut sink = Sink::bind("127.0.0.1:0", sopts).unwrap();
    let addr = sink.local_addr().to_string();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let rec = send_stream(Some("127.0.0.1"), &addr, &opts, &mut || true).unwrap();
    let sink = h.join().unwrap();
    assert_eq!(rec.recovery, "rfc9002");
    assert_eq!(sink.received_bytes, bytes);
    assert!(sink.closed_by_sender);
    assert_eq!(sink.counters.out_of_bounds, 0, "the sender kept within the credit");
    let done = rec.completion_time_s.expect("a finite flow completes");
    assert!(done > 0.0 && done < 0.8, "completion {done}");
    assert_eq!(rec.at_end.bytes_acked, bytes);
    assert!(sink.data_segs_in >= bytes.div_ceil(rec.mss_bytes as u64));
    assert!(rec.at_end.min_rtt_us.is_some());
    assert!(rec.samples.iter().any(|s| s.srtt_s.is_some() && s.cwnd_bytes > 0));
}

#[test]
fn a_quic_sink_stays_bounded_against_a_hostile_sender() {
    use ccarena_udp::wire::{encode, kind_of, Frame, Header, VERSION};
    use ccarena_udp::MAX_OOO_RANGES;
    let opts = SinkOptions { t0_mono_ns: mono_ns(), duration_ns: 1000 * MS, interval_ns: 100 * MS, rwnd_bytes: Some(1 << 30), ..SinkOptions::default() };
    let mut sink = Sink::bind("127.0.0.1:0", opts).unwrap();
    let peer: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let packet = |pn: u64, frame: &Frame<'_>| {
        let mut buf = Vec::new();
        encode(&Header { version: VERSION, kind: kind_of(frame), conn_id: 5, pn }, frame, &mut buf);
        buf
    };
    // Settings the receiver refuses: max_ack_delay of 2^14 ms (RFC 9000 §18.2), threshold 0.
    for bad in [
        ccarena_udp::wire::QuicOffer { max_ack_delay_ns: (1 << 14) * MS, ..quic_settings() },
        ccarena_udp::wire::QuicOffer { ack_eliciting_threshold: 0, ..quic_settings() },
    ] {
        let offer = Frame::StreamOffer { cookie: sink.cookie_for(peer, 4), stream_bytes: u64::MAX, mss_bytes: 1000, flavor: "cubic", ecn: None, quic: Some(bad) };
        sink.on_datagram(&encode_with(4, &offer), peer);
        assert!(!sink.connected());
    }
    fn encode_with(conn_id: u64, frame: &Frame<'_>) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&Header { version: VERSION, kind: kind_of(frame), conn_id, pn: 0 }, frame, &mut buf);
        buf
    }
    let offer = Frame::StreamOffer { cookie: sink.cookie_for(peer, 5), stream_bytes: u64::MAX, mss_bytes: 1000, flavor: "cubic", ecn: None, quic: Some(quic_settings()) };
    sink.on_datagram(&packet(0, &offer), peer);
    assert!(sink.connected());
    let data = |pn: u64, offset: u64| Frame::QuicData { pn, offset, flags: 0, payload: &[0u8; 100] };
    sink.on_datagram(&packet(1, &data(0, 0)), peer);
    assert_eq!(sink.delivered_bytes(), 100);
    // Beyond the credit (1 GiB past the delivered bytes), and TCP-like DATA on a QUIC stream:
    // dropped and counted.
    sink.on_datagram(&packet(2, &data(1, 1 << 31)), peer);
    sink.on_datagram(&packet(3, &Frame::Data { offset: 100, ts_val_ns: 1, flags: 0, payload: &[0u8; 100] }), peer);
    assert_eq!(sink.counters().out_of_bounds, 2);
    // Thousands of disjoint stream ranges, at scattered packet numbers: the stream ranges held
    // stay within MAX_OOO_RANGES (the rest dropped), whatever the packet numbers do.
    let mut pn_out = 4;
    for i in 0..3 * MAX_OOO_RANGES as u64 {
        sink.on_datagram(&packet(pn_out, &data(7 * i + 2, 1000 + 300 * i)), peer);
        pn_out += 1;
        assert!(sink.out_of_order_ranges() <= MAX_OOO_RANGES);
    }
    assert_eq!(sink.out_of_order_ranges(), MAX_OOO_RANGES);
    assert!(sink.counters().out_of_bounds >= 2 + 2 * MAX_OOO_RANGES as u64);
    // The hole filled in order: delivery resumes.
    for (k, pn) in (1..10u64).zip(1u64 << 40..) {
        sink.on_datagram(&packet(pn_out, &data(pn, k * 100)), peer);
        pn_out += 1;
    }
    assert_eq!(sink.delivered_bytes(), 1000 + 100);
    // A PING probe (no stream bytes) at any offset is taken.
    sink.on_datagram(&packet(pn_out, &Frame::QuicData { pn: 1 << 50, offset: (1 << 62) - 1, flags: 0, payload: &[] }), peer);
    assert_eq!(sink.delivered_bytes(), 1100);
}
