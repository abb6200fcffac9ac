//! quinn on 127.0.0.1: a sink and a sender in two threads move a stream with ccarena's
//! controllers inside quinn and with quinn's own CUBIC; every byte arrives, the records are
//! filled.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use ccarena_quinn::driver::{send, sink, SendOptions, SinkOptions};
use ccarena_quinn::{QuicImpl, RunCertificate, SendRecord, SinkRecord};

/// One run of `bytes` with `flavor` under `which`; the sink first, on port 0.
fn run(which: QuicImpl, flavor: &str, bytes: u64) -> (SendRecord, SinkRecord) {
    run_with_sink_buffer(which, flavor, bytes, None)
}

/// [`run`], the sink's socket buffer `sink_buffer_bytes` if given.
fn run_with_sink_buffer(which: QuicImpl, flavor: &str, bytes: u64, sink_buffer_bytes: Option<usize>) -> (SendRecord, SinkRecord) {
    let cert = RunCertificate::generate().unwrap();
    let mut sink_opts = SinkOptions::new("127.0.0.1:0", cert.clone());
    sink_opts.idle_timeout = Duration::from_secs(3);
    if let Some(b) = sink_buffer_bytes {
        sink_opts.socket_buffer_bytes = b;
    }
    let (tx, rx) = mpsc::channel();
    let sink_thread = thread::spawn(move || sink(&sink_opts, &mut |addr| tx.send(addr).is_ok()).unwrap());
    let addr = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let mut opts = SendOptions::new(which, flavor, &addr.to_string(), &cert.cert_der, bytes);
    opts.interval = Duration::from_millis(20);
    let s = send(&opts).unwrap();
    let r = sink_thread.join().unwrap();
    let goodput = s.goodput_bps.unwrap_or(0.0) / 1e6;
    println!(
        "{:<24} {:>6.0} Mbit/s  {:.3} s  rtt p50 {:.3} ms p99 {:.3} ms ({} samples)  lost {} pkts  {} congestion events  cpu {:.3} s  mtu {}",
        s.controller, goodput, s.completion_time_s.unwrap_or(f64::NAN), s.rtt.p50_ms, s.rtt.p99_ms, s.rtt.samples,
        s.lost_packets, s.congestion_events, s.sender_cpu_s, s.mtu
    );
    (s, r)
}

fn check(s: &SendRecord, r: &SinkRecord, bytes: u64) {
    assert!(s.completed, "{}: not completed", s.controller);
    assert_eq!(s.stream_bytes_written, bytes);
    assert_eq!(r.delivered_bytes, bytes, "{}: every byte delivered, once", s.controller);
    assert!(r.finished && r.connected);
    assert!(s.goodput_bps.unwrap() > 0.0 && r.goodput_bps > 0.0);
    assert!(s.rtt.samples > 0 && s.rtt.min_ms > 0.0 && s.rtt.min_ms <= s.rtt.p50_ms && s.rtt.p50_ms <= s.rtt.p99_ms);
    assert!(!s.samples.is_empty(), "sampled on the grid");
    assert!(s.samples.iter().all(|x| x.cwnd_bytes >= 2400), "cwnd from the controller");
    assert!(s.bytes_sent > bytes, "headers and ACKs on top of the stream");
    // The sink's samples end at what it delivered.
    assert!(r.samples.windows(2).all(|w| w[0].delivered_bytes <= w[1].delivered_bytes));
}

#[test]
fn ccarena_cubic_inside_quinn_moves_20_mb() {
    let bytes = 20_000_000;
    let (s, r) = run(QuicImpl::Quinn, "cubic", bytes);
    check(&s, &r, bytes);
    assert_eq!(s.controller, "ccarena cubic in quinn");
}

#[test]
fn quinn_native_cubic_moves_20_mb() {
    let bytes = 20_000_000;
    let (s, r) = run(QuicImpl::QuinnNative, "cubic", bytes);
    check(&s, &r, bytes);
    assert_eq!(s.controller, "quinn's cubic");
}

#[test]
fn ccarena_bbr_and_reno_inside_quinn_move_5_mb() {
    let bytes = 5_000_000;
    for flavor in ["bbr", "reno"] {
        let (s, r) = run(QuicImpl::Quinn, flavor, bytes);
        check(&s, &r, bytes);
        if flavor == "bbr" {
            assert!(s.samples.iter().any(|x| x.pacing_rate_bps.is_some()), "BBR reports a pacing rate");
        }
    }
}

#[test]
fn losses_at_a_small_sink_buffer_are_recovered_with_ccarena_controllers() {
    // A 16 KiB receive buffer (the kernel doubles it) overflows on loopback bursts: quinn
    // declares the drops lost, the controller gets congestion events, the stream still arrives
    // whole.
    let bytes = 5_000_000;
    for flavor in ["reno", "cubic"] {
        let (s, r) = run_with_sink_buffer(QuicImpl::Quinn, flavor, bytes, Some(16 * 1024));
        check(&s, &r, bytes);
        assert!(s.lost_packets > 0 && s.congestion_events > 0, "{flavor}: losses seen: {s:?}");
        assert_eq!(s.loss_events, s.congestion_events, "{flavor}: every event reached the controller as a loss");
        assert!(s.samples.iter().any(|x| x.ssthresh_bytes.is_some()), "{flavor}: a reduction set ssthresh");
    }
}

#[test]
fn a_flavor_quinn_lacks_is_refused_before_any_socket() {
    let cert = RunCertificate::generate().unwrap();
    let opts = SendOptions::new(QuicImpl::QuinnNative, "vegas", "127.0.0.1:9", &cert.cert_der, 1000);
    let e = send(&opts).unwrap_err().to_string();
    assert!(e.contains("quinn has no 'vegas'"), "{e}");
}
