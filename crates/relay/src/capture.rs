//! Packet capture in the relay: one pcap file per captured link direction, of the real frames it
//! forwards, with the simulator's capture point (`crates/sim/src/pcap`, docs/engine-spec.md,
//! "Packet capture"), written with the `pcap-file` crate (Ethernet, nanosecond timestamps).
//!
//! **Capture point.** A frame is recorded when the emulated link starts serializing it, after its
//! queue: a frame the queue drops never appears, one the wire then loses does, with CE set if the
//! discipline marked it. Its timestamp is that instant as the link model computes it (not when
//! the relay got round to it), on the run's clock: ns since the start instant (`start_ns`, the
//! kernel backend's `t0`), so t = 0 is the run's start as in the simulator. A frame that starts
//! before the start instant, or before it is known (the TCP handshake happens before `t0`), is
//! stamped 0. A link change that retimes frames already scheduled (a rate change) does not move
//! their records: they keep the instant the model gave when the frame was offered.
//!
//! **Snap length: headers only** ([`snap_bytes`]): Ethernet (and a VLAN tag), the IP header
//! (IPv4 with its options, or IPv6's fixed 40 bytes), the TCP header with its options, or the UDP
//! header and the first [`UDP_PAYLOAD_SNAP_BYTES`] payload bytes (a user-space transport's own
//! header: ccarena's udp wire header, docs/udp-wire.md, or QUIC's short header). Other frames
//! (ARP) up to [`OTHER_SNAP_BYTES`]. The record's original length is the frame's length.
//!
//! **A GSO batch is one record**, its headers and its original (batch) length, as a tcpdump on
//! the sending interface shows it: the relay forwards it as one frame, and splitting it would mean
//! forging each segment's sequence number, IP ID and checksums. The kernel backend turns
//! offloads off on its interfaces, so batches do not normally occur.
//!
//! **Bounded, as the simulator's** (`ccarena_link::capture`, the file both write): a file stops
//! growing at `max_bytes` (the 24-byte file header included): the first record that would take it
//! past, and every later one, is counted in [`CaptureStats::packets_over_limit`] and not written.
//!
//! **No file I/O on the forwarding path.** Records are appended to an in-memory chunk
//! ([`CHUNK_BYTES`]); a full chunk is handed to the file's writer thread, which writes it and
//! hands the buffer back. The forwarding thread only copies bytes (a buffer is allocated only if
//! the writer falls a chunk behind). A write error stops the file and is reported at the end in
//! [`CaptureStats::error`] (what was handed over after it is lost).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

pub use ccarena_link::capture::{CaptureStats, FILE_HEADER_BYTES, RECORD_HEADER_BYTES, SNAPLEN_BYTES};
use ccarena_link::capture::{BoundedCapture, CaptureSink};

use crate::frame::{network_offset, ETH_P_IPV4, ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP};

/// UDP payload bytes kept after the UDP header: ccarena's udp wire header and its largest frame
/// header (20 + 25 bytes, crates/udp/src/wire.rs), or a QUIC short header.
pub const UDP_PAYLOAD_SNAP_BYTES: usize = 48;
/// Bytes kept of a frame that is not IPv4/IPv6 carrying TCP or UDP (ARP is 42).
pub const OTHER_SNAP_BYTES: usize = 64;
/// Bytes the forwarding thread collects before handing them to the writer thread.
pub const CHUNK_BYTES: usize = 1 << 20;

/// One captured direction's file: where, and at most how many bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureConfig {
    /// The pcap file to create (replaced if it exists).
    pub path: PathBuf,
    /// The file's size limit, bytes (its header included).
    pub max_bytes: u64,
}

/// Bytes of `frame` (an Ethernet frame) a record keeps: its headers (see the module docs), never
/// more than the frame.
pub fn snap_bytes(frame: &[u8]) -> usize {
    let (l3, ethertype) = network_offset(frame);
    let l4_proto = match ethertype {
        Some(ETH_P_IPV4) => frame.get(l3).map(|b| (l3 + usize::from(b & 0x0f) * 4, frame.get(l3 + 9).copied())),
        Some(ETH_P_IPV6) => Some((l3 + 40, frame.get(l3 + 6).copied())),
        _ => None,
    };
    let end = match l4_proto {
        Some((l4, Some(IPPROTO_TCP))) => frame.get(l4 + 12).map_or(frame.len(), |off| l4 + usize::from(off >> 4) * 4),
        Some((l4, Some(IPPROTO_UDP))) => l4 + 8 + UDP_PAYLOAD_SNAP_BYTES,
        Some((l4, _)) => l4,
        None => OTHER_SNAP_BYTES,
    };
    end.min(frame.len())
}

/// A `Write` that collects bytes into chunks and hands each full chunk to a writer thread.
struct ChunkWriter {
    chunk: Vec<u8>,
    full: Option<Sender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl ChunkWriter {
    fn new(file: File) -> io::Result<ChunkWriter> {
        let (full_tx, full_rx) = mpsc::channel::<Vec<u8>>();
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
        // A spare chunk, so the first hand-over finds one without allocating.
        empty_tx.send(Vec::with_capacity(CHUNK_BYTES)).expect("the receiver is alive");
        let thread = std::thread::Builder::new().name("relay-pcap".into()).spawn(move || write_chunks(file, &full_rx, &empty_tx))?;
        Ok(ChunkWriter { chunk: Vec::with_capacity(CHUNK_BYTES), full: Some(full_tx), empty: empty_rx, thread: Some(thread) })
    }

    fn hand_over(&mut self) {
        let next = self.empty.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES));
        let chunk = std::mem::replace(&mut self.chunk, next);
        if let Some(tx) = &self.full {
            // A writer that stopped on an error has dropped its receiver: the bytes are lost,
            // and `close` reports the error.
            let _ = tx.send(chunk);
        }
    }

}

impl CaptureSink for ChunkWriter {
    /// Hand over what is left, wait for the writer thread, and return its error if it had one.
    fn finish(mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            self.hand_over();
        }
        self.full = None; // ends the writer's loop
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the pcap writer thread panicked")),
            None => Ok(()),
        }
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(buf);
        if self.chunk.len() >= CHUNK_BYTES {
            self.hand_over();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writer thread: write every chunk to `file`, hand the buffer back; stop at the first error.
fn write_chunks(mut file: File, full: &Receiver<Vec<u8>>, empty: &Sender<Vec<u8>>) -> io::Result<()> {
    for mut chunk in full {
        file.write_all(&chunk)?;
        chunk.clear();
        let _ = empty.send(chunk);
    }
    file.flush()
}

/// The capture of one link direction: its bounded pcap file, written by a writer thread.
#[derive(Debug)]
pub struct LinkCapture {
    file: BoundedCapture<ChunkWriter>,
}

impl LinkCapture {
    /// Create `path` and write its pcap file header (Ethernet, nanosecond timestamps, little
    /// endian, snap length [`SNAPLEN_BYTES`]); at most `max_bytes` will be written. Starts the
    /// file's writer thread.
    ///
    /// # Errors
    /// The file cannot be created, or the thread not started.
    pub fn create(path: &Path, max_bytes: u64) -> io::Result<LinkCapture> {
        Ok(LinkCapture { file: BoundedCapture::new(ChunkWriter::new(File::create(path)?)?, max_bytes)? })
    }

    /// Record `frame` (an Ethernet frame, no virtio header) starting serialization `t_ns` after
    /// the run's start: its headers ([`snap_bytes`]) with its full length as original length.
    pub fn record(&mut self, t_ns: u64, frame: &[u8]) {
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        self.file.record(t_ns, orig_len, &frame[..snap_bytes(frame)]);
    }

    /// Write out what is buffered, close the file and return what was written.
    pub fn finish(mut self) -> CaptureStats {
        self.file.finish()
    }
}
