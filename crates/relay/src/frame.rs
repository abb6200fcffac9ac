//! What a received frame weighs on the emulated link: its IP bytes and how many packets it is.
//!
//! The link model counts IP bytes (the simulator's packet sizes and htb's `stab overhead -14`:
//! a 1500-byte IP packet takes 1500·8/rate seconds) and packets. A plain frame is one packet of
//! `frame − Ethernet header` bytes. A GSO batch (offloads left on, so the virtio header says
//! `gso_type ≠ NONE`) stands for `⌈payload / gso_size⌉` packets, each with its own copy of the
//! headers, so its IP bytes are what those packets would have on the wire.

use crate::sys::VNET_HDR_LEN;

/// Ethernet header without a VLAN tag, bytes.
pub const ETH_HEADER_BYTES: usize = 14;
const ETH_P_8021Q: u16 = 0x8100;
pub(crate) const ETH_P_IPV4: u16 = 0x0800;
pub(crate) const ETH_P_IPV6: u16 = 0x86dd;
pub(crate) const IPPROTO_TCP: u8 = 6;
pub(crate) const IPPROTO_UDP: u8 = 17;
/// `virtio_net_hdr.gso_type` without its ECN bit.
const GSO_TYPE_MASK: u8 = 0x7f;

/// A frame's weight on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSize {
    /// IP bytes on the wire (all of a GSO batch's packets).
    pub ip_bytes: u64,
    /// Packets (1, or a GSO batch's segment count).
    pub packets: u64,
}

fn u16_be(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Where the IP header starts (after the Ethernet header and a VLAN tag, if any) and the
/// ethertype behind them.
pub(crate) fn network_offset(frame: &[u8]) -> (usize, Option<u16>) {
    match u16_be(frame, 12) {
        Some(ETH_P_8021Q) => (ETH_HEADER_BYTES + 4, u16_be(frame, 16)),
        ethertype => (ETH_HEADER_BYTES, ethertype),
    }
}

/// Length of the IP and TCP or UDP headers every segment of a GSO batch repeats, if the frame is
/// IPv4 or IPv6 carrying TCP or UDP.
fn repeated_header_bytes(frame: &[u8], l3: usize, ethertype: u16) -> Option<usize> {
    let (l4, proto) = match ethertype {
        ETH_P_IPV4 => (l3 + usize::from(frame.get(l3)? & 0x0f) * 4, *frame.get(l3 + 9)?),
        ETH_P_IPV6 => (l3 + 40, *frame.get(l3 + 6)?),
        _ => return None,
    };
    let end = match proto {
        IPPROTO_TCP => l4 + usize::from(frame.get(l4 + 12)? >> 4) * 4,
        IPPROTO_UDP => l4 + 8,
        _ => return None,
    };
    Some(end - l3)
}

/// The weight of `hdr_and_frame` (virtio header, then the Ethernet frame).
pub fn frame_size(hdr_and_frame: &[u8]) -> FrameSize {
    let frame = hdr_and_frame.get(VNET_HDR_LEN..).unwrap_or_default();
    let (l3, ethertype) = network_offset(frame);
    let ip_bytes = frame.len().saturating_sub(l3) as u64;
    let plain = FrameSize { ip_bytes, packets: 1 };
    let gso_type = hdr_and_frame.get(1).copied().unwrap_or(0) & GSO_TYPE_MASK;
    let gso_size = u16::from_ne_bytes([hdr_and_frame.get(4).copied().unwrap_or(0), hdr_and_frame.get(5).copied().unwrap_or(0)]);
    if gso_type == 0 || gso_size == 0 {
        return plain;
    }
    let Some(headers) = ethertype.and_then(|e| repeated_header_bytes(frame, l3, e)) else { return plain };
    let payload = frame.len().saturating_sub(l3 + headers);
    let segments = payload.div_ceil(usize::from(gso_size)).max(1);
    FrameSize { ip_bytes: ip_bytes + ((segments - 1) * headers) as u64, packets: segments as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A virtio header (GSO type and size) and an IPv4/TCP frame with `payload` bytes after
    /// 20-byte IP and 32-byte TCP headers.
    fn tcp_frame(gso_type: u8, gso_size: u16, payload: usize, vlan: bool) -> Vec<u8> {
        let mut v = vec![0u8; VNET_HDR_LEN];
        v[1] = gso_type;
        v[4..6].copy_from_slice(&gso_size.to_ne_bytes());
        v.extend_from_slice(&[0; 12]);
        if vlan {
            v.extend_from_slice(&ETH_P_8021Q.to_be_bytes());
            v.extend_from_slice(&[0, 5]);
        }
        v.extend_from_slice(&ETH_P_IPV4.to_be_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[9] = IPPROTO_TCP;
        v.extend_from_slice(&ip);
        let mut tcp = [0u8; 32];
        tcp[12] = 8 << 4;
        v.extend_from_slice(&tcp);
        v.extend(std::iter::repeat_n(0xab, payload));
        v
    }

    #[test]
    fn a_plain_frame_is_one_packet_of_its_ip_bytes() {
        assert_eq!(frame_size(&tcp_frame(0, 0, 1448, false)), FrameSize { ip_bytes: 1500, packets: 1 });
        // A pure ACK.
        assert_eq!(frame_size(&tcp_frame(0, 0, 0, false)), FrameSize { ip_bytes: 52, packets: 1 });
    }

    #[test]
    fn a_gso_batch_counts_every_segment_with_its_headers() {
        // 10 segments of 1448 bytes: ten 1500-byte IP packets.
        assert_eq!(frame_size(&tcp_frame(1, 1448, 14_480, false)), FrameSize { ip_bytes: 15_000, packets: 10 });
        // A short last segment, ECN bit set in gso_type, behind a VLAN tag.
        let f = frame_size(&tcp_frame(0x81, 1448, 3_000, true));
        assert_eq!(f.packets, 3);
        assert_eq!(f.ip_bytes, (3_000 + 52) as u64 + 2 * 52);
    }

    #[test]
    fn odd_frames_never_panic() {
        assert_eq!(frame_size(&[]), FrameSize { ip_bytes: 0, packets: 1 });
        assert_eq!(frame_size(&[0u8; VNET_HDR_LEN + 5]).packets, 1);
        let mut truncated = tcp_frame(1, 100, 0, false);
        truncated.truncate(VNET_HDR_LEN + 20);
        assert_eq!(frame_size(&truncated).packets, 1);
    }
}
