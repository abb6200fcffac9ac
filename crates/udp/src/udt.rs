//! UDT on real sockets: UDT4's settings for the UDT transport's sans-IO
//! [`UdtSender`](ccarena_transport::udt::UdtSender) and
//! receiver (`ccarena_transport::udt`, the code the simulator runs; Gu & Grossman, Computer
//! Networks 2007; draft-gg-udt-03), and UDT's ACK and NAK rebuilt from their wire frames.
//!
//! A file transfer or a scenario stream with flavor `udt` uses them through `tx`: the
//! handshake is the others' (OFFER or STREAM_OFFER with flavor `udt`, docs/udp-wire.md), and
//! UDT's data, ACK, ACK2 and NAK packets travel as the UDT_DATA, UDT_ACK, UDT_ACK2 and UDT_NAK
//! frames.

use std::time::Duration;

use ccarena_cc::udt::Udt;
use ccarena_cc::Params;
use ccarena_transport::udt::{AckPacket, LossRange, NakPacket, UdtSenderConfig};

use crate::error::TransferError;
use crate::wire::{self, UdtAckFrame};

/// The flavor name that selects UDT's transport instead of the TCP-like one.
pub const UDT_FLAVOR: &str = "udt";
/// SYN, the rate-control and ACK interval: UDT4's and the draft's 10 ms (draft-gg-udt-03 §4).
pub const SYN: Duration = Duration::from_millis(10);
/// The maximum flow window, packets: UDT4's default receiver buffer (the simulator's default).
pub const FLOW_WINDOW_PACKETS: u32 = 25_600;
/// RTT assumed before the first measurement (UDT4: 10·SYN).
pub const INITIAL_RTT: Duration = Duration::from_millis(100);
/// Floor of the EXP period (draft-gg-udt-03 §4: "e.g., 0.5 second").
pub const MIN_EXP: Duration = Duration::from_millis(500);

fn cc_dur(d: Duration) -> ccarena_cc::Duration {
    ccarena_cc::Duration(d.as_nanos() as u64)
}

/// UDT's ACK from a UDT_ACK frame.
pub(crate) fn ack_packet(a: &UdtAckFrame) -> AckPacket {
    AckPacket {
        ack_seq: a.ack_seq,
        ack_no: a.ack_no,
        rtt: ccarena_cc::Duration(a.rtt_ns),
        rtt_var: ccarena_cc::Duration(a.rtt_var_ns),
        buffer_available_packets: a.buffer_available_packets,
        arrival_rate_pps: a.arrival_rate_pps,
        link_capacity_pps: a.link_capacity_pps,
    }
}

/// UDT's NAK from a UDT_NAK frame's ranges.
pub(crate) fn nak_packet(ranges: &[(u64, u64)]) -> NakPacket {
    let mut nak = NakPacket::default();
    for (x, &(start, end)) in nak.ranges.iter_mut().zip(ranges) {
        *x = LossRange { start, end };
    }
    nak.count = ranges.len().min(nak.ranges.len()) as u8;
    nak
}

/// The UDT sender's settings (UDT4's defaults: [`SYN`], [`FLOW_WINDOW_PACKETS`],
/// [`INITIAL_RTT`], [`MIN_EXP`]) for packets of `mss_bytes`, and its controller with `params`.
///
/// # Errors
/// [`TransferError::Config`]: an MSS outside 1 to [`wire::MAX_UDT_PAYLOAD_BYTES`], a bad parameter.
pub(crate) fn udt_sender_setup(mss_bytes: u32, params: &Params) -> Result<(UdtSenderConfig, Udt), TransferError> {
    let config = |message: String| TransferError::Config { message };
    if mss_bytes == 0 || mss_bytes as usize > wire::MAX_UDT_PAYLOAD_BYTES {
        return Err(config(format!(
            "mss: {mss_bytes} bytes; a UDT_DATA packet carries 1 to {}",
            wire::MAX_UDT_PAYLOAD_BYTES
        )));
    }
    let cc = Udt::new(params).map_err(|e| config(format!("params: {e}")))?;
    let cfg = UdtSenderConfig {
        mss_bytes,
        syn_interval: cc_dur(SYN),
        max_flow_window_packets: FLOW_WINDOW_PACKETS,
        initial_rtt: cc_dur(INITIAL_RTT),
        min_exp: cc_dur(MIN_EXP),
    };
    cfg.validate().map_err(|e| config(format!("{}: {}", e.field, e.reason)))?;
    Ok((cfg, cc))
}
