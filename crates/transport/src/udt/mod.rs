//! UDT, the UDP-based data transfer protocol (Gu and Grossman, Computer Networks 51(7), 2007;
//! draft-gg-udt-03), as sans-IO endpoints: a reliable byte stream over datagrams with its own
//! packet types, timer-driven acknowledgments and rate-based congestion control.
//!
//! UDT is not TCP: the receiver acknowledges every SYN (10 ms) rather than per packet, reports
//! losses explicitly in NAKs as soon as it sees a gap (and again every few RTTs until repaired),
//! measures the RTT itself from ACK/ACK2 pairs, and sends the sender its packet arrival speed and
//! a packet-pair estimate of the link capacity. The sender paces packets at the period SND of the
//! DAIMD controller [`ccarena_cc::udt::Udt`] and also stops at min(congestion window, flow
//! window) unacknowledged packets.
//!
//! - [`packet`]: data, ACK, ACK2 and NAK packets (plain `Copy` headers).
//! - [`sender`]: the sending side, [`UdtSender`].
//! - [`receiver`]: the receiving side, [`UdtReceiver`].
//! - [`window`]: the receiver's median-filtered interval windows.
//! - [`ranges`]: the sender's loss list.
//!
//! Both ends follow the same sans-IO pattern as the TCP [`crate::Sender`] and
//! [`crate::Receiver`]: the caller passes time and packets in and polls packets and timer
//! deadlines out. Sequence numbers count packets from 0 and never wrap; packets carry their byte
//! offset so the receiver delivers a byte stream.
//!
//! Not implemented: the handshake and connection teardown, keep-alive, light ACKs, message mode
//! (partial reliability), the connection-broken check, sequence number wrapping.

pub mod packet;
pub mod ranges;
pub mod receiver;
pub mod sender;
pub mod window;

pub use packet::{Ack2Packet, AckPacket, DataPacket, LossRange, NakPacket, ToReceiver, ToSender};
pub use receiver::{UdtReceiver, UdtReceiverConfig, UdtReceiverStats};
pub use sender::{UdtSender, UdtSenderConfig, UdtSenderStats};
