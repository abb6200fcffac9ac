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
//! The file is bounded as the relay's is (`ccarena_link::capture`): it stops growing at its size
//! limit (`max_bytes`, the 24-byte file header included); what is left out is counted in
//! [`CaptureStats::packets_over_limit`], and a write error stops the file and is kept in
//! [`CaptureStats::error`]; the run goes on.

pub mod frame;

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use ccarena_cc::SimTime;
use ccarena_link::capture::BoundedCapture;
pub use ccarena_link::capture::CaptureStats;

use crate::packet::Packet;
use frame::{write_frame, FlowAddress, MAX_FRAME_BYTES};

/// The capture of one link direction: its bounded pcap file and the frame being synthesized.
pub struct LinkCapture {
    file: BoundedCapture<BufWriter<File>>,
    /// Per flow, its addresses and ports (shared by every captured link).
    flows: Arc<[FlowAddress]>,
    /// The frame being synthesized (reused).
    buf: Vec<u8>,
}

impl std::fmt::Debug for LinkCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkCapture").field("file", &self.file).finish()
    }
}

impl LinkCapture {
    /// Create `path` and write its pcap file header (Ethernet, nanosecond timestamps, little
    /// endian); at most `max_bytes` will be written.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, flows: Arc<[FlowAddress]>, max_bytes: u64) -> std::io::Result<LinkCapture> {
        let file = BoundedCapture::new(BufWriter::with_capacity(1 << 16, File::create(path)?), max_bytes)?;
        Ok(LinkCapture { file, flows, buf: Vec::with_capacity(MAX_FRAME_BYTES) })
    }

    /// Record `pkt` starting serialization at `at` on the link from node `from` to node `to`.
    /// Out of line and cold: a link without capture never calls it.
    #[cold]
    #[inline(never)]
    pub fn record(&mut self, at: SimTime, pkt: &Packet, from: u32, to: u32) {
        if !self.file.is_open() {
            self.file.skip();
            return;
        }
        let flow = &self.flows[pkt.flow as usize];
        let orig_len = write_frame(&mut self.buf, pkt, from, to, at, flow);
        self.file.record(at.as_nanos(), orig_len, &self.buf);
    }

    /// Flush the file and return what was written; later records are counted, not written.
    pub fn finish(&mut self) -> CaptureStats {
        self.file.finish()
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
