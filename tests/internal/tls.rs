//! TLS on the real wire: ddwire's listeners and clients over loopback, with the test PKI in
//! `fixtures/tls/` (made by its `generate.sh`). Every way a handshake can fail gets its typed
//! cause; the listener's bounds hold from the first handshake byte; mTLS and certificate
//! reloads work under load. A build without the `tls` feature refuses `https://` in one line.

#![cfg(feature = "tls")]

use super::common::{self, TempDir, shared_dir};

use ddwire::agent::builtin::Echo;
use ddwire::agent::server::serve_on;
use ddwire::wire::WireError;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::{Message, Part, Role, TaskState};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Response};
use ddwire::wire::tls::{ClientTrust, KeyPair, ServerIdentity, ServerTls, TlsError, TlsFailure};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);

/// The fixtures, copied into a folder the running tests share, with every key at mode 0600
/// (git keeps no modes, and ddwire refuses a key others can read).
fn pki() -> Arc<TempDir> {
    static DIR: Mutex<Weak<TempDir>> = Mutex::new(Weak::new());
    shared_dir(&DIR, "tls-test", |dir| {
        use std::os::unix::fs::PermissionsExt;
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls");
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let to = dir.join(path.file_name().unwrap());
            std::fs::copy(&path, &to).unwrap();
            if to.extension().is_some_and(|e| e == "key") {
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
    })
}

fn file(name: &str) -> PathBuf {
    pki().path().join(name)
}

fn pair(name: &str) -> KeyPair {
    KeyPair {
        cert: file(&format!("{name}.pem")),
        key: file(&format!("{name}.key")),
    }
}

fn identity(name: &str, client_ca: Option<&str>) -> ServerIdentity {
    ServerIdentity::load(&ServerTls {
        identity: pair(name),
        client_ca: client_ca.map(file),
    })
    .unwrap()
}

/// Trusting the test CA alone.
fn trust() -> ClientTrust {
    ClientTrust {
        ca_files: vec![file("ca.pem")],
        ca_only: true,
        ..ClientTrust::default()
    }
}

fn client(trust: &ClientTrust) -> HttpClient {
    HttpClient::tcp_trusting(trust).unwrap()
}

/// A TLS listener answering 200 "ok" to anything.
fn tls_server(identity: ServerIdentity, limits: Limits) -> Server {
    let ok: Handler = Arc::new(|_| Response::bytes(200, "text/plain", b"ok".to_vec()));
    server::bind("127.0.0.1:0", limits)
        .unwrap()
        .with_tls(identity)
        .serve(ok)
        .unwrap()
}

fn get(client: &HttpClient, url: &str) -> Result<(u16, Vec<u8>), WireError> {
    client
        .send(ClientRequest::get(url, T))
        .map(|r| (r.status, r.body))
}

fn cause(result: Result<(u16, Vec<u8>), WireError>) -> TlsFailure {
    match result {
        Err(WireError::Tls { cause, .. }) => cause,
        other => panic!("expected a TLS failure, got {other:?}"),
    }
}

#[test]
fn an_a2a_agent_served_over_tls_answers_a_client_that_trusts_its_ca() {
    let _pki = pki();
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_tls(identity("server", None));
    assert_eq!(bound.scheme(), "https");
    let url = bound.default_public_url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let agent = serve_on(
        bound,
        Arc::new(Echo::new()),
        None,
        A2aClient::default(),
        None,
    )
    .unwrap();
    let a2a = A2aClient::new(client(&trust()));
    let card = a2a.fetch_card(&agent.base_url(), T).unwrap();
    let target = Target::from_card(&card).unwrap();
    assert!(target.url.starts_with("https://"), "{}", target.url);
    let message = Message::new(Role::User, vec![Part::text("over TLS")]);
    let task = a2a.send_for_task(&target, message, &[], T).unwrap();
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
}

#[test]
fn an_unknown_ca_is_its_own_cause_never_cannot_reach() {
    let _pki = pki();
    let server = tls_server(identity("untrusted", None), Limits::DEFAULT);
    let failure = cause(get(&client(&trust()), &server.base_url()));
    assert_eq!(failure, TlsFailure::UnknownCa);
    assert!(failure.to_string().contains("--ca-file"), "{failure}");
    // The system store does not hold the test CA either.
    let system = HttpClient::tcp();
    assert_eq!(
        cause(get(&system, &server.base_url())),
        TlsFailure::UnknownCa
    );
}

#[test]
fn an_expired_certificate_is_its_own_cause() {
    let _pki = pki();
    let server = tls_server(identity("expired", None), Limits::DEFAULT);
    assert_eq!(
        cause(get(&client(&trust()), &server.base_url())),
        TlsFailure::Expired
    );
}

#[test]
fn a_certificate_for_another_host_is_a_wrong_host_and_names_the_host_called() {
    let _pki = pki();
    let server = tls_server(identity("wronghost", None), Limits::DEFAULT);
    let failure = cause(get(&client(&trust()), &server.base_url()));
    assert_eq!(
        failure,
        TlsFailure::WrongHost {
            host: "127.0.0.1".into()
        }
    );
    // The same server, by a name its certificate does hold, is not a wrong host: `localhost`
    // is in the good certificate, and the verification is by name as well as by IP.
    let good = tls_server(identity("server", None), Limits::DEFAULT);
    let url = format!("https://localhost:{}/", good.local_addr().port());
    assert_eq!(get(&client(&trust()), &url).unwrap().0, 200);
}

#[test]
fn insecure_trust_accepts_any_certificate_and_only_when_asked() {
    let _pki = pki();
    let server = tls_server(identity("wronghost", None), Limits::DEFAULT);
    let insecure = ClientTrust {
        insecure: true,
        ..ClientTrust::default()
    };
    assert_eq!(get(&client(&insecure), &server.base_url()).unwrap().0, 200);
    assert!(matches!(
        get(&client(&trust()), &server.base_url()),
        Err(WireError::Tls { .. })
    ));
}

#[test]
fn a_server_that_never_finishes_the_handshake_is_a_handshake_timeout() {
    let _pki = pki();
    // Accepts, reads the hello, says nothing.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    let started = Instant::now();
    let result = client(&trust()).send(ClientRequest::get(
        format!("https://127.0.0.1:{}/", addr.port()),
        Duration::from_millis(500),
    ));
    match result {
        Err(WireError::Tls { cause, .. }) => assert_eq!(cause, TlsFailure::HandshakeTimeout),
        other => panic!("expected a handshake timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    silent.join().unwrap();
}

#[test]
fn tls_spoken_to_a_plain_port_is_a_plain_http_server_and_the_server_says_why() {
    let _pki = pki();
    let ok: Handler = Arc::new(|_| Response::empty(204));
    let plain = server::serve("127.0.0.1:0", ok, Limits::DEFAULT).unwrap();
    let url = format!("https://{}/", plain.local_addr());
    let failure = cause(get(&client(&trust()), &url));
    assert_eq!(failure, TlsFailure::PlainHttpServer);
    assert!(failure.to_string().contains("http://"), "{failure}");
}

#[test]
fn plain_http_spoken_to_a_tls_port_is_answered_400_in_plain_http_with_the_fix() {
    let _pki = pki();
    let server = tls_server(identity("server", None), Limits::DEFAULT);
    let url = format!("http://{}/", server.local_addr());
    let (status, body) = get(&HttpClient::tcp(), &url).unwrap();
    assert_eq!(status, 400);
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.contains("speaks TLS") && body.contains("https://"),
        "{body}"
    );
}

#[test]
fn a_handshake_that_never_completes_is_dropped_at_the_head_deadline_holding_only_its_slot() {
    let _pki = pki();
    let limits = Limits {
        head_timeout: Duration::from_millis(400),
        max_connections: 4,
        ..Limits::DEFAULT
    };
    let server = tls_server(identity("server", None), limits);
    // Two clients open TCP; one sends nothing, one half a hello (a record header and a byte).
    let mut silent = TcpStream::connect(server.local_addr()).unwrap();
    let mut dripping = TcpStream::connect(server.local_addr()).unwrap();
    dripping
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01])
        .unwrap();
    // Meanwhile every other caller is served.
    let https = client(&trust());
    for _ in 0..3 {
        assert_eq!(get(&https, &server.base_url()).unwrap().0, 200);
    }
    let started = Instant::now();
    for s in [&mut silent, &mut dripping] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 64];
        // Closed by the server (EOF or reset), not left open.
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "the server sent {:?}", &buf[..n]);
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // Their slots are free again (the served client's kept-alive one too, once it is gone).
    drop(https);
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.connections() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.connections(), 0);
}

#[test]
fn mtls_refuses_a_client_without_a_certificate_or_with_one_from_another_ca() {
    let _pki = pki();
    let server = tls_server(identity("server", Some("ca.pem")), Limits::DEFAULT);
    let url = server.base_url();
    let without = cause(get(&client(&trust()), &url));
    assert!(
        matches!(without, TlsFailure::ClientCertificateRefused { .. }),
        "{without:?}"
    );
    assert!(
        without.to_string().contains("--tls-client-cert"),
        "{without}"
    );
    let other = ClientTrust {
        client_cert: Some(pair("client-other")),
        ..trust()
    };
    assert!(matches!(
        cause(get(&client(&other), &url)),
        TlsFailure::ClientCertificateRefused { .. }
    ));
    let with = ClientTrust {
        client_cert: Some(pair("client")),
        ..trust()
    };
    assert_eq!(get(&client(&with), &url).unwrap().0, 200);
    // And a client certificate added to an existing client, as an agent's own entry does.
    let own = client(&trust()).with_client_cert(pair("client")).unwrap();
    assert_eq!(get(&own, &url).unwrap().0, 200);
}

/// The leaf certificate a server presents, read with rustls directly.
fn served_leaf(addr: std::net::SocketAddr) -> Vec<u8> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in std::fs::read_to_string(file("ca.pem"))
        .unwrap()
        .split_inclusive("-----END CERTIFICATE-----\n")
    {
        use rustls::pki_types::pem::PemObject;
        if let Ok(der) = rustls::pki_types::CertificateDer::from_pem_slice(cert.as_bytes()) {
            roots.add(der).unwrap();
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(T)).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).unwrap();
    }
    conn.peer_certificates().unwrap()[0].to_vec()
}

fn leaf_of(name: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_file_iter(file(&format!("{name}.pem")))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// A folder of its own holding `name`'s pair as `live.pem`/`live.key`, for a test to rotate.
fn live_pair(tag: &str, name: &str) -> KeyPair {
    let dir = pki().path().join(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let live = KeyPair {
        cert: dir.join("live.pem"),
        key: dir.join("live.key"),
    };
    rotate(&live, name);
    live
}

/// Replace the live pair's files with `name`'s, each by a rename (as deployment tools do).
fn rotate(live: &KeyPair, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    let from = pair(name);
    for (src, dst) in [(&from.cert, &live.cert), (&from.key, &live.key)] {
        let tmp = dst.with_extension("tmp");
        std::fs::copy(src, &tmp).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&tmp, dst).unwrap();
    }
}

#[test]
fn a_reload_under_load_drops_nothing_and_new_handshakes_get_the_new_certificate() {
    let _pki = pki();
    let live = live_pair("reload", "server");
    let identity = ServerIdentity::load(&ServerTls {
        identity: live.clone(),
        client_ca: None,
    })
    .unwrap();
    let server = tls_server(identity.clone(), Limits::DEFAULT);
    let url = server.base_url();
    assert_eq!(served_leaf(server.local_addr()), leaf_of("server"));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..4)
        .map(|i| {
            let (stop, done, url) = (stop.clone(), done.clone(), url.clone());
            std::thread::spawn(move || {
                // Half keep one connection alive, half make a new one per call.
                let keep = client(&trust());
                let mut failures = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let c = if i % 2 == 0 {
                        keep.clone()
                    } else {
                        client(&trust())
                    };
                    match get(&c, &url) {
                        Ok((200, _)) => {
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        other => failures.push(format!("{other:?}")),
                    }
                }
                failures
            })
        })
        .collect();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while done.load(Ordering::SeqCst) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for(50);
    rotate(&live, "server2");
    assert!(identity.reload().unwrap(), "the certificate changed");
    let at_reload = done.load(Ordering::SeqCst);
    wait_for(at_reload + 50);
    stop.store(true, Ordering::SeqCst);
    let failures: Vec<String> = callers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(
        failures.is_empty(),
        "calls failed across the reload: {failures:?}"
    );
    assert_eq!(served_leaf(server.local_addr()), leaf_of("server2"));
    // Reading the same files again changes nothing.
    assert!(!identity.reload().unwrap());
}

#[test]
fn a_new_pair_that_does_not_parse_keeps_the_old_one_serving() {
    let _pki = pki();
    let live = live_pair("broken", "server");
    let identity = ServerIdentity::load(&ServerTls {
        identity: live.clone(),
        client_ca: None,
    })
    .unwrap();
    let server = tls_server(identity.clone(), Limits::DEFAULT);
    std::fs::write(&live.cert, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    assert!(matches!(identity.reload(), Err(TlsError::Pem { .. })));
    // A key that is not the certificate's.
    rotate(&live, "server");
    std::fs::copy(file("server2.key"), &live.key).unwrap();
    let refused = identity.reload().unwrap_err();
    assert!(matches!(refused, TlsError::Refused { .. }), "{refused}");
    assert_eq!(served_leaf(server.local_addr()), leaf_of("server"));
    assert_eq!(get(&client(&trust()), &server.base_url()).unwrap().0, 200);
}

#[test]
fn a_changed_file_is_reloaded_by_the_watch_without_a_signal() {
    let _pki = pki();
    let live = live_pair("watch", "server");
    let identity = ServerIdentity::load(&ServerTls {
        identity: live.clone(),
        client_ca: None,
    })
    .unwrap();
    identity.watch("test", Duration::from_millis(50));
    let server = tls_server(identity, Limits::DEFAULT);
    rotate(&live, "server2");
    let deadline = Instant::now() + Duration::from_secs(10);
    while served_leaf(server.local_addr()) != leaf_of("server2") {
        assert!(Instant::now() < deadline, "the watch never reloaded");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_key_others_can_read_is_refused_with_the_chmod_that_fixes_it() {
    let _pki = pki();
    use std::os::unix::fs::PermissionsExt;
    let dir = pki().path().join("open");
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("open.key");
    std::fs::copy(file("server.key"), &key).unwrap();
    for mode in [0o644, 0o640, 0o604] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let refused = ServerIdentity::load(&ServerTls {
            identity: KeyPair {
                cert: file("server.pem"),
                key: key.clone(),
            },
            client_ca: None,
        })
        .unwrap_err();
        assert!(
            matches!(refused, TlsError::KeyOpenToOthers { .. }),
            "{mode:o}: {refused}"
        );
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
        // A client key is held to the same rule.
        let client_key = ClientTrust {
            client_cert: Some(KeyPair {
                cert: file("client.pem"),
                key: key.clone(),
            }),
            ..trust()
        };
        assert!(matches!(
            HttpClient::tcp_trusting(&client_key),
            Err(TlsError::KeyOpenToOthers { .. })
        ));
    }
}

#[test]
fn a_ca_file_with_no_certificate_is_refused_when_the_client_is_built() {
    let _pki = pki();
    let refused = HttpClient::tcp_trusting(&ClientTrust {
        ca_files: vec![file("server.key")],
        ..ClientTrust::default()
    });
    assert!(
        matches!(refused, Err(TlsError::Pem { .. })),
        "{:?}",
        refused.err()
    );
    let missing = HttpClient::tcp_trusting(&ClientTrust {
        ca_files: vec![file("no-such.pem")],
        ..ClientTrust::default()
    });
    assert!(matches!(missing, Err(TlsError::Read { .. })));
}

#[test]
fn the_system_store_honours_ssl_cert_file() {
    let _pki = pki();
    // A child process, so the variable is read fresh (the store is read once per process).
    let exe = crate::internal_tests::ddwire_exe();
    let server = tls_server(identity("server", None), Limits::DEFAULT);
    let check = |env: Option<&Path>| {
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["check", &server.base_url(), "--format", "json"]);
        cmd.env_remove("SSL_CERT_DIR").env_remove("DD_CA_FILE");
        match env {
            Some(path) => cmd.env("SSL_CERT_FILE", path),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        let out = cmd.output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        report["probes"][0].clone()
    };
    let trusted = check(Some(&file("ca.pem")));
    assert_eq!(trusted["id"], "tls.handshake");
    assert_eq!(trusted["status"], "pass", "{trusted}");
    let untrusted = check(None);
    assert_eq!(untrusted["status"], "fail", "{untrusted}");
    assert!(untrusted["detail"].as_str().unwrap().contains("unknown-ca"));
}

#[test]
fn a_logged_client_logs_the_plaintext_http_it_sent_over_tls() {
    let _pki = pki();
    let server = tls_server(identity("server", None), Limits::DEFAULT);
    let path = pki().path().join("wire.log");
    let log = ddwire::wire::wirelog::WireLog::create(&path).unwrap();
    let logged = client(&trust()).logged(log.clone());
    assert_eq!(get(&logged, &server.base_url()).unwrap().0, 200);
    log.close(T);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("GET / HTTP/1.1"), "{text}");
    assert!(text.contains("HTTP/1.1 200"), "{text}");
}

#[test]
fn a_tls_listener_at_its_connection_cap_refuses_with_a_tls_alert_not_http_bytes() {
    let _pki = pki();
    let limits = Limits {
        max_connections: 1,
        ..Limits::DEFAULT
    };
    let server = tls_server(identity("server", None), limits);
    let _held = TcpStream::connect(server.local_addr()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let failure = cause(get(&client(&trust()), &server.base_url()));
    assert!(
        matches!(&failure, TlsFailure::Alert { alert } if alert.contains("InternalError")),
        "{failure:?}"
    );
}

/// An agent served over TLS with the harness's trust set right is called; with its CA not
/// trusted, the run is a failed envelope titled unreachable, its detail naming the cause.
#[test]
fn the_harness_reports_an_agent_behind_a_failed_handshake_as_unreachable_with_the_cause() {
    let _pki = pki();
    use common::{ScriptedAgent, permissive_profile, record, request, reviews};
    use ddwire::contract::{GroundingMode, InvocationRequest};
    use ddwire::harness::conductor::Conductor;
    use ddwire::harness::policy::Profile;
    use ddwire::harness::registry::{Registry, RemoteAgent};
    use ddwire::harness::store::RunStore;
    use ddwire::harness::testkit::test_principal;
    let agents: Vec<Arc<dyn ddwire::agent::Agent>> =
        vec![Arc::new(ScriptedAgent::new(GroundingMode::None, reviews()))];
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_tls(identity("server", None));
    let agent = serve_on(bound, agents[0].clone(), None, A2aClient::default(), None).unwrap();
    let trusting = A2aClient::new(client(&trust()));
    let profile = permissive_profile(&agents);
    let conductor = |client: A2aClient, runs: &Path| {
        let mut registry = Registry::default();
        registry
            .add(RemoteAgent::from_url(&trusting, &agent.base_url(), T).unwrap())
            .unwrap();
        Conductor::new(
            registry,
            Profile::from_bytes(profile.as_bytes(), "test-profile.json").unwrap(),
            RunStore::open(runs).unwrap(),
            client,
        )
    };
    let runs = pki().path().join("harness-runs");
    let invoke = |c: &Conductor| {
        let doc = request("fake.none", record());
        let req = InvocationRequest::from_value(&doc).unwrap();
        c.invoke(req, &test_principal())
            .unwrap()
            .envelope
            .to_document()
    };
    let good = invoke(&conductor(trusting.clone(), &runs.join("good")));
    assert_eq!(good["outcome"]["status"], "succeeded", "{good}");
    let bad = invoke(&conductor(A2aClient::default(), &runs.join("bad")));
    assert_eq!(
        bad["problem"]["title"], "Agent could not be reached",
        "{bad}"
    );
    let detail = bad["problem"]["detail"].as_str().unwrap();
    assert!(detail.contains("unknown CA"), "{detail}");
}

/// An agents file entry's own client certificate is presented to that agent, for its card and
/// its calls, in place of the harness's.
#[test]
fn an_agent_entry_with_its_own_client_certificate_is_admitted_behind_mtls() {
    let _pki = pki();
    use ddwire::harness::registry::{self, Registry};
    let agent = {
        let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
            .unwrap()
            .with_tls(identity("server", Some("ca.pem")));
        serve_on(
            bound,
            Arc::new(Echo::new()),
            None,
            A2aClient::default(),
            None,
        )
        .unwrap()
    };
    let dir = pki().path().join("agents-file");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(file("client.pem"), dir.join("c.pem")).unwrap();
    std::fs::copy(file("client.key"), dir.join("c.key")).unwrap();
    let config = dir.join("agents.json");
    let write = |entry: &str| {
        std::fs::write(
            &config,
            format!(
                r#"{{"agents": [{{"name": "echo", "url": "{}"{entry}}}]}}"#,
                agent.base_url()
            ),
        )
        .unwrap()
    };
    let base = A2aClient::new(client(&trust()));
    write("");
    let without = Registry::from_config(&base, &registry::load_config(&config).unwrap()).unwrap();
    assert!(without.is_empty());
    let why = without.unavailable()["echo"].clone();
    assert!(why.contains("client certificate"), "{why}");
    // Relative to the agents file's folder.
    write(r#", "tls_client_cert": "c.pem", "tls_client_key": "c.key""#);
    let with = Registry::from_config(&base, &registry::load_config(&config).unwrap()).unwrap();
    assert_eq!(with.ids(), ["echo.wire"], "{:?}", with.unavailable());
    write(r#", "tls_client_cert": "c.pem""#);
    let half = registry::load_config(&config).unwrap_err().to_string();
    assert!(half.contains("tls_client_key"), "{half}");
}
