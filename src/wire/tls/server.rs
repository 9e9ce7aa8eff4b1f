//! The server side: the certificate a listener serves (reloadable), and one TLS connection
//! over an accepted socket, with its handshake bounded by the caller's deadline.
//!
//! The HTTP server (`http::server`) owns the socket and the deadlines; this module turns the
//! socket's bytes into plaintext and back. Reads keep one deadline across the several socket
//! reads a TLS record may take, so a client dripping a record byte by byte is bounded exactly
//! as one dripping a plain head is.

use super::client::{add_cas, provider, read_pair, refused};
use super::{KeyPair, ServerTls, TlsError};
use crate::text::Unpoison;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// The first byte of a TLS handshake record (RFC 8446 §5.1, `ContentType.handshake`).
pub(crate) const HANDSHAKE_RECORD: u8 = 0x16;

/// What the listener serves, swapped whole by a reload.
pub(crate) struct Identity {
    files: KeyPair,
    current: Arc<Current>,
    /// The files' modification times and sizes when last read, to see a change.
    stamp: Mutex<Stamp>,
    pub(crate) config: Arc<ServerConfig>,
}

type Stamp = [(Option<SystemTime>, u64); 2];

/// The pair handshakes use now.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0.read().unpoisoned()))
    }
}

impl Identity {
    pub(crate) fn load(tls: &ServerTls) -> Result<Identity, TlsError> {
        let stamp = stamp(&tls.identity);
        let current = Arc::new(Current(RwLock::new(certified(&tls.identity)?)));
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| refused("the TLS server", e))?;
        let builder = match &tls.client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = RootCertStore::empty();
                add_cas(&mut roots, path)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                        .build()
                        .map_err(|e| refused(&format!("client CA {}", path.display()), e))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Identity {
            files: tls.identity.clone(),
            current,
            stamp: Mutex::new(stamp),
            config: Arc::new(config),
        })
    }

    /// Read the pair again; `Ok(true)` when the certificate differs from the one served.
    pub(crate) fn reload(&self) -> Result<bool, TlsError> {
        *self.stamp.lock().unpoisoned() = stamp(&self.files);
        let key = certified(&self.files)?;
        let mut current = self.current.0.write().unpoisoned();
        let changed = current.cert != key.cert;
        *current = key;
        Ok(changed)
    }

    fn files_changed(&self) -> bool {
        *self.stamp.lock().unpoisoned() != stamp(&self.files)
    }
}

fn stamp(files: &KeyPair) -> Stamp {
    let one = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| (m.modified().ok(), m.len()))
            .unwrap_or((None, 0))
    };
    [one(&files.cert), one(&files.key)]
}

/// The pair as rustls serves it, refused if the key does not match the certificate.
fn certified(files: &KeyPair) -> Result<Arc<CertifiedKey>, TlsError> {
    let (chain, key) = read_pair(files)?;
    CertifiedKey::from_der(chain, key, &provider())
        .map(Arc::new)
        .map_err(|e| TlsError::Refused {
            what: format!(
                "certificate {} with key {}",
                files.cert.display(),
                files.key.display()
            ),
            reason: e.to_string(),
        })
}

/// Reload `identity` when its files change, checked every `every`, for the process's life.
pub(crate) fn watch(identity: Arc<Identity>, who: &'static str, every: Duration) {
    let spawned = std::thread::Builder::new()
        .name("ddwire-tls-watch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                if identity.files_changed() {
                    report(who, &identity.files, identity.reload());
                }
            }
        });
    if let Err(e) = spawned {
        stderr_line!("ddwire {who}: cannot watch the TLS certificate for changes: {e}");
    }
}

/// Say on stderr how a reload went.
pub(crate) fn report(who: &str, files: &KeyPair, outcome: Result<bool, TlsError>) {
    match outcome {
        Ok(true) => stderr_line!(
            "ddwire {who}: TLS certificate reloaded from {}",
            files.cert.display()
        ),
        Ok(false) => stderr_line!(
            "ddwire {who}: TLS certificate {} read again; unchanged",
            files.cert.display()
        ),
        Err(e) => {
            stderr_line!("ddwire {who}: TLS certificate not reloaded, the old one stays: {e}")
        }
    }
}

/// One TLS connection over an accepted socket.
pub(crate) struct TlsStream {
    pub(crate) conn: ServerConnection,
    pub(crate) sock: TcpStream,
    /// When the read in progress must end; set with [`TlsStream::set_read_deadline`].
    deadline: Option<Instant>,
}

/// How a handshake ended other than with a connection.
pub(crate) enum Refusal {
    /// The client spoke plain HTTP: these are the bytes it sent, for a plain answer.
    PlainHttp(Vec<u8>),
    /// The deadline passed first.
    TimedOut,
    /// The client closed, or the handshake failed (the alert has been sent).
    Failed(String),
}

impl TlsStream {
    /// Start a connection on `sock` and finish its handshake by `deadline`. The first bytes
    /// are looked at before rustls sees them: a client speaking plain HTTP to this port gets
    /// [`Refusal::PlainHttp`], for an answer it can read.
    pub(crate) fn accept(
        identity: &Identity,
        sock: TcpStream,
        deadline: Instant,
    ) -> Result<TlsStream, (TcpStream, Refusal)> {
        let conn = match ServerConnection::new(Arc::clone(&identity.config)) {
            Ok(conn) => conn,
            Err(e) => return Err((sock, Refusal::Failed(e.to_string()))),
        };
        let mut stream = TlsStream {
            conn,
            sock,
            deadline: Some(deadline),
        };
        let mut first = [0u8; 2048];
        let n = match stream.read_socket(&mut first) {
            Ok(0) => return Err((stream.sock, Refusal::Failed("closed before a hello".into()))),
            Ok(n) => n,
            Err(e) => return Err((stream.sock, refusal(&e))),
        };
        if first[0] != HANDSHAKE_RECORD {
            return Err((stream.sock, Refusal::PlainHttp(first[..n].to_vec())));
        }
        let fed = stream.feed(&first[..n]);
        let done = fed.and_then(|()| {
            while stream.conn.is_handshaking() {
                stream.flush_tls()?;
                if !stream.conn.is_handshaking() {
                    break;
                }
                stream.read_tls()?;
            }
            stream.flush_tls()
        });
        match done {
            Ok(()) => {
                stream.deadline = None;
                Ok(stream)
            }
            Err(e) => Err((stream.sock, refusal(&e))),
        }
    }

    /// Bound every socket read until the next call to `at` (none: wait as the socket's own
    /// timeout says).
    pub(crate) fn set_read_deadline(&mut self, at: Option<Instant>) {
        self.deadline = at;
    }

    /// One socket read, within the deadline.
    fn read_socket(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(at) = self.deadline {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.sock.set_read_timeout(Some(left))?;
        }
        loop {
            match self.sock.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    /// Give rustls bytes read from the socket, and act on them; a fatal error sends its alert.
    fn feed(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.conn.read_tls(&mut bytes)?;
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.flush_tls();
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
        Ok(())
    }

    fn read_tls(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024 + 256];
        match self.read_socket(&mut buf)? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => self.feed(&buf[..n]),
        }
    }

    /// Write every TLS byte rustls holds.
    fn flush_tls(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        Ok(())
    }

    /// Say `close_notify`, then stop sending.
    pub(crate) fn close(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush_tls();
    }
}

fn refusal(e: &io::Error) -> Refusal {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Refusal::TimedOut,
        _ => Refusal::Failed(e.to_string()),
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The client closed without close_notify: as a plain socket's end.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            match self.read_tls() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            // Key updates and alerts may want an answer.
            self.flush_tls()?;
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.conn.writer().write(buf)?;
        self.flush_tls()?;
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let n = self.conn.writer().write_vectored(bufs)?;
        self.flush_tls()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_tls()
    }
}
