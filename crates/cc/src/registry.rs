//! The flavor catalogue: every controller by name, with its family, source, default loss recovery
//! and parameters. The Python front end reads this list (through the bindings) so the CLI's
//! `flavors` command, the scenario validator and the engine agree on one set of names.

use crate::params::{ParamInfo, Params};
use crate::{cubic::Cubic, reno::Reno, CcError, CongestionControl};

/// One flavor in the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct FlavorInfo {
    /// Name as written in the scenario.
    pub name: &'static str,
    /// Family: "loss", "delay", "model", "ecn", "rate", ...
    pub family: &'static str,
    /// One-line description of its defining rule.
    pub summary: &'static str,
    /// Primary source (RFC or paper) it is implemented from.
    pub source: &'static str,
    /// Loss recovery the flavor uses unless the scenario overrides it: `"linux"` (SACK + RACK-TLP +
    /// PRR, RFC 6675, RFC 8985, RFC 6937: what Linux does for every flavor) but for the textbook
    /// `tahoe`, `reno` and `newreno`, which keep their own.
    pub default_recovery: &'static str,
    /// Which transport carries it: `"tcp"` (the TCP sender in `ccarena-transport`) or `"udt"`
    /// (UDT's UDP-based transport, whose rate control is also a [`CongestionControl`]).
    pub transport: &'static str,
    /// The flavor needs ECN (ECT on data, CE marking somewhere on the path) to work as its source
    /// describes; the front end turns ECN on for it unless the scenario says otherwise.
    pub needs_ecn: bool,
    /// The flavor is a scalable (L4S) controller (RFC 9331 §4.3): its data carries ECT(1), its
    /// receiver feeds CE back with Accurate ECN (RFC 9768), and an L4S queue (DualPI2, RFC 9332)
    /// classifies it into the low-latency queue.
    pub l4s: bool,
    /// Tunable parameters.
    pub params: &'static [ParamInfo],
}

const FLAVORS: &[FlavorInfo] = &[
    FlavorInfo {
        name: "tahoe",
        family: "loss",
        summary: "slow start + AIMD; fast retransmit then cwnd = 1 MSS and slow start, no fast recovery",
        source: "Jacobson, Congestion Avoidance and Control, SIGCOMM 1988; RFC 5681",
        default_recovery: "tahoe",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: &[],
    },
    FlavorInfo {
        name: "reno",
        family: "loss",
        summary: "slow start + AIMD with fast retransmit and fast recovery",
        source: "RFC 5681",
        default_recovery: "reno",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: &[],
    },
    FlavorInfo {
        name: "newreno",
        family: "loss",
        summary: "Reno whose fast recovery stays until all data outstanding at loss is acked",
        source: "RFC 5681, RFC 6582",
        default_recovery: "newreno",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: &[],
    },
    FlavorInfo {
        name: "cubic",
        family: "loss",
        summary: "W(t) = C(t-K)^3 + W_max, beta 0.7, Reno-friendly region, fast convergence, HyStart++",
        source: "RFC 9438, RFC 9406; as Linux's tcp_cubic with alpha_switch = 0 (RFC 8312 §4.2), \
                 hystart = 2 (Ha & Rhee 2011), no_loss_growth = 0.05 and whole_packets = 1",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::cubic::PARAMS,
    },
    FlavorInfo {
        name: "bbr",
        family: "model",
        summary: "BBR v1: paced at 99% of gain·BtlBw (max filter, 10 rounds), cwnd 2·BDP (RTprop min \
                  filter, 10 s) + ACK-aggregation allowance; STARTUP 2/ln2, DRAIN, PROBE_BW gains \
                  [1.25, 0.75, 1×6], PROBE_RTT 200 ms",
        source: "Cardwell et al., BBR: Congestion-Based Congestion Control, ACM Queue 2016; \
                 draft-cardwell-iccrg-bbr-congestion-control-00; pacing margin and extra_acked as \
                 Linux's tcp_bbr (draft-ietf-ccwg-bbr §5.5.9, §5.6.2); lt_bw = 1: Linux's \
                 long-term bandwidth sampling",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::bbr::PARAMS,
    },
    FlavorInfo {
        name: "bbr3",
        family: "model",
        summary: "BBRv3: BBR's model with loss bounds (inflight_longterm on > 2% loss per round, \
                  short-term bw/inflight bounds, beta 0.7), ProbeBW DOWN/CRUISE/REFILL/UP, ProbeRTT 5 s",
        source: "draft-ietf-ccwg-bbr",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::bbr3::PARAMS,
    },
    FlavorInfo {
        name: "dctcp",
        family: "ecn",
        summary: "alpha <- (1-g)alpha + g*F per window (g = 1/16), cwnd <- cwnd(1 - alpha/2) once per RTT \
                  on ECN-Echo; needs CE marking at a queue threshold K; Reno otherwise",
        source: "RFC 8257; Alizadeh et al., SIGCOMM 2010",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: true,
        l4s: false,
        params: crate::dctcp::PARAMS,
    },
    FlavorInfo {
        name: "prague",
        family: "ecn",
        summary: "L4S scalable control: ECT(1) + AccECN; alpha <- (1-g)alpha + g*F (g = 1/16), \
                  cwnd <- cwnd(1 - alpha/2) at most once per RTT; Reno on loss; always paced; \
                  RTT-independent below a 25 ms reference RTT; fractional windows below 2 MSS; \
                  optional fall-back to a Reno halving on detecting a classic ECN AQM",
        source: "draft-briscoe-iccrg-prague-congestion-control-04; RFC 9331; RFC 9768; \
                 arXiv:1911.00710 (classic ECN AQM detection)",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: true,
        l4s: true,
        params: crate::prague::PARAMS,
    },
    FlavorInfo {
        name: "udt",
        family: "rate",
        summary: "DAIMD rate control every SYN = 10 ms: increase from the packet-pair spare capacity, \
                  rate × 8/9 on a NAK (randomized within a congestion period), window AS·(RTT+SYN)+16",
        source: "Gu, Grossman, UDT: UDP-based data transfer for high-speed wide area networks, \
                 Computer Networks 51(7) 2007; draft-gg-udt-03",
        default_recovery: "nak",
        transport: "udt",
        needs_ecn: false,
        l4s: false,
        params: crate::udt::PARAMS,
    },
    FlavorInfo {
        name: "highspeed",
        family: "loss",
        summary: "HighSpeed TCP: above Low_Window = 38, AIMD with a(w), b(w) giving W = 0.12/p^0.835",
        source: "RFC 3649",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::highspeed::PARAMS,
    },
    FlavorInfo {
        name: "scalable",
        family: "loss",
        summary: "Scalable TCP: MIMD, +0.01 packet per ACK, -1/8 on loss; Reno below 16 packets",
        source: "Kelly, Scalable TCP, ACM SIGCOMM CCR 33(2), 2003",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::scalable::PARAMS,
    },
    FlavorInfo {
        name: "htcp",
        family: "loss",
        summary: "H-TCP: increase grows with time since the last loss; backoff RTT_min/RTT_max in [0.5, 0.8]",
        source: "Leith and Shorten, H-TCP: TCP for high-speed and long-distance networks, PFLDnet 2004",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::htcp::PARAMS,
    },
    FlavorInfo {
        name: "bic",
        family: "loss",
        summary: "BIC: binary search toward W_max, max probing past it, beta 0.8; Reno below 14 packets",
        source: "Xu, Harfoush, Rhee, Binary Increase Congestion Control, INFOCOM 2004",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::bic::PARAMS,
    },
    FlavorInfo {
        name: "westwood",
        family: "loss",
        summary: "Westwood+: Reno growth; on loss ssthresh = filtered per-RTT bandwidth estimate x RTT_min",
        source: "Mascolo et al., MobiCom 2001; Grieco and Mascolo, ACM SIGCOMM CCR 34(2), 2004",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::westwood::PARAMS,
    },
    FlavorInfo {
        name: "hybla",
        family: "loss",
        summary: "Hybla: rho = RTT/25 ms; slow start +(2^rho - 1), avoidance +rho^2 per RTT; RTT-independent rate",
        source: "Caini and Firrincieli, TCP Hybla, Int. J. Satellite Commun. Netw. 22(5), 2004",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::hybla::PARAMS,
    },
    FlavorInfo {
        name: "illinois",
        family: "loss",
        summary: "TCP-Illinois: loss-driven AIMD, alpha 10..0.3 and beta 1/8..1/2 set by the queueing delay",
        source: "Liu, Basar, Srikant, TCP-Illinois, VALUETOOLS 2006",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::illinois::PARAMS,
    },
    FlavorInfo {
        name: "ltcp",
        family: "loss",
        summary: "Layered TCP: K layers growing with the window; +K per RTT, decrease 1/(2K)",
        source: "Bhandarkar, Jain, Reddy, LTCP, PFLDnet 2005 / ACM SIGCOMM CCR 36(1), 2006",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::ltcp::PARAMS,
    },
    FlavorInfo {
        name: "vegas",
        family: "delay",
        summary: "Diff = cwnd(1 - BaseRTT/RTT) packets queued: +1 MSS/RTT below alpha=2, -1 above beta=4; slow start every other RTT until Diff > gamma=1; fast retransmit removes 1/4",
        source: "Brakmo and Peterson, TCP Vegas, IEEE JSAC 13(8), 1995",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::vegas::PARAMS,
    },
    FlavorInfo {
        name: "veno",
        family: "loss+delay",
        summary: "Reno steered by the Vegas backlog N: loss with N < beta=3 is random (cwnd*4/5), else halve; +1 MSS every other RTT once N >= beta",
        source: "Fu and Liew, TCP Veno, IEEE JSAC 21(2), 2003",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::veno::PARAMS,
    },
    FlavorInfo {
        name: "yeah",
        family: "loss+delay",
        summary: "Scalable increase in fast mode (queue Q < 80 packets, delay < RTT_base/8), Reno in slow mode with precautionary decongestion (cwnd -= Q); loss removes max(Q, cwnd/8)",
        source: "Baiocchi, Castellani, Vacirca, YeAH-TCP, PFLDnet 2007",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::yeah::PARAMS,
    },
    FlavorInfo {
        name: "nv",
        family: "delay",
        summary: "congestion when cwnd > delivery rate * minRTT + pad (10 packets): decrease by 30% of the excess; Reno growth below; loss keeps 80%",
        source: "Brakmo, TCP-NV: An Update to TCP-Vegas, 2010; Linux tcp_nv documentation",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::nv::PARAMS,
    },
    FlavorInfo {
        name: "cdg",
        family: "delay",
        summary: "backs off (cwnd*0.7) with probability 1 - exp(-g/G), G = 3 ms, on a positive smoothed RTT gradient; ineffectual-backoff detection; shadow window for losses",
        source: "Hayes and Armitage, Revisiting TCP Congestion Control using Delay Gradients, IFIP Networking 2011",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::cdg::PARAMS,
    },
    FlavorInfo {
        name: "compound",
        family: "loss+delay",
        summary: "win = cwnd + dwnd; Reno cwnd; dwnd += alpha*win^k - 1 (1/8, 0.75) while the backlog < gamma=30 packets, -= backlog above; loss: win*(1-beta), beta=1/2",
        source: "Tan, Song, Zhang, Sridharan, A Compound TCP Approach, IEEE INFOCOM 2006",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::compound::PARAMS,
    },
    FlavorInfo {
        name: "fast",
        family: "delay",
        summary: "every RTT w <- min(2w, (1-gamma)w + gamma(baseRTT/RTT*w + alpha)): alpha packets queued per flow at equilibrium; gamma=0.5, alpha=200",
        source: "Jin, Wei, Low, FAST TCP: Motivation, Architecture, Algorithms, Performance, IEEE INFOCOM 2004",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::fast::PARAMS,
    },
    FlavorInfo {
        name: "lp",
        family: "delay",
        summary: "low priority: smoothed one-way delay > d_min + 0.15(d_max - d_min) halves cwnd and starts an inference phase (3 RTT); another indication in it cuts cwnd to 1; Reno otherwise",
        source: "Kuzmanovic and Knightly, TCP-LP, IEEE INFOCOM 2003",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::lp::PARAMS,
    },
    FlavorInfo {
        name: "hstcp-lp",
        family: "delay",
        summary: "TCP-LP's early congestion indication and inference over HighSpeed TCP's a(w)/b(w) window arithmetic",
        source: "Kuzmanovic, Knightly, Cottrell, HSTCP-LP, PFLDnet 2004; RFC 3649",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::hstcp_lp::PARAMS,
    },
    FlavorInfo {
        name: "ledbat",
        family: "delay",
        summary: "scavenger: cwnd += GAIN*(TARGET - queuing_delay)/TARGET per RTT from one-way delays (TARGET 100 ms, GAIN 1, base = min over 10 one-minute intervals); halve on loss",
        source: "RFC 6817",
        default_recovery: "linux",
        transport: "tcp",
        needs_ecn: false,
        l4s: false,
        params: crate::ledbat::PARAMS,
    },
];

/// Every flavor the engine implements, in catalogue order.
pub fn catalogue() -> &'static [FlavorInfo] {
    FLAVORS
}

/// Whether a flow of flavor `name` with `params` is an L4S flow: its data carries ECT(1) (RFC 9331
/// §4.1) and its receiver feeds CE back with Accurate ECN (RFC 9768). True for the catalogue's
/// `l4s` flavors, and for `dctcp` with its `ect1` option (Linux's DCTCP with AccECN); false for
/// an unknown name.
///
/// # Errors
/// [`CcError::BadParam`] when `dctcp`'s `ect1` is neither 0 nor 1.
pub fn is_l4s_flow(name: &str, params: &Params) -> Result<bool, CcError> {
    if name == "dctcp" {
        return crate::dctcp::ect1_requested(params);
    }
    Ok(FLAVORS.iter().any(|f| f.name == name && f.l4s))
}

/// Build the controller named `name` with `params` (unset parameters take their defaults).
///
/// # Errors
/// [`CcError::UnknownFlavor`] (with the closest name as a suggestion), [`CcError::UnknownParam`],
/// [`CcError::BadParam`].
pub fn new_controller(name: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    Ok(match name {
        "tahoe" => Box::new(Reno::new("tahoe", params)?),
        "reno" => Box::new(Reno::new("reno", params)?),
        "newreno" => Box::new(Reno::new("newreno", params)?),
        "cubic" => Box::new(Cubic::new(params)?),
        "bbr" => Box::new(crate::bbr::Bbr::new(params)?),
        "bbr3" => Box::new(crate::bbr3::Bbr3::new(params)?),
        "dctcp" => Box::new(crate::dctcp::Dctcp::new(params)?),
        "prague" => Box::new(crate::prague::Prague::new(params)?),
        "udt" => Box::new(crate::udt::Udt::new(params)?),
        "highspeed" => Box::new(crate::highspeed::HighSpeed::new(params)?),
        "scalable" => Box::new(crate::scalable::Scalable::new(params)?),
        "htcp" => Box::new(crate::htcp::Htcp::new(params)?),
        "bic" => Box::new(crate::bic::Bic::new(params)?),
        "westwood" => Box::new(crate::westwood::Westwood::new(params)?),
        "hybla" => Box::new(crate::hybla::Hybla::new(params)?),
        "illinois" => Box::new(crate::illinois::Illinois::new(params)?),
        "ltcp" => Box::new(crate::ltcp::Ltcp::new(params)?),
        "vegas" => Box::new(crate::vegas::Vegas::new(params)?),
        "veno" => Box::new(crate::veno::Veno::new(params)?),
        "yeah" => Box::new(crate::yeah::Yeah::new(params)?),
        "nv" => Box::new(crate::nv::Nv::new(params)?),
        "cdg" => Box::new(crate::cdg::Cdg::new(params)?),
        "compound" => Box::new(crate::compound::Compound::new(params)?),
        "fast" => Box::new(crate::fast::Fast::new(params)?),
        "lp" => Box::new(crate::lp::Lp::new(params)?),
        "hstcp-lp" => Box::new(crate::hstcp_lp::HstcpLp::new(params)?),
        "ledbat" => Box::new(crate::ledbat::Ledbat::new(params)?),
        _ => {
            return Err(CcError::UnknownFlavor {
                name: name.to_string(),
                suggestion: closest_flavor(name),
            })
        }
    })
}

/// The catalogue name closest to `name` by edit distance, if within 2 edits.
fn closest_flavor(name: &str) -> Option<&'static str> {
    FLAVORS
        .iter()
        .map(|f| (edit_distance(name, f.name), f.name))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance between two short strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_flavor_builds_with_defaults() {
        for f in catalogue() {
            let cc = new_controller(f.name, &Params::default()).unwrap();
            assert_eq!(cc.name(), f.name);
        }
    }

    #[test]
    fn l4s_flows_are_prague_and_dctcp_with_ect1() {
        let none = Params::default();
        let ect1 = Params::from_pairs(vec![("ect1".into(), 1.0)]);
        assert!(is_l4s_flow("prague", &none).unwrap());
        assert!(!is_l4s_flow("dctcp", &none).unwrap());
        assert!(is_l4s_flow("dctcp", &ect1).unwrap());
        assert!(!is_l4s_flow("cubic", &none).unwrap());
        assert!(!is_l4s_flow("no-such-flavor", &none).unwrap());
        assert!(is_l4s_flow("dctcp", &Params::from_pairs(vec![("ect1".into(), 2.0)])).is_err());
        let l4s: Vec<_> = catalogue().iter().filter(|f| f.l4s).map(|f| f.name).collect();
        assert_eq!(l4s, ["prague"]);
    }

    #[test]
    fn unknown_flavor_suggests_the_closest_name() {
        let err = new_controller("cubik", &Params::default()).unwrap_err();
        assert_eq!(err.to_string(), "unknown flavor 'cubik' (did you mean 'cubic'?)");
        let err = new_controller("zzzzzzzz", &Params::default()).unwrap_err();
        assert_eq!(err.to_string(), "unknown flavor 'zzzzzzzz'");
    }
}
