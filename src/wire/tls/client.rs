//! The client side: a rustls `ClientConfig` built from a [`ClientTrust`], and the ureq
//! connector that wraps each `https://` connection in it.
//!
//! ureq does the HTTP; this module does the handshake, on the TCP transport ureq connected,
//! within the call's connect deadline, and classifies a failed one as a [`TlsFailure`]
//! (carried through ureq as an `io::Error` and read back by `http::client`).

use super::{ClientTrust, KeyPair, TlsError, TlsFailure};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport,
    TransportAdapter,
};

/// Where distributions keep their CA bundle, tried in order when `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` are unset (Debian and Ubuntu, Fedora and RHEL, openSUSE, Alpine, FreeBSD).
const BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/share/certs/ca-root-nss.crt",
];

/// The crypto every configuration uses.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    Arc::clone(PROVIDER.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider())))
}

/// The rustls client configuration one [`ClientTrust`] builds, shared by every connection.
pub(crate) struct Config {
    pub(crate) rustls: Arc<ClientConfig>,
}

impl Config {
    pub(crate) fn build(trust: &ClientTrust) -> Result<Config, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| refused("the TLS client", e))?;
        let builder = if trust.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
        } else {
            let mut roots = RootCertStore::empty();
            if !trust.ca_only {
                roots.extend(system_roots().roots.iter().cloned());
            }
            for path in &trust.ca_files {
                add_cas(&mut roots, path)?;
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| TlsError::Refused {
                    what: "the trusted CAs".into(),
                    reason: if trust.ca_only {
                        format!("{e} (--ca-only needs --ca-file)")
                    } else {
                        format!(
                            "{e} (no system CA bundle was found: set SSL_CERT_FILE or give --ca-file)"
                        )
                    },
                })?;
            builder.with_webpki_verifier(verifier)
        };
        let config = match &trust.client_cert {
            Some(pair) => {
                let (chain, key) = read_pair(pair)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    refused(&format!("client certificate {}", pair.cert.display()), e)
                })?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Config {
            rustls: Arc::new(config),
        })
    }
}

/// rustls refused configuring `what`, for the reason `e`.
pub(super) fn refused(what: &str, e: impl std::fmt::Display) -> TlsError {
    TlsError::Refused {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// The system's CAs, read once per process: `SSL_CERT_FILE`, every file in each directory of
/// `SSL_CERT_DIR` (colon-separated), else the first distribution bundle that exists.
/// Certificates that do not parse are skipped, as OpenSSL skips them.
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut files: Vec<PathBuf> = Vec::new();
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let file = env("SSL_CERT_FILE");
        let dirs = env("SSL_CERT_DIR");
        if let Some(f) = &file {
            files.push(PathBuf::from(f));
        }
        if let Some(dirs) = &dirs {
            for dir in std::env::split_paths(dirs) {
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
                    found.sort();
                    files.extend(found);
                }
            }
        }
        if file.is_none() && dirs.is_none() {
            files.extend(BUNDLES.iter().map(PathBuf::from).find(|p| p.is_file()));
        }
        let mut roots = RootCertStore::empty();
        for path in files.iter().filter(|p| p.is_file()) {
            if let Ok(certs) = read_certs(path) {
                roots.add_parsable_certificates(certs);
            }
        }
        roots
    })
}

/// Add the CAs in the PEM file `path` to `roots`; a file with none that can serve as a CA is
/// refused.
pub(super) fn add_cas(roots: &mut RootCertStore, path: &Path) -> Result<(), TlsError> {
    let (added, _) = roots.add_parsable_certificates(read_certs(path)?);
    if added == 0 {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            expected: "CA certificate",
            reason: "none of its certificates can serve as a CA".into(),
        });
    }
    Ok(())
}

/// Every certificate in a PEM file; none is an error.
pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let pem = |reason: String| TlsError::Pem {
        path: path.to_path_buf(),
        expected: "certificate",
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(pem("no `BEGIN CERTIFICATE` block".into()));
    }
    Ok(certs)
}

/// A certificate chain and its key, the key checked to be private.
pub(crate) fn read_pair(
    pair: &KeyPair,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let chain = read_certs(&pair.cert)?;
    let bytes = read_private(&pair.key)?;
    let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::Pem {
        path: pair.key.clone(),
        expected: "private key",
        reason: e.to_string(),
    })?;
    Ok((chain, key))
}

/// Read a private key file, refusing one that users other than its owner can read or write.
fn read_private(path: &Path) -> Result<Vec<u8>, TlsError> {
    let read = |source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(TlsError::KeyOpenToOthers {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = metadata;
    std::fs::read(path).map_err(read)
}

/// `--insecure`: every certificate accepted, signatures still checked to be well-formed.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Wraps each `https://` connection ureq makes in a TLS client connection.
#[derive(Clone)]
pub(crate) struct TlsConnector(pub(crate) Arc<ClientConfig>);

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsConnector")
    }
}

impl<In: Transport> Connector<In> for TlsConnector {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details
            .uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .unwrap_or_default()
            .to_string();
        let name = ServerName::try_from(host.clone()).map_err(|_| {
            failure(TlsFailure::Handshake {
                reason: format!("{host:?} is not a host name a certificate can name"),
            })
        })?;
        let mut conn = ClientConnection::new(Arc::clone(&self.0), name)
            .map_err(|e| failure(classify(&e, &host)))?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut sock) {
                return Err(failure(handshake_io(&e, &host)));
            }
        }
        Ok(Some(Either::B(TlsTransport {
            buffers: LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            stream: StreamOwned::new(conn, sock),
            host,
        })))
    }
}

/// A failed handshake, as ureq carries it: an `io::Error` whose inner error is the cause.
fn failure(cause: TlsFailure) -> ureq::Error {
    ureq::Error::Io(io::Error::other(Failed(cause)))
}

/// The cause of a failed handshake inside an `io::Error` (see [`failure`]).
#[derive(Debug)]
pub(crate) struct Failed(pub(crate) TlsFailure);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Failed {}

/// The cause of a handshake that failed with `e`, calling `host`.
fn handshake_io(e: &io::Error, host: &str) -> TlsFailure {
    if let Some(tls) = rustls_error(e) {
        return classify(tls, host);
    }
    // ureq's own deadline, as its transport adapter hands it to rustls.
    if let Some(ureq::Error::Timeout(_)) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
    {
        return TlsFailure::HandshakeTimeout;
    }
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => TlsFailure::HandshakeTimeout,
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted => TlsFailure::Handshake {
            reason: format!(
                "the server closed the connection during the handshake ({e}); it may not speak \
                 TLS on this port, or it refused this client"
            ),
        },
        _ => TlsFailure::Handshake {
            reason: e.to_string(),
        },
    }
}

/// The cause rustls's error names.
pub(crate) fn classify(e: &rustls::Error, host: &str) -> TlsFailure {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E, InvalidMessage};
    match e {
        E::InvalidCertificate(c) => match c {
            C::UnknownIssuer => TlsFailure::UnknownCa,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => TlsFailure::Expired,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsFailure::WrongHost {
                host: host.to_string(),
            },
            other => TlsFailure::BadCertificate {
                reason: format!("{other:?}"),
            },
        },
        E::InvalidMessage(InvalidMessage::InvalidContentType)
        | E::InvalidMessage(InvalidMessage::UnknownProtocolVersion) => TlsFailure::PlainHttpServer,
        E::AlertReceived(alert @ (A::CertificateRequired | A::BadCertificate | A::UnknownCA)) => {
            TlsFailure::ClientCertificateRefused {
                alert: format!("{alert:?}"),
            }
        }
        E::AlertReceived(alert) => TlsFailure::Alert {
            alert: format!("{alert:?}"),
        },
        other => TlsFailure::Handshake {
            reason: other.to_string(),
        },
    }
}

/// An established TLS connection, as a ureq transport.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
    host: String,
}

impl std::fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsTransport")
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        let host = &self.host;
        self.stream
            .write_all(output)
            .map_err(|e| after_handshake(e, host))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = match self.stream.read(input) {
            Ok(n) => n,
            // A server that closes without close_notify ends the body as EOF would.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(after_handshake(e, &self.host)),
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// An I/O error on an established connection. A TLS alert is still a TLS failure: under TLS
/// 1.3 a server that refuses the client's certificate says so only after the client has
/// finished its side of the handshake.
fn after_handshake(e: io::Error, host: &str) -> ureq::Error {
    match rustls_error(&e) {
        Some(tls) => failure(classify(tls, host)),
        None => ureq::Error::Io(e),
    }
}

/// The rustls error an I/O error carries, if it carries one.
fn rustls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref()
}
