//! ECN at the sender (RFC 3168 §6.1.2): one reduction per window, CWR on the next new data
//! segment, no ECT on retransmissions; end to end with the receiver's echo.

use ccarena_cc::{CaState, Duration, SimTime};
use ccarena_transport::{ReceiverConfig, RecoveryMode, Sender, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;

fn ecn_pair(mode: RecoveryMode, marked: &'static [u64]) -> Pair {
    let scfg = SenderConfig {
        ecn: ccarena_transport::SenderEcn::Classic,
        ..sender_cfg(mode)
    };
    let rcfg = ReceiverConfig {
        ecn: ccarena_transport::EcnMode::Classic,
        ..receiver_cfg()
    };
    let link = LinkCfg::clean(Duration::from_millis(10));
    let mut p = Pair::new(scfg, controller_for(mode), rcfg, link, link, 5);
    p.filter = Box::new(move |seg| {
        if !seg.retransmit && marked.contains(&(seg.seq / M)) {
            Fate::MarkCe
        } else {
            Fate::Deliver
        }
    });
    p
}

#[test]
fn one_mark_one_reduction_and_cwr_on_the_next_new_segment() {
    let mut p = ecn_pair(RecoveryMode::Prr, &[40]);
    assert!(p.transfer(200 * M, SimTime(10_000_000_000)));
    p.assert_delivered_exactly(200 * M);
    let st = p.sender.stats();
    assert_eq!(st.ecn_reductions, 1);
    assert_eq!(
        (st.fast_recoveries, st.rto_count, st.bytes_retransmitted),
        (0, 0, 0)
    );
    assert!(p.sent_log.iter().all(|(_, s)| s.ecn.is_ect()), "ECN-capable data");
    let cwr: Vec<_> = p.sent_log.iter().filter(|(_, s)| s.cwr).collect();
    assert_eq!(cwr.len(), 1, "CWR set once");
    let i = p
        .trace
        .iter()
        .position(|t| t.state == CaState::Cwr)
        .expect("entered CWR");
    let entered = p.trace[i];
    assert!(entered.cwnd <= entered.ssthresh, "cwnd reduced at once");
    assert!(cwr[0].0 >= entered.now, "CWR sent after the reduction");
    // ECE is echoed on every ACK from the CE mark until the receiver sees CWR.
    let echoing: Vec<_> = p.ack_log.iter().filter(|(_, a)| a.ece).collect();
    assert!(echoing.len() >= 2, "several echoes, one reduction");
    assert!(echoing
        .iter()
        .all(|(t, _)| *t <= cwr[0].0 + Duration::from_millis(10)));
    // Back to Open once the window that carried the mark is acknowledged.
    assert!(p.trace[i..].iter().any(|t| t.state == CaState::Open));
}

#[test]
fn marks_in_separate_windows_reduce_separately() {
    let mut p = ecn_pair(RecoveryMode::Sack, &[30, 150]);
    assert!(p.transfer(300 * M, SimTime(10_000_000_000)));
    assert_eq!(p.sender.stats().ecn_reductions, 2);
    assert_eq!(p.sent_log.iter().filter(|(_, s)| s.cwr).count(), 2);
}

#[test]
fn ece_is_ignored_without_ecn_and_retransmissions_are_not_ect() {
    let mut s = Sender::new(
        sender_cfg(RecoveryMode::Sack),
        controller_for(RecoveryMode::Sack),
        SimTime::ZERO,
    );
    s.app_write(10 * M);
    let segs = drain(&mut s, SimTime::ZERO);
    assert!(segs.iter().all(|x| !x.ecn.is_ect()));
    let mut a = ack_seg(2 * M, &[], SimTime::ZERO);
    a.ece = true;
    let _ = s.on_ack(ms(20), &a);
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!(s.stats().ecn_reductions, 0);

    let cfg = SenderConfig {
        ecn: ccarena_transport::SenderEcn::Classic,
        ..sender_cfg(RecoveryMode::Sack)
    };
    let mut s = Sender::new(cfg, controller_for(RecoveryMode::Sack), SimTime::ZERO);
    s.app_write(10 * M);
    assert!(drain(&mut s, SimTime::ZERO).iter().all(|x| x.ecn.is_ect()));
    s.handle_timeout(ms(1000));
    let rtx = drain(&mut s, ms(1000));
    assert!(rtx[0].retransmit && !rtx[0].ecn.is_ect(), "RFC 3168 §6.1.5");
}
