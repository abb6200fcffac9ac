//! Which code runs inside quinn, and the TLS the two ends share.
//!
//! [`QuicImpl::Quinn`] runs a ccarena controller (any catalogue flavor) through
//! [`CcarenaControllerFactory`]; [`QuicImpl::QuinnNative`] runs quinn's own NewReno, CUBIC or
//! BBR as references (its BBR is quinn's port of BBRv1, its CUBIC RFC 9438's). Everything else —
//! loss detection and PTO (RFC 9002 §6), ACK generation (RFC 9000 §13.2), flow control (§4),
//! pacing, packet protection (RFC 9001) — is quinn's either way.
//!
//! TLS 1.3 (RFC 9001) with rustls and ring: one self-signed certificate ([`RunCertificate`],
//! rcgen) is generated per run; the sink serves it and the sender trusts exactly that
//! certificate, nothing from a system store.

use std::fmt;
use std::sync::Arc;

use quinn_proto::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::RootCertStore;
use quinn_proto::{ClientConfig, ServerConfig, TransportConfig};

use crate::controller::CcarenaControllerFactory;

/// The server name the certificate is issued for and the client checks.
pub const SERVER_NAME: &str = "ccarena.quic";

/// Whose congestion controller runs inside quinn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuicImpl {
    /// ccarena's controller of the flow's flavor (every catalogue flavor) in quinn.
    Quinn,
    /// quinn's own controller: NewReno for `"reno"`/`"newreno"`, CUBIC for `"cubic"`, BBR for
    /// `"bbr"`; other flavors are refused.
    QuinnNative,
}

impl QuicImpl {
    /// The name a scenario spells: `"quinn"` or `"quinn-native"`.
    pub fn name(self) -> &'static str {
        match self {
            QuicImpl::Quinn => "quinn",
            QuicImpl::QuinnNative => "quinn-native",
        }
    }

    /// Parse [`QuicImpl::name`]'s spelling.
    ///
    /// # Errors
    /// Any other string ([`StackError::UnknownImpl`]).
    pub fn parse(s: &str) -> Result<QuicImpl, StackError> {
        match s {
            "quinn" => Ok(QuicImpl::Quinn),
            "quinn-native" => Ok(QuicImpl::QuinnNative),
            _ => Err(StackError::UnknownImpl(s.to_string())),
        }
    }

    /// Whose code decides the window for `flavor`, for records and tables:
    /// `"ccarena cubic in quinn"` or `"quinn's cubic"`.
    pub fn describe(self, flavor: &str) -> String {
        match self {
            QuicImpl::Quinn => format!("ccarena {flavor} in quinn"),
            QuicImpl::QuinnNative => format!("quinn's {flavor}"),
        }
    }
}

/// Flavors [`QuicImpl::QuinnNative`] runs.
pub const NATIVE_FLAVORS: [&str; 4] = ["reno", "newreno", "cubic", "bbr"];

/// What can go wrong setting the stack up.
#[derive(Clone, Debug, PartialEq)]
pub enum StackError {
    /// Neither `"quinn"` nor `"quinn-native"`.
    UnknownImpl(String),
    /// quinn has no controller of that flavor.
    NoNativeFlavor(String),
    /// ccarena refused the flavor or a parameter.
    Flavor(String),
    /// Parameters given to a quinn controller (it takes none here).
    NativeParams(String),
    /// Generating the certificate or building the TLS configuration failed.
    Tls(String),
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StackError::UnknownImpl(s) => write!(f, "unknown QUIC implementation '{s}' (choose quinn or quinn-native)"),
            StackError::NoNativeFlavor(s) => write!(
                f,
                "quinn has no '{s}' congestion controller (quinn-native runs {}); run it as ccarena's inside quinn (quinn)",
                NATIVE_FLAVORS.join(", ")
            ),
            StackError::Flavor(s) => write!(f, "{s}"),
            StackError::NativeParams(s) => {
                write!(f, "quinn's own {s} takes no parameters here; run ccarena's {s} (quinn) to set them")
            }
            StackError::Tls(s) => write!(f, "TLS setup: {s}"),
        }
    }
}

impl std::error::Error for StackError {}

/// The controller factory for `flavor` under `which`; `initial_window_bytes` `None` takes RFC
/// 9002 §7.2's (quinn's default too).
///
/// # Errors
/// [`StackError::NoNativeFlavor`] for a flavor quinn lacks, [`StackError::NativeParams`] for
/// parameters given to one of quinn's, [`StackError::Flavor`] for a flavor or parameter ccarena
/// refuses.
pub fn controller_factory(
    which: QuicImpl,
    flavor: &str,
    params: &[(String, f64)],
    initial_window_bytes: Option<u64>,
) -> Result<Arc<dyn ControllerFactory + Send + Sync>, StackError> {
    match which {
        QuicImpl::Quinn => CcarenaControllerFactory::new(flavor, params, initial_window_bytes)
            .map(|f| Arc::new(f) as Arc<dyn ControllerFactory + Send + Sync>)
            .map_err(|e| StackError::Flavor(e.to_string())),
        QuicImpl::QuinnNative => {
            if !NATIVE_FLAVORS.contains(&flavor) {
                return Err(StackError::NoNativeFlavor(flavor.to_string()));
            }
            if !params.is_empty() {
                return Err(StackError::NativeParams(flavor.to_string()));
            }
            Ok(match flavor {
                "cubic" => {
                    let mut c = CubicConfig::default();
                    if let Some(w) = initial_window_bytes {
                        c.initial_window(w);
                    }
                    Arc::new(c)
                }
                "bbr" => {
                    let mut c = BbrConfig::default();
                    if let Some(w) = initial_window_bytes {
                        c.initial_window(w);
                    }
                    Arc::new(c)
                }
                _ => {
                    let mut c = NewRenoConfig::default();
                    if let Some(w) = initial_window_bytes {
                        c.initial_window(w);
                    }
                    Arc::new(c)
                }
            })
        }
    }
}

/// A transport configuration with `factory` as its congestion controller; everything else is
/// quinn's default (RFC 9002's constants, 1.25 MB stream receive window) except
/// `initial_mtu`, when given (quinn starts at 1200 bytes and probes up to 1452 with PLPMTUD).
pub fn transport_config(factory: Arc<dyn ControllerFactory + Send + Sync>, initial_mtu: Option<u16>) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.congestion_controller_factory(factory);
    if let Some(m) = initial_mtu {
        t.initial_mtu(m.max(1200));
    }
    // One bulk stream: no keep-alives needed; the driver's own idle limits end a silent run.
    t
}

/// One self-signed certificate and its key, generated per run (rcgen, ECDSA P-256 by default).
#[derive(Clone, Debug)]
pub struct RunCertificate {
    /// The certificate, DER.
    pub cert_der: Vec<u8>,
    /// Its private key, PKCS #8 DER.
    pub key_der: Vec<u8>,
}

impl RunCertificate {
    /// A fresh certificate for [`SERVER_NAME`].
    ///
    /// # Errors
    /// [`StackError::Tls`] if key generation fails.
    pub fn generate() -> Result<RunCertificate, StackError> {
        let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| StackError::Tls(e.to_string()))?;
        Ok(RunCertificate { cert_der: ck.cert.der().to_vec(), key_der: ck.key_pair.serialize_der() })
    }

    /// The sink's (server's) configuration serving this certificate, with `transport`.
    ///
    /// # Errors
    /// [`StackError::Tls`] for a certificate or key rustls rejects.
    pub fn server_config(&self, transport: TransportConfig) -> Result<ServerConfig, StackError> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let mut s = ServerConfig::with_single_cert(vec![CertificateDer::from(self.cert_der.clone())], key)
            .map_err(|e| StackError::Tls(e.to_string()))?;
        s.transport_config(Arc::new(transport));
        Ok(s)
    }
}

/// The sender's (client's) configuration trusting exactly `cert_der`, with `transport`.
///
/// # Errors
/// [`StackError::Tls`] for a certificate rustls cannot take as a root.
pub fn client_config(cert_der: &[u8], transport: TransportConfig) -> Result<ClientConfig, StackError> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(cert_der.to_vec())).map_err(|e| StackError::Tls(e.to_string()))?;
    let mut c = ClientConfig::with_root_certificates(Arc::new(roots)).map_err(|e| StackError::Tls(e.to_string()))?;
    c.transport_config(Arc::new(transport));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_flavors_only() {
        assert!(controller_factory(QuicImpl::QuinnNative, "cubic", &[], None).is_ok());
        assert!(controller_factory(QuicImpl::QuinnNative, "newreno", &[], None).is_ok());
        let e = controller_factory(QuicImpl::QuinnNative, "vegas", &[], None).err().unwrap();
        assert!(e.to_string().contains("no 'vegas'"), "{e}");
        assert!(controller_factory(QuicImpl::Quinn, "vegas", &[], None).is_ok());
        assert!(matches!(controller_factory(QuicImpl::Quinn, "vegass", &[], None), Err(StackError::Flavor(_))));
        assert_eq!(QuicImpl::parse("quinn-native"), Ok(QuicImpl::QuinnNative));
        assert!(QuicImpl::parse("quiche").is_err());
    }

    #[test]
    fn certificate_builds_both_ends() {
        let cert = RunCertificate::generate().unwrap();
        let f = controller_factory(QuicImpl::Quinn, "cubic", &[], None).unwrap();
        cert.server_config(transport_config(f.clone(), None)).unwrap();
        client_config(&cert.cert_der, transport_config(f, None)).unwrap();
    }
}
