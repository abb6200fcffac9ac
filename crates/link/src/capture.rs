//! A link direction's packet capture file, bounded in size, as the simulator (`crates/sim/src/pcap`)
//! and the relay (`crates/relay/src/capture.rs`) both write it: pcap (not pcapng), Ethernet,
//! nanosecond timestamps, little endian, written with the `pcap-file` crate into whatever
//! [`CaptureSink`] the caller gives (a buffered file in the simulator, a hand-over to a writer
//! thread in the relay: this module opens no file).
//!
//! **Bounded.** A file stops growing at `max_bytes` (the 24-byte file header included): the first
//! record that would take it past, and every later one, is counted in
//! [`CaptureStats::packets_over_limit`] and not written. A write error stops the file too and is
//! kept in [`CaptureStats::error`]; the caller's run goes on.

use std::io::{self, Write};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Bytes of pcap's file header.
pub const FILE_HEADER_BYTES: u64 = 24;
/// Bytes of pcap's per-record header.
pub const RECORD_HEADER_BYTES: u64 = 16;
/// The snap length the file header declares: the longest frame a record may say it cut (records
/// hold headers only; their original lengths go up to this).
pub const SNAPLEN_BYTES: u32 = 65_535;

/// What one link direction's capture wrote.
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

/// Where a capture's bytes go, and how it is finished when the file stops (full, failed or at
/// the end of the run): flush a buffered file, or hand the last chunk to a writer thread and
/// wait for it.
pub trait CaptureSink: Write {
    /// Write out everything still held and release the file.
    ///
    /// # Errors
    /// The last write, or an earlier one the sink deferred, failed.
    fn finish(self) -> io::Result<()>;
}

/// A buffered file: finished by flushing it (it is closed when dropped).
impl CaptureSink for std::io::BufWriter<std::fs::File> {
    fn finish(mut self) -> io::Result<()> {
        self.flush()
    }
}

/// A pcap file limited to `max_bytes` (see the module docs) over the sink `W`.
pub struct BoundedCapture<W: CaptureSink> {
    writer: Option<PcapWriter<W>>,
    max_bytes: u64,
    stats: CaptureStats,
}

impl<W: CaptureSink> std::fmt::Debug for BoundedCapture<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedCapture").field("max_bytes", &self.max_bytes).field("stats", &self.stats).finish()
    }
}

impl<W: CaptureSink> BoundedCapture<W> {
    /// Write the pcap file header (Ethernet, nanosecond timestamps, little endian, snap length
    /// [`SNAPLEN_BYTES`]) to `sink`; at most `max_bytes` will be written in all.
    ///
    /// # Errors
    /// The header cannot be written.
    pub fn new(sink: W, max_bytes: u64) -> io::Result<BoundedCapture<W>> {
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
        let writer = PcapWriter::with_header(sink, header).map_err(io::Error::other)?;
        Ok(BoundedCapture { writer: Some(writer), max_bytes, stats: CaptureStats { bytes_written: FILE_HEADER_BYTES, ..CaptureStats::default() } })
    }

    /// True while records are still written (the file is neither full nor failed).
    pub fn is_open(&self) -> bool {
        self.writer.is_some()
    }

    /// Count a packet left out without writing it (the file has stopped: a caller that builds
    /// its record first checks [`BoundedCapture::is_open`] and calls this instead).
    pub fn skip(&mut self) {
        self.stats.packets_over_limit += 1;
    }

    /// Record `kept` (the bytes the record holds) of a frame `orig_len` bytes long at `t_ns`;
    /// counted and left out once the file has stopped or when the record would take it past
    /// `max_bytes` (which stops it).
    pub fn record(&mut self, t_ns: u64, orig_len: u32, kept: &[u8]) {
        let Some(writer) = self.writer.as_mut() else {
            self.skip();
            return;
        };
        let record_bytes = RECORD_HEADER_BYTES + kept.len() as u64;
        if self.stats.bytes_written + record_bytes > self.max_bytes {
            // Full: this record and every later one are left out.
            self.skip();
            self.close();
            return;
        }
        match writer.write_packet(&PcapPacket::new(Duration::from_nanos(t_ns), orig_len, kept)) {
            Ok(_) => {
                self.stats.packets_written += 1;
                self.stats.bytes_written += record_bytes;
            }
            Err(e) => {
                self.skip();
                // pcap-file words an I/O error "Error reading bytes" even when writing: keep the OS's words.
                let message = match e {
                    pcap_file::PcapError::IoError(io) => io.to_string(),
                    other => other.to_string(),
                };
                self.stats.error.get_or_insert(message);
                self.close();
            }
        }
    }

    /// Finish the sink and write no more; its error, if any, is kept in the stats.
    fn close(&mut self) {
        if let Some(writer) = self.writer.take() {
            if let Err(e) = writer.into_writer().finish() {
                self.stats.error.get_or_insert(e.to_string());
            }
        }
    }

    /// Finish the file and return what was written; later records are counted, not written.
    pub fn finish(&mut self) -> CaptureStats {
        self.close();
        self.stats.clone()
    }
}

impl<W: CaptureSink> Drop for BoundedCapture<W> {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink in memory that fails every write after `fail_after` bytes.
    struct Memory {
        bytes: Vec<u8>,
        fail_after: usize,
        finished: bool,
    }

    impl Write for Memory {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.bytes.len() + buf.len() > self.fail_after {
                return Err(io::Error::other("disk full"));
            }
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl CaptureSink for &mut Memory {
        fn finish(self) -> io::Result<()> {
            self.finished = true;
            Ok(())
        }
    }

    #[test]
    fn stops_at_the_first_record_past_the_limit_and_counts_the_rest() {
        let mut sink = Memory { bytes: Vec::new(), fail_after: usize::MAX, finished: false };
        // Header 24 + two records of 16 + 10: 76 fits, a third (102) does not.
        let mut cap = BoundedCapture::new(&mut sink, 90).unwrap();
        for t in 0..5 {
            cap.record(t, 1500, &[0u8; 10]);
        }
        let stats = cap.finish();
        assert_eq!((stats.packets_written, stats.packets_over_limit, stats.bytes_written), (2, 3, 76));
        assert_eq!(stats.error, None);
        drop(cap);
        assert!(sink.finished);
        assert_eq!(sink.bytes.len(), 76);
    }

    #[test]
    fn a_write_error_stops_the_file_and_is_kept() {
        let mut sink = Memory { bytes: Vec::new(), fail_after: 50, finished: false };
        let mut cap = BoundedCapture::new(&mut sink, 1 << 20).unwrap();
        cap.record(0, 60, &[0u8; 10]); // 24 + 26 = 50: fits
        cap.record(1, 60, &[0u8; 10]); // fails
        assert!(!cap.is_open());
        cap.record(2, 60, &[0u8; 10]);
        let stats = cap.finish();
        assert_eq!((stats.packets_written, stats.packets_over_limit), (1, 2));
        assert_eq!(stats.error.as_deref(), Some("disk full"));
    }
}
