//! ECN on real sockets over loopback: a stream's DATA leaves with the codepoint its flavor sets
//! (ECT(1) for Prague, ECT(0) for classic ECN, Not-ECT without) in the IP header and the sink
//! reads it there; CE marks in arriving IP headers come back in the sink's ACKs as Accurate ECN
//! counters (RFC 9768 §3.2: ACE = r.cep mod 8 from 5, ECEB = CE bytes mod 2^24).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::thread;
use std::time::{Duration, Instant};

use ccarena_transport::Ecn;
use ccarena_udp::batch::{send_queue, SendQueue};
use ccarena_udp::clock::mono_ns;
use ccarena_udp::wire::{self, decode, encode, kind_of, AckFrame, EcnFeedback, Frame, Header, VERSION};
use ccarena_udp::{send_stream, Sink, SinkOptions, StreamOptions};

const MS: u64 = 1_000_000;

fn sink_opts(t0: u64, duration_ns: u64) -> SinkOptions {
    SinkOptions { t0_mono_ns: t0, duration_ns, interval_ns: 100 * MS, grace: Duration::from_secs(2), ..SinkOptions::default() }
}

/// Run one finite flow of `flavor` (ECN `ecn`) into a fresh sink; return both records.
fn run(flavor: &str, params: Vec<(String, f64)>, ecn: bool) -> (ccarena_udp::StreamRecord, ccarena_udp::SinkRecord) {
    let t0 = mono_ns() + 50 * MS;
    let opts = StreamOptions {
        flavor: flavor.into(),
        params,
        ecn,
        bytes: Some(2_000_000),
        t0_mono_ns: t0,
        duration_ns: 600 * MS,
        ..StreamOptions::default()
    };
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts(t0, opts.duration_ns)).unwrap();
    let addr = sink.local_addr().to_string();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let rec = send_stream(Some("127.0.0.1"), &addr, &opts, &mut || true).unwrap();
    (rec, h.join().unwrap())
}

#[test]
fn each_flavor_s_codepoint_is_on_the_wire_and_read_by_the_sink() {
    // (flavor, DCTCP's ect1, ecn) → the feedback asked for and the codepoint new data carries.
    let cases = [
        ("prague", None, true, Some(EcnFeedback::AccEcn), Ecn::Ect1),
        ("dctcp", Some(1.0), true, Some(EcnFeedback::AccEcn), Ecn::Ect1),
        ("dctcp", None, true, Some(EcnFeedback::Dctcp), Ecn::Ect0),
        ("cubic", None, true, Some(EcnFeedback::Classic), Ecn::Ect0),
        ("cubic", None, false, None, Ecn::NotEct),
    ];
    for (flavor, ect1, ecn, feedback, codepoint) in cases {
        let params = ect1.map(|v| vec![("ect1".to_string(), v)]).unwrap_or_default();
        let (rec, sink) = run(flavor, params, ecn);
        let what = format!("{flavor} ecn={ecn}");
        assert_eq!(sink.received_bytes, 2_000_000, "{what}");
        assert_eq!(sink.ecn_feedback, feedback, "{what}");
        // New data carries the codepoint; retransmissions (none expected on loopback) go
        // Not-ECT (RFC 3168 §6.1.5), so every packet is one or the other.
        let at = codepoint.bits() as usize;
        let n = sink.packets_by_ecn;
        let others: u64 = (1..4).filter(|&i| i != at).map(|i| n[i]).sum();
        assert_eq!(others, 0, "{what}: {n:?}");
        assert_eq!(n.iter().sum::<u64>(), sink.data_segs_in, "{what}: {n:?}");
        assert!(n[at] >= sink.data_segs_in - rec.drained.total_retrans, "{what}: {n:?}");
        // Nothing on loopback marks CE.
        assert_eq!((n[3], sink.ce_bytes, rec.drained.accecn_ce_bytes), (0, 0, 0), "{what}");
    }
}

#[test]
fn udt_refuses_ecn_before_any_io() {
    let opts = StreamOptions { flavor: "udt".into(), ecn: true, mss_bytes: 1000, ..StreamOptions::default() };
    let e = send_stream(None, "127.0.0.1:9", &opts, &mut || true).unwrap_err();
    assert!(e.to_string().contains("UDT runs without ECN"), "{e}");
}

/// A hand-driven client of a running sink: handshake with an AccECN request, then DATA with
/// chosen IP codepoints, reading the ACKs.
struct Client {
    sock: UdpSocket,
    sink: SocketAddr,
    pn: u64,
}

const CONN: u64 = 77;

impl Client {
    fn packet(&mut self, frame: &Frame<'_>) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&Header { version: VERSION, kind: kind_of(frame), conn_id: CONN, pn: self.pn }, frame, &mut buf);
        self.pn += 1;
        buf
    }

    fn recv(&self) -> Option<Frame<'static>> {
        let mut buf = [0u8; 2048];
        let n = self.sock.recv(&mut buf).ok()?;
        let (_, f) = decode(&buf[..n]).ok()?;
        Some(match f {
            Frame::Retry { cookie } => Frame::Retry { cookie },
            Frame::Ack(a) => Frame::Ack(a),
            Frame::Accept { stream_bytes, rwnd_bytes, held } => Frame::Accept { stream_bytes, rwnd_bytes, held },
            _ => Frame::Ping,
        })
    }
}

#[test]
fn ce_in_the_ip_header_comes_back_as_accecn_counters() {
    let t0 = mono_ns();
    let mut sink = Sink::bind("127.0.0.1:0", sink_opts(t0, 1500 * MS)).unwrap();
    let sink_addr = sink.local_addr();
    let h = thread::spawn(move || sink.run(&mut || true).unwrap());
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(sink_addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut c = Client { sock, sink: sink_addr, pn: 0 };
    let hello = c.packet(&Frame::Hello);
    c.sock.send(&hello).unwrap();
    let Some(Frame::Retry { cookie }) = c.recv() else { panic!("no RETRY") };
    let offer = Frame::StreamOffer { cookie, stream_bytes: wire::UNBOUNDED_STREAM, mss_bytes: 1000, flavor: "prague", ecn: Some(EcnFeedback::AccEcn), quic: None };
    let offer = c.packet(&offer);
    c.sock.send(&offer).unwrap();
    assert!(matches!(c.recv(), Some(Frame::Accept { .. })), "no ACCEPT");

    // 12 DATA segments of 1000 bytes with the codepoints below: 9 CE (ACE wraps past 8:
    // 5 + 9 = 14 ≡ 6 mod 8), 2 ECT(1), 1 ECT(0).
    let codepoints = [Ecn::Ect1, Ecn::Ce, Ecn::Ce, Ecn::Ect0, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ect1];
    let mut q = SendQueue::default();
    for (k, &e) in codepoints.iter().enumerate() {
        let payload = [0u8; 1000];
        let data = c.packet(&Frame::Data { offset: 1000 * k as u64, ts_val_ns: 1, flags: wire::FLAG_ECT, payload: &payload });
        q.push_with_ecn(&data, c.sink, e);
    }
    let mut gso = false;
    assert_eq!(send_queue(c.sock.as_raw_fd(), &q, &mut gso).unwrap().sent, codepoints.len());

    // The ACK that covers all 12 carries the counters (AccECN ACKs at least every 2 CE marks,
    // RFC 9768 §3.2.2.5.1, and the delayed-ACK timer flushes the rest).
    let until = Instant::now() + Duration::from_secs(2);
    let mut last: Option<AckFrame> = None;
    while last.is_none_or(|a| a.ack < 12_000) && Instant::now() < until {
        if let Some(Frame::Ack(a)) = c.recv() {
            last = Some(a);
        }
    }
    let a = last.expect("ACKs");
    assert_eq!(a.ack, 12_000);
    assert_eq!(a.flags & wire::FLAG_ECE, 0, "an AccECN receiver does not set ECE");
    let fb = a.accecn.expect("AccECN fields in the ACK");
    assert_eq!(fb.ace, ((5 + 9) % 8) as u8);
    let opt = fb.option.expect("the AccECN option's counters");
    // r.e0b and r.e1b start at 1, r.ceb at 0 (RFC 9768 §3.2.1).
    assert_eq!((opt.e0b, opt.ceb, opt.e1b), (1 + 1000, 9000, 1 + 2000));
    let close = c.packet(&Frame::Close { code: 0, message: "" });
    c.sock.send(&close).unwrap();
    let rec = h.join().unwrap();
    assert_eq!(rec.packets_by_ecn, [0, 2, 1, 9]);
    assert_eq!(rec.ce_bytes, 9000);
    assert_eq!(rec.ecn_feedback, Some(EcnFeedback::AccEcn));
}
