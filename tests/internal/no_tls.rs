//! The auditor's build (`cargo test --no-default-features`): without the `tls` feature, every
//! use of TLS is refused in one clear line, before any connection is made, and plain HTTP
//! works as before.

use ddwire::wire::WireError;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::server;
use ddwire::wire::http::{Handler, Limits, Response};
use ddwire::wire::tls::{
    ClientTrust, KeyPair, NOT_BUILT, ServerIdentity, ServerTls, TlsError, TlsFailure,
};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

#[test]
fn an_https_url_is_refused_as_not_built_without_connecting() {
    // Nothing listens there: a refusal that connected would say "connection refused".
    let err = HttpClient::tcp()
        .send(ClientRequest::get("https://127.0.0.1:9/", T))
        .unwrap_err();
    match &err {
        WireError::Tls { cause, .. } => assert_eq!(*cause, TlsFailure::NotBuilt),
        other => panic!("expected not-built, got {other:?}"),
    }
    assert!(
        err.to_string().contains("rebuild with default features"),
        "{err}"
    );
}

#[test]
fn plain_http_is_served_and_called_as_before() {
    let ok: Handler = Arc::new(|_| Response::empty(204));
    let s = server::serve("127.0.0.1:0", ok, Limits::DEFAULT).unwrap();
    assert!(s.base_url().starts_with("http://"));
    let r = HttpClient::tcp()
        .send(ClientRequest::get(s.base_url(), T))
        .unwrap();
    assert_eq!(r.status, 204);
}

#[test]
fn any_trust_but_the_default_and_any_listener_identity_are_refused() {
    let trust = ClientTrust {
        ca_files: vec![PathBuf::from("ca.pem")],
        ..ClientTrust::default()
    };
    assert!(matches!(
        HttpClient::tcp_trusting(&trust),
        Err(TlsError::NotBuilt)
    ));
    let identity = ServerIdentity::load(&ServerTls {
        identity: KeyPair {
            cert: PathBuf::from("server.pem"),
            key: PathBuf::from("server.key"),
        },
        client_ca: None,
    });
    assert!(matches!(identity, Err(TlsError::NotBuilt)));
    assert!(NOT_BUILT.contains("rebuild with default features"));
}

#[test]
fn every_tls_flag_and_https_url_on_the_command_line_is_one_line_naming_the_rebuild() {
    let exe = super::ddwire_exe();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tls");
    let cases: Vec<Vec<String>> = vec![
        vec!["check".into(), "https://127.0.0.1:9".into()],
        vec![
            "check".into(),
            "http://127.0.0.1:9".into(),
            "--ca-file".into(),
            format!("{fixtures}/ca.pem"),
        ],
        vec![
            "check".into(),
            "http://127.0.0.1:9".into(),
            "--insecure".into(),
        ],
        vec![
            "agent".into(),
            "hello".into(),
            "--port".into(),
            "0".into(),
            "--tls-cert".into(),
            format!("{fixtures}/server.pem"),
            "--tls-key".into(),
            format!("{fixtures}/server.key"),
        ],
        vec![
            "send".into(),
            "https://127.0.0.1:9".into(),
            "--data".into(),
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/messages/hello.json").into(),
        ],
    ];
    for args in cases {
        let out = Command::new(exe).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no TLS; rebuild with default features"),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
}
