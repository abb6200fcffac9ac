//! What the queue disciplines need from a frame's IP header, and the one change they make to it:
//! the ECN field (ECN-capable or not; set Congestion Experienced) and the flow it belongs to.
//!
//! - **ECN field** (RFC 3168 §5): the two low bits of IPv4's TOS byte or of IPv6's Traffic
//!   Class: `00` Not-ECT, `01` ECT(1), `10` ECT(0), `11` CE. A discipline marks only ECT frames
//!   (a Not-ECT frame it would mark is dropped instead, RFC 3168 §6.1.1.1, RFC 8289 §5); the
//!   relay then sets CE ([`set_ce`]). IPv4's header checksum covers the TOS byte, so it is
//!   updated incrementally (RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`); IPv6 has no header
//!   checksum. A GSO batch's header is copied into every segment, so marking it marks them all
//!   (the discipline counted them all).
//! - **Flow** (RFC 8290 §4.1.1): a hash of the 5-tuple (addresses, protocol, and the TCP or UDP
//!   ports; a later IPv4 fragment, without ports, hashes with ports 0), so FQ-CoDel and FQ put
//!   each transport flow in its own queue. Frames that are not IP hash by their ethertype.
//!
//! The frame is the relay's `virtio_net_hdr` followed by the Ethernet frame.

use ccarena_rng::mix64;

use crate::frame::{network_offset, ETH_P_IPV4, ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP};
use crate::sys::VNET_HDR_LEN;

/// The ECN codepoint Congestion Experienced (RFC 3168 §5).
const CE: u8 = 0b11;

/// What a discipline needs to know of a frame's IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    /// The ECN field is ECT(0) or ECT(1) (a CE frame is not marked again: it needs no mark).
    pub ect: bool,
    /// The ECN field is ECT(1) or CE: the L4S identifier (RFC 9331 §5.1).
    pub l4s: bool,
    /// A hash of the 5-tuple.
    pub flow_hash: u64,
}

/// The Ethernet frame behind the virtio header, and where its IP header starts with the
/// ethertype, when it is IPv4 or IPv6 with a whole fixed header.
fn ip_header(hdr_and_frame: &[u8]) -> Option<(usize, u16)> {
    let frame = hdr_and_frame.get(VNET_HDR_LEN..)?;
    let (l3, ethertype) = network_offset(frame);
    let fixed = match ethertype? {
        ETH_P_IPV4 => 20,
        ETH_P_IPV6 => 40,
        _ => return None,
    };
    (frame.len() >= l3 + fixed).then_some((VNET_HDR_LEN + l3, ethertype?))
}

fn port_pair(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 4).map_or(0, |p| u64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]])))
}

fn words(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    })
}

/// The ECN capability and flow of `hdr_and_frame` (virtio header, then the Ethernet frame).
pub fn inspect(hdr_and_frame: &[u8]) -> IpInfo {
    let Some((l3, ethertype)) = ip_header(hdr_and_frame) else {
        let ethertype = hdr_and_frame.get(VNET_HDR_LEN..).map_or(0, |f| u64::from(network_offset(f).1.unwrap_or(0)));
        return IpInfo { ect: false, l4s: false, flow_hash: mix64(ethertype) };
    };
    let b = hdr_and_frame;
    let (ecn, proto, addrs, l4, has_ports) = if ethertype == ETH_P_IPV4 {
        let ihl = usize::from(b[l3] & 0x0f) * 4;
        // Only the first fragment (offset 0) carries the ports.
        let first_fragment = u16::from_be_bytes([b[l3 + 6], b[l3 + 7]]) & 0x1fff == 0;
        (b[l3 + 1] & 0b11, b[l3 + 9], &b[l3 + 12..l3 + 20], l3 + ihl, first_fragment)
    } else {
        ((b[l3 + 1] >> 4) & 0b11, b[l3 + 6], &b[l3 + 8..l3 + 40], l3 + 40, true)
    };
    let ports = if has_ports && (proto == IPPROTO_TCP || proto == IPPROTO_UDP) { port_pair(b, l4) } else { 0 };
    let mut h = mix64((u64::from(proto) << 32) ^ ports);
    for w in words(addrs) {
        h = mix64(h ^ w);
    }
    IpInfo { ect: ecn == 0b01 || ecn == 0b10, l4s: ecn == 0b01 || ecn == CE, flow_hash: h }
}

/// One's-complement sum of two 16-bit words (RFC 1071), end-around carry folded.
fn ones_add(a: u16, b: u16) -> u16 {
    let s = u32::from(a) + u32::from(b);
    ((s & 0xffff) + (s >> 16)) as u16
}

/// Set CE in the IP header of `hdr_and_frame` if it is ECT(0) or ECT(1), updating IPv4's header
/// checksum (RFC 1624 eqn. 3). Returns true when the frame was marked; a Not-ECT, already-CE or
/// non-IP frame is left as it is (the discipline marks only frames [`inspect`] found ECT).
pub fn set_ce(hdr_and_frame: &mut [u8]) -> bool {
    let Some((l3, ethertype)) = ip_header(hdr_and_frame) else { return false };
    let b = hdr_and_frame;
    if ethertype == ETH_P_IPV6 {
        let ecn = (b[l3 + 1] >> 4) & 0b11;
        if ecn == 0 || ecn == CE {
            return false;
        }
        b[l3 + 1] |= CE << 4;
        return true;
    }
    let ecn = b[l3 + 1] & 0b11;
    if ecn == 0 || ecn == CE {
        return false;
    }
    // The 16-bit word holding version/IHL and TOS, before and after.
    let old = u16::from_be_bytes([b[l3], b[l3 + 1]]);
    b[l3 + 1] |= CE;
    let new = u16::from_be_bytes([b[l3], b[l3 + 1]]);
    let hc = u16::from_be_bytes([b[l3 + 10], b[l3 + 11]]);
    let hc_new = !ones_add(ones_add(!hc, !old), new);
    b[l3 + 10..l3 + 12].copy_from_slice(&hc_new.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071's checksum of an IPv4 header (the checksum field included): 0 when it verifies.
    fn ipv4_checksum_residue(h: &[u8]) -> u16 {
        let mut sum = 0u16;
        for w in h.chunks(2) {
            sum = ones_add(sum, u16::from_be_bytes([w[0], w[1]]));
        }
        !sum
    }

    fn checksum(h: &mut [u8]) {
        h[10] = 0;
        h[11] = 0;
        let c = ipv4_checksum_residue(h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }

    /// A virtio header, an Ethernet header and a real IPv4/TCP header (a SYN-ACK-sized segment
    /// from 10.0.0.1:5201 to 10.0.1.2:40000, DF set, TTL 64) with the given TOS.
    fn ipv4_tcp(tos: u8) -> Vec<u8> {
        let mut v = vec![0u8; VNET_HDR_LEN];
        v.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00]);
        let mut ip = [0x45, tos, 0x00, 0x34, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2];
        checksum(&mut ip);
        v.extend_from_slice(&ip);
        let mut tcp = [0u8; 32];
        tcp[0..2].copy_from_slice(&5201u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&40000u16.to_be_bytes());
        tcp[12] = 8 << 4;
        v.extend_from_slice(&tcp);
        v
    }

    fn ipv6_udp(traffic_class: u8) -> Vec<u8> {
        let mut v = vec![0u8; VNET_HDR_LEN];
        v.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd]);
        let mut ip = [0u8; 40];
        ip[0] = 0x60 | (traffic_class >> 4);
        ip[1] = (traffic_class << 4) | 0x0a; // the flow label's top bits, which must survive
        ip[6] = IPPROTO_UDP;
        ip[7] = 64;
        ip[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        v.extend_from_slice(&ip);
        v.extend_from_slice(&[0x13, 0x89, 0x9c, 0x40, 0, 8, 0, 0]);
        v
    }

    const L3: usize = VNET_HDR_LEN + 14;

    #[test]
    fn ect_ipv4_frames_get_ce_and_a_checksum_that_still_verifies() {
        // ECT(0) and ECT(1), with DSCP bits set or not (AF41 = 0x88), so the sum wraps differently.
        for tos in [0x02u8, 0x01, 0x8a, 0x89, 0xfe] {
            let mut f = ipv4_tcp(tos);
            assert_eq!(ipv4_checksum_residue(&f[L3..L3 + 20]), 0, "built with a valid checksum");
            assert!(inspect(&f).ect);
            assert!(set_ce(&mut f));
            assert_eq!(f[L3 + 1], tos | 0b11, "only the ECN bits change");
            assert_eq!(ipv4_checksum_residue(&f[L3..L3 + 20]), 0, "tos {tos:#x}: checksum after marking");
            // Recomputing from scratch gives the same value as the incremental update.
            let mut again = f[L3..L3 + 20].to_vec();
            checksum(&mut again);
            assert_eq!(again, f[L3..L3 + 20]);
            // CE is not ECT and is not marked twice.
            assert!(!inspect(&f).ect);
            assert!(!set_ce(&mut f));
        }
    }

    #[test]
    fn not_ect_frames_are_left_alone() {
        let mut f = ipv4_tcp(0x00);
        let before = f.clone();
        assert!(!inspect(&f).ect);
        assert!(!set_ce(&mut f));
        assert_eq!(f, before);
        // Not IP at all (ARP), and a truncated header.
        let mut arp = ipv4_tcp(0x02);
        arp[VNET_HDR_LEN + 12..VNET_HDR_LEN + 14].copy_from_slice(&[0x08, 0x06]);
        assert!(!inspect(&arp).ect && !set_ce(&mut arp));
        let mut short = ipv4_tcp(0x02);
        short.truncate(L3 + 12);
        assert!(!inspect(&short).ect && !set_ce(&mut short));
        assert!(!set_ce(&mut []));
    }

    #[test]
    fn ipv6_frames_are_marked_in_the_traffic_class() {
        for tc in [0x01u8, 0x02, 0xb8 | 0x02] {
            let mut f = ipv6_udp(tc);
            assert!(inspect(&f).ect);
            assert!(set_ce(&mut f));
            let marked = ((f[L3] & 0x0f) << 4) | (f[L3 + 1] >> 4);
            assert_eq!(marked, tc | 0b11);
            assert_eq!((f[L3] >> 4, f[L3 + 1] & 0x0f), (6, 0x0a), "version and flow label unchanged");
        }
        let mut f = ipv6_udp(0xb8);
        assert!(!inspect(&f).ect && !set_ce(&mut f));
    }

    #[test]
    fn ect1_and_ce_carry_the_l4s_identifier_in_both_ip_versions() {
        // RFC 9331 §5.1: ECT(1) and CE are L4S; Not-ECT and ECT(0) are classic. DSCP bits around
        // the field (AF41) change nothing.
        for (ecn, l4s) in [(0b00u8, false), (0b10, false), (0b01, true), (0b11, true)] {
            for dscp in [0x00u8, 0x88] {
                assert_eq!(inspect(&ipv4_tcp(dscp | ecn)).l4s, l4s, "IPv4 ECN {ecn:#04b}");
                assert_eq!(inspect(&ipv6_udp(dscp | ecn)).l4s, l4s, "IPv6 ECN {ecn:#04b}");
            }
        }
        // Marking an ECT(1) frame keeps it L4S (CE is L4S too, RFC 9331 §5.1).
        let mut f = ipv4_tcp(0x01);
        assert!(set_ce(&mut f));
        assert!(inspect(&f).l4s);
        let mut arp = ipv4_tcp(0x01);
        arp[VNET_HDR_LEN + 12..VNET_HDR_LEN + 14].copy_from_slice(&[0x08, 0x06]);
        assert!(!inspect(&arp).l4s);
    }

    #[test]
    fn flows_hash_by_their_five_tuple() {
        let a = ipv4_tcp(0x02);
        // The ECN field and the IP ID are not part of the flow.
        let mut same = ipv4_tcp(0x00);
        same[L3 + 4] = 0x77;
        assert_eq!(inspect(&a).flow_hash, inspect(&same).flow_hash);
        // Another port, another address, another protocol: another flow.
        let mut port = a.clone();
        port[L3 + 20 + 3] ^= 1;
        let mut addr = a.clone();
        addr[L3 + 19] = 3;
        let mut proto = a.clone();
        proto[L3 + 9] = IPPROTO_UDP;
        let h = inspect(&a).flow_hash;
        for other in [&port, &addr, &proto] {
            assert_ne!(inspect(other).flow_hash, h);
        }
        // A later fragment has no ports: it hashes without them, never reads its payload as ports.
        let mut frag = a.clone();
        frag[L3 + 7] = 0x10;
        let mut frag2 = frag.clone();
        frag2[L3 + 20] ^= 0xff;
        assert_eq!(inspect(&frag).flow_hash, inspect(&frag2).flow_hash);
        assert_ne!(inspect(&ipv6_udp(0)).flow_hash, h);
    }
}
