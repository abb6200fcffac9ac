//! Scenario flows over loopback: a stream sender and a sink sampled on one grid; a finite flow
//! delivers exactly its bytes and reports its completion; an unbounded flow stops writing at its
//! stop time; a sink takes one stream and refuses files; a file receiver refuses streams.

use std::thread;
use std::time::Duration;

use ccarena_udp::stream::mono_ns;
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
    let dir = std::env::temp_dir().join(format!("ccarena-udp-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
