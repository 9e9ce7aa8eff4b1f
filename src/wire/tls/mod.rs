//! TLS on every outbound call and every listener, through rustls on the ring provider
//! (TLS 1.3, RFC 8446, and TLS 1.2, RFC 5246; certificates per RFC 5280 as rustls-webpki
//! checks them).
//!
//! What is here is ddwire's side of the seam: which certificates to trust and present, read
//! from PEM files (`ClientTrust`, `ServerTls`), and every way a handshake can fail, as one
//! typed [`TlsFailure`] cause. The handshakes, record layer and certificate checks are
//! rustls's. `vendor-notes/tls.md` says what is taken from rustls, what is verified, and what
//! is left out.
//!
//! Built only with the `tls` cargo feature (on by default). Without it these types still
//! exist, so flags parse the same, but any use of them is refused with `TlsError::NotBuilt`,
//! and an `https://` call with [`TlsFailure::NotBuilt`].

#[cfg(feature = "tls")]
pub(crate) mod client;
#[cfg(feature = "tls")]
pub(crate) mod server;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// The one line a build without TLS answers to anything that needs it.
pub(crate) const NOT_BUILT: &str =
    "this build of ddwire has no TLS; rebuild with default features (cargo build --release)";

/// Whether `url` is an `https://` URL (the scheme compared without regard to case).
pub(crate) fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}

/// A certificate chain and its private key, as PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyPair {
    /// The certificate first, then any intermediates.
    pub(crate) cert: PathBuf,
    /// PKCS#8, PKCS#1 or SEC1; readable by its owner only.
    pub(crate) key: PathBuf,
}

/// Whom outbound calls trust, and what they present when a server asks for a certificate.
///
/// The default trusts the system's CA store: the file `SSL_CERT_FILE` names and the
/// directories in `SSL_CERT_DIR` (as OpenSSL-based tools read them), else the distribution's
/// bundle. Host names are always verified, except with [`ClientTrust::insecure`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClientTrust {
    /// CAs trusted besides the system's (`--ca-file`, `DD_CA_FILE`).
    pub(crate) ca_files: Vec<PathBuf>,
    /// Trust [`ClientTrust::ca_files`] alone, not the system store (`--ca-only`).
    pub(crate) ca_only: bool,
    /// Verify nothing: any certificate, any host (`ddwire check --insecure` only).
    pub(crate) insecure: bool,
    /// Presented to servers that ask for a client certificate (mTLS).
    pub(crate) client_cert: Option<KeyPair>,
}

/// A listener's certificate, and the CA its clients' certificates must chain to, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerTls {
    /// Served to every client; reloaded on SIGHUP or when the files change.
    pub(crate) identity: KeyPair,
    /// Require a client certificate signed by this CA (mTLS).
    pub(crate) client_ca: Option<PathBuf>,
}

/// Why a TLS configuration cannot be used. A build makes either `NotBuilt` (without the `tls`
/// feature) or the others (with it), never both.
#[derive(Debug)]
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) enum TlsError {
    /// The build has no TLS (see `NOT_BUILT`).
    #[cfg_attr(feature = "tls", allow(dead_code))]
    NotBuilt,
    /// A file cannot be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file holds no PEM item of the kind it should, or a broken one.
    Pem {
        /// The file.
        path: PathBuf,
        /// What it should hold: `certificate`, `private key`.
        expected: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A private key that users other than its owner may read or write.
    KeyOpenToOthers {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// rustls refused the configuration (a key that does not match its certificate, a CA
    /// file with no usable CA).
    Refused {
        /// What was being configured.
        what: String,
        /// rustls's reason.
        reason: String,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::NotBuilt => f.write_str(NOT_BUILT),
            TlsError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            TlsError::Pem {
                path,
                expected,
                reason,
            } => write!(
                f,
                "{} holds no usable PEM {expected}: {reason}",
                path.display()
            ),
            TlsError::KeyOpenToOthers { path, mode } => write!(
                f,
                "TLS key file {} has mode {mode:03o}, so users other than its owner can read or \
                 write it; make it private (chmod 600 {}) and use it again",
                path.display(),
                path.display()
            ),
            TlsError::Refused { what, reason } => write!(f, "{what}: {reason}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a TLS handshake (or the first bytes of a connection meant to be TLS) failed: the
/// cause a caller acts on, never "cannot reach".
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The build has no TLS, and the URL is `https://`.
    NotBuilt,
    /// The certificate does not chain to a trusted CA.
    UnknownCa,
    /// The certificate's validity ended (or has not begun).
    Expired,
    /// The certificate does not name the host called.
    WrongHost {
        /// The host called.
        host: String,
    },
    /// The handshake did not finish in time.
    HandshakeTimeout,
    /// The server answered a TLS hello in plain HTTP: the URL should say `http://`.
    PlainHttpServer,
    /// The server requires a client certificate, and none (or one it does not trust) was
    /// presented.
    ClientCertificateRefused {
        /// The alert the server sent.
        alert: String,
    },
    /// The server's certificate is unusable for another reason (bad signature, wrong usage,
    /// revoked).
    BadCertificate {
        /// rustls's words.
        reason: String,
    },
    /// The server ended the handshake with a TLS alert.
    Alert {
        /// The alert's name.
        alert: String,
    },
    /// The handshake failed otherwise (no common version or cipher suite, a closed socket).
    Handshake {
        /// rustls's or the operating system's words.
        reason: String,
    },
}

impl TlsFailure {
    /// A short stable name: `unknown-ca`, `expired`, `wrong-host`, `handshake-timeout`,
    /// `plain-http-server`, `client-certificate`, `bad-certificate`, `alert`, `handshake`,
    /// `not-built`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            TlsFailure::NotBuilt => "not-built",
            TlsFailure::UnknownCa => "unknown-ca",
            TlsFailure::Expired => "expired",
            TlsFailure::WrongHost { .. } => "wrong-host",
            TlsFailure::HandshakeTimeout => "handshake-timeout",
            TlsFailure::PlainHttpServer => "plain-http-server",
            TlsFailure::ClientCertificateRefused { .. } => "client-certificate",
            TlsFailure::BadCertificate { .. } => "bad-certificate",
            TlsFailure::Alert { .. } => "alert",
            TlsFailure::Handshake { .. } => "handshake",
        }
    }
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::NotBuilt => f.write_str(NOT_BUILT),
            TlsFailure::UnknownCa => f.write_str(
                "unknown CA: the server's certificate is not signed by a trusted CA \
                 (trust its CA with --ca-file FILE or DD_CA_FILE)",
            ),
            TlsFailure::Expired => {
                f.write_str("expired certificate: the server's certificate is not valid now")
            }
            TlsFailure::WrongHost { host } => write!(
                f,
                "wrong host: the server's certificate is not valid for {host}"
            ),
            TlsFailure::HandshakeTimeout => {
                f.write_str("handshake timeout: the TLS handshake did not finish in time")
            }
            TlsFailure::PlainHttpServer => {
                f.write_str("the server speaks plain HTTP, not TLS: call it with http://")
            }
            TlsFailure::ClientCertificateRefused { alert } => write!(
                f,
                "the server requires a client certificate it trusts ({alert}); present one \
                 with --tls-client-cert FILE --tls-client-key FILE"
            ),
            TlsFailure::BadCertificate { reason } => {
                write!(f, "bad certificate: {reason}")
            }
            TlsFailure::Alert { alert } => write!(f, "the server refused the handshake: {alert}"),
            TlsFailure::Handshake { reason } => write!(f, "handshake failed: {reason}"),
        }
    }
}

/// The client side, built once per [`ClientTrust`] and shared by every connection a client
/// makes; without the `tls` feature, a placeholder that refuses.
#[derive(Clone)]
pub(crate) struct ClientTls {
    #[cfg(feature = "tls")]
    pub(crate) config: Arc<client::Config>,
    pub(crate) trust: Arc<ClientTrust>,
}

impl ClientTls {
    /// Build the client side of `trust`: read every file it names, now.
    pub(crate) fn new(trust: &ClientTrust) -> Result<ClientTls, TlsError> {
        #[cfg(feature = "tls")]
        {
            Ok(ClientTls {
                config: Arc::new(client::Config::build(trust)?),
                trust: Arc::new(trust.clone()),
            })
        }
        #[cfg(not(feature = "tls"))]
        {
            if *trust == ClientTrust::default() {
                Ok(ClientTls {
                    trust: Arc::new(trust.clone()),
                })
            } else {
                Err(TlsError::NotBuilt)
            }
        }
    }
}

/// A listener's TLS side: the certificate served now (swapped whole by `ServerIdentity::reload`)
/// and the rustls configuration every connection starts from. Clones share one identity.
#[derive(Clone)]
pub(crate) struct ServerIdentity {
    #[cfg(feature = "tls")]
    pub(crate) inner: Arc<server::Identity>,
    #[cfg(not(feature = "tls"))]
    _never: std::convert::Infallible,
}

impl fmt::Debug for ServerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerIdentity")
    }
}

impl ServerIdentity {
    /// Read the certificate, key and client CA `tls` names, and refuse what rustls would.
    pub(crate) fn load(tls: &ServerTls) -> Result<ServerIdentity, TlsError> {
        #[cfg(feature = "tls")]
        {
            Ok(ServerIdentity {
                inner: Arc::new(server::Identity::load(tls)?),
            })
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = tls;
            Err(TlsError::NotBuilt)
        }
    }

    /// Read the certificate and key again. On success new handshakes use the new pair and
    /// `true` says it changed; connections already open keep theirs. On failure the old pair
    /// stays in use.
    pub(crate) fn reload(&self) -> Result<bool, TlsError> {
        #[cfg(feature = "tls")]
        {
            self.inner.reload()
        }
        #[cfg(not(feature = "tls"))]
        match self._never {}
    }

    /// Reload whenever the certificate or key file changes (checked every `every`), logging
    /// each reload and each failure to stderr as `who`. The watch ends with the process.
    pub(crate) fn watch(&self, who: &'static str, every: std::time::Duration) {
        #[cfg(feature = "tls")]
        {
            server::watch(Arc::clone(&self.inner), who, every);
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = (who, every);
            match self._never {}
        }
    }
}
