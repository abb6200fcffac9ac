//! Packet capture out of the simulator: one pcap file per captured link direction (the spec's
//! `pcap`, docs/engine-spec.md), written with the `pcap-file` crate.
//!
//! Capture point: a packet is recorded when it starts serialization on the link, after its
//! queue (a tcpdump on the sending interface sees the same): a packet the queue drops never
//! appears, one the wire then loses (random loss, the link going down mid-packet) does, with CE
//! set if the queue marked it. The timestamp is that instant in simulated nanoseconds (pcap's
//! nanosecond format, magic 0xa1b23c4d). Each record holds the synthesized headers only
//! ([`frame`]); its original length is the packet's length on the wire plus the Ethernet header.
//!
//! A file stops growing at its size limit (`max_bytes`, the 24-byte file header included): the
//! first record that would take it past, and every later one, is counted in
//! [`CaptureStats::packets_over_limit`] and not written. A write error stops that file too and is kept in [`CaptureStats::error`]; the run
//! goes on.

pub mod frame;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use ccarena_cc::SimTime;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::packet::Packet;
use frame::{write_frame, FlowAddress, MAX_FRAME_BYTES};

/// Bytes of pcap's file header.
pub const FILE_HEADER_BYTES: u64 = 24;
/// Bytes of pcap's per-record header.
pub const RECORD_HEADER_BYTES: u64 = 16;
/// The snap length the file header declares: the longest frame it may say it cut (records hold
/// headers only, at most [`MAX_FRAME_BYTES`]; the original lengths go up to this).
pub const SNAPLEN_BYTES: u32 = 65_535;

/// What one link's capture wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packets recorded in the file.
    pub packets_written: u64,
    /// Packets not recorded because the file reached its size limit (or a write failed).
    pub packets_over_limit: u64,
    /// The file's size, bytes (header included).
    pub bytes_written: u64,
    /// The write error that stopped the file, if one did.
    pub error: Option<String>,
}

/// The capture of one link direction: a pcap writer and its counters.
pub struct LinkCapture {
    writer: Option<PcapWriter<BufWriter<File>>>,
    /// Per flow, its addresses and ports (shared by every captured link).
    flows: Arc<[FlowAddress]>,
    /// The frame being synthesized (reused).
    buf: Vec<u8>,
    max_bytes: u64,
    stats: CaptureStats,
}

impl std::fmt::Debug for LinkCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkCapture").field("max_bytes", &self.max_bytes).field("stats", &self.stats).finish()
    }
}

impl LinkCapture {
    /// Create `path` and write its pcap file header (Ethernet, nanosecond timestamps, little
    /// endian); at most `max_bytes` will be written.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, flows: Arc<[FlowAddress]>, max_bytes: u64) -> std::io::Result<LinkCapture> {
        let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN_BYTES,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
        };
        let writer = PcapWriter::with_header(file, header).map_err(std::io::Error::other)?;
        Ok(LinkCapture {
            writer: Some(writer),
            flows,
            buf: Vec::with_capacity(MAX_FRAME_BYTES),
            max_bytes,
            stats: CaptureStats { bytes_written: FILE_HEADER_BYTES, ..CaptureStats::default() },
        })
    }

    /// Record `pkt` starting serialization at `at` on the link from node `from` to node `to`.
    /// Out of line and cold: a link without capture never calls it.
    #[cold]
    #[inline(never)]
    pub fn record(&mut self, at: SimTime, pkt: &Packet, from: u32, to: u32) {
        let Some(writer) = self.writer.as_mut() else {
            self.stats.packets_over_limit += 1;
            return;
        };
        let flow = &self.flows[pkt.flow as usize];
        let orig_len = write_frame(&mut self.buf, pkt, from, to, at, flow);
        let record_bytes = RECORD_HEADER_BYTES + self.buf.len() as u64;
        if self.stats.bytes_written + record_bytes > self.max_bytes {
            // Full: this record and every later one are left out.
            self.stats.packets_over_limit += 1;
            self.close();
            return;
        }
        let record = PcapPacket::new(std::time::Duration::from_nanos(at.as_nanos()), orig_len, &self.buf);
        match writer.write_packet(&record) {
            Ok(_) => {
                self.stats.packets_written += 1;
                self.stats.bytes_written += record_bytes;
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Stop writing after an error.
    fn fail(&mut self, error: String) {
        self.writer = None;
        self.stats.packets_over_limit += 1;
        self.stats.error.get_or_insert(error);
    }

    /// Flush the file and write no more to it.
    fn close(&mut self) {
        if let Some(writer) = self.writer.take() {
            if let Err(e) = writer.into_writer().flush() {
                self.stats.error.get_or_insert(e.to_string());
            }
        }
    }

    /// Flush the file and return what was written; later records are counted, not written.
    pub fn finish(&mut self) -> CaptureStats {
        self.close();
        self.stats.clone()
    }
}

/// A link's pcap file name: its name with `->` spelled `_to_` and every character outside
/// `[A-Za-z0-9._-]` replaced by `_`, then `.pcap` (`r0->r1` → `r0_to_r1.pcap`).
pub fn file_name(link_name: &str) -> String {
    let spelled = link_name.replace("->", "_to_");
    let safe: String = spelled.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    format!("{safe}.pcap")
}

/// The file names of the captured links `links` (indices into `names`): [`file_name`], made
/// unique with `-<index>` where two names collide.
pub fn file_names(names: &[&str], links: &[usize]) -> Vec<String> {
    let plain: Vec<String> = links.iter().map(|&l| file_name(names[l])).collect();
    plain
        .iter()
        .zip(links)
        .map(|(n, &l)| if plain.iter().filter(|m| *m == n).count() > 1 { format!("{}-{l}.pcap", n.trim_end_matches(".pcap")) } else { n.clone() })
        .collect()
}
