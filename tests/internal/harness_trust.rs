//! Who may read runs, and what a browser may do, over loopback TCP (issue 10's probes):
//!
//! - with bearer tokens, every route that reveals a run needs one (401 and a `Bearer`
//!   challenge without), a principal reads its own runs and the delegations made on its
//!   behalf, another principal's run is not found (HTTP 404, A2A task not found), and an
//!   auditor token reads every run;
//! - a `text/plain` (or untyped) POST is refused with 415 before any run starts, a `Host` that
//!   is not the harness's is refused with 421, a foreign `Origin` with 403, and an origin
//!   given with `--cors-origin` gets its preflight answered and its answers marked.

use super::common;

use common::{TempDir, bare_conductor, message, request};
use ddwire::agent::Agent;
use ddwire::agent::builtin::{Confirm, Director, Hello};
use ddwire::harness::identity::{Authenticator, Role, Token, token_digest};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::testkit::HARNESS_URL;
use ddwire::ids::new_uuid7;
use ddwire::wire::http::Limits;
use ddwire::wire::http::browser::BrowserPolicy;
use ddwire::wire::http::server::{Server, bind};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);
const ALICE: &str = "https://orcid.org/0000-0002-1825-0097";
const BOB: &str = "https://orcid.org/0000-0001-5109-3700";

fn person(id: &str, name: &str) -> ddwire::contract::Principal {
    ddwire::contract::Principal::new(id, name, ddwire::contract::PrincipalKind::Person).unwrap()
}

/// A harness over the director and hello (served in memory, where the director calls the
/// harness back), itself served on loopback TCP, taking three tokens: alice's, bob's and an
/// auditor's.
struct Served {
    addr: SocketAddr,
    _server: Server,
    _runs: TempDir,
}

fn served(policy: Option<BrowserPolicy>) -> Served {
    let runs = TempDir::new("harness-trust");
    let agents: Vec<Arc<dyn Agent>> = vec![
        Arc::new(Director::new()),
        Arc::new(Hello::new()),
        Arc::new(Confirm::new()),
    ];
    let (conductor, net) = bare_conductor(agents, runs.path());
    let mut auditor = Token::new(
        token_digest("auditor-token"),
        person("https://orcid.org/0000-0003-1419-2405", "Ada Auditor"),
    );
    auditor.role = Role::Auditor;
    let auth = Authenticator::Bearer(vec![
        Token::new(token_digest("alice-token"), person(ALICE, "Alice")),
        Token::new(token_digest("bob-token"), person(BOB, "Bob")),
        auditor,
    ]);
    let mut harness = Harness::new(conductor, Some(auth), HARNESS_URL);
    if let Some(policy) = policy {
        harness = harness.with_browser_policy(policy);
    }
    let harness = Arc::new(harness);
    net.serve(
        "harness.test",
        harness_server::handler(Arc::clone(&harness)),
        Limits::DEFAULT,
    );
    let bound = bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let addr = bound.local_addr();
    let server = bound.serve(harness_server::handler(harness)).unwrap();
    Served {
        addr,
        _server: server,
        _runs: runs,
    }
}

/// One answer: status, header fields (names lower-cased), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// Send one request as raw HTTP/1.1 bytes (`Host` is the bound address unless `headers`
/// names one) and read the whole answer, within [`T`].
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(T)).unwrap();
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    socket.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole head");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `message/send` of one InvocationRequest as `token`'s principal; the JSON-RPC reply.
fn send(addr: SocketAddr, token: &str, invocation: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": new_uuid7(), "role": "user",
                    "parts": [{"kind": "data", "data": invocation}]}}});
    let auth = bearer(token);
    let answer = http(
        addr,
        "POST",
        "/a2a",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        &body.to_string(),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

/// A stored run of hello for `token`'s principal; its id.
fn run_as(addr: SocketAddr, token: &str) -> String {
    let reply = send(addr, token, request("hello.world", message("hi")));
    assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    reply["result"]["id"].as_str().unwrap().to_string()
}

/// `tasks/get` or `tasks/cancel` as `auth` (a whole header value, or none); the reply.
fn task_call(addr: SocketAddr, method: &str, id: &str, auth: Option<&str>) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"id": id}});
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = auth {
        headers.push(("Authorization", a));
    }
    http(addr, "POST", "/a2a", &headers, &body.to_string()).json()
}

fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> Answer {
    let auth = token.map(bearer);
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    http(addr, "GET", path, &headers, "")
}

fn listed_ids(answer: &Answer) -> Vec<String> {
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["invocation_id"].as_str().unwrap().to_string())
        .collect()
}

fn read_routes(id: &str) -> Vec<String> {
    vec![
        "/runs".into(),
        format!("/runs/{id}"),
        format!("/runs/{id}/spans"),
        format!("/runs/{id}/grounding"),
        format!("/runs/{id}/agent-result"),
        format!("/runs/{id}/waterfall"),
        format!("/agui/runs/{id}"),
        "/conversations".into(),
        format!("/conversations/{}", new_uuid7()),
    ]
}

#[test]
fn every_run_read_without_a_credential_is_401_with_a_bearer_challenge() {
    let s = served(None);
    let id = run_as(s.addr, "alice-token");
    for path in read_routes(&id) {
        let answer = get(s.addr, &path, None);
        assert_eq!(answer.status, 401, "{path}: {}", answer.body);
        assert_eq!(
            answer.header("www-authenticate"),
            Some("Bearer realm=\"ddwire\""),
            "{path}"
        );
        assert!(!answer.body.contains(&id), "{path} leaked the run");
        let wrong = get(s.addr, &path, Some("not-a-token"));
        assert_eq!(wrong.status, 401, "{path}");
        assert!(
            wrong
                .header("www-authenticate")
                .is_some_and(|c| c.starts_with("Bearer ") && c.contains("invalid_token")),
            "{path}"
        );
    }
    // A2A: GetTask and CancelTask without a token are refused, and show nothing of the run.
    for method in ["tasks/get", "tasks/cancel"] {
        let reply = task_call(s.addr, method, &id, None);
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Unauthenticated"),
            "{reply}"
        );
        assert!(reply.get("result").is_none());
    }
    // What reveals no run stays open: the card, the agents, health, the viewer page.
    for path in [
        "/.well-known/agent-card.json",
        "/agents",
        "/healthz",
        "/viewer",
    ] {
        assert_eq!(get(s.addr, path, None).status, 200, "{path}");
    }
}

#[test]
fn another_principals_run_is_answered_as_not_found() {
    let s = served(None);
    let alices = run_as(s.addr, "alice-token");
    let prefix = &alices[..13];
    for path in read_routes(&alices)
        .into_iter()
        .filter(|p| p.contains(&alices))
        .chain([format!("/runs/{prefix}")])
    {
        let answer = get(s.addr, &path, Some("bob-token"));
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        // The same answer as for a run that does not exist at all.
        let none = get(
            s.addr,
            &path.replace(&alices, &new_uuid7()),
            Some("bob-token"),
        );
        assert_eq!(none.status, 404, "{path}");
        assert_eq!(
            get(s.addr, &path, Some("alice-token")).status,
            200,
            "{path}"
        );
    }
    assert!(listed_ids(&get(s.addr, "/runs", Some("bob-token"))).is_empty());
    // Paging after a prefix names no one else's run among candidates.
    let after = get(
        s.addr,
        &format!("/runs?after={}", &alices[..4]),
        Some("bob-token"),
    );
    assert!(!after.body.contains(&alices), "{}", after.body);
    for method in ["tasks/get", "tasks/cancel"] {
        let reply = task_call(s.addr, method, &alices, Some("Bearer bob-token"));
        assert_eq!(reply["error"]["code"], -32001, "{method}: {reply}");
        let unknown = task_call(s.addr, method, &new_uuid7(), Some("Bearer bob-token"));
        assert_eq!(reply["error"]["code"], unknown["error"]["code"]);
    }
    let own = task_call(s.addr, "tasks/get", &alices, Some("Bearer alice-token"));
    assert_eq!(own["result"]["id"], alices.as_str(), "{own}");
    // A refusal in a task (no run: an unknown agent) is its caller's to read back, too.
    let refused = send(s.addr, "alice-token", request("nobody.here", message("hi")));
    assert_eq!(refused["result"]["status"]["state"], "failed", "{refused}");
    let task = refused["result"]["id"].as_str().unwrap();
    let mine = task_call(s.addr, "tasks/get", task, Some("Bearer alice-token"));
    assert_eq!(mine["result"]["id"], task, "{mine}");
    let theirs = task_call(s.addr, "tasks/get", task, Some("Bearer bob-token"));
    assert_eq!(theirs["error"]["code"], -32001, "{theirs}");
}

/// Every A2A method that names a task, in both bindings, streamed or not: `(binding version,
/// method, params)` for the task `id`. A send naming the task continues it (a resumption).
fn task_methods(id: &str) -> Vec<(Option<&'static str>, &'static str, Value)> {
    let v03 = |m: &'static str| (None, m, json!({"id": id}));
    let v10 = |m: &'static str| (Some("1.0"), m, json!({"id": id}));
    let v03_send = |m: &'static str| {
        let message = json!({"kind": "message", "messageId": new_uuid7(), "role": "user",
                             "taskId": id, "parts": [{"kind": "data", "data": {"confirm": true}}]});
        (None, m, json!({"message": message}))
    };
    let v10_send = |m: &'static str| {
        let message = json!({"messageId": new_uuid7(), "role": "ROLE_USER", "taskId": id,
                             "parts": [{"data": {"confirm": true}}]});
        (Some("1.0"), m, json!({"message": message}))
    };
    vec![
        v03("tasks/get"),
        v03("tasks/resubscribe"),
        v03_send("message/send"),
        v03_send("message/stream"),
        v10("GetTask"),
        v10("SubscribeToTask"),
        v10_send("SendMessage"),
        v10_send("SendStreamingMessage"),
        // Last: a cancel ends a suspended task.
        v03("tasks/cancel"),
        v10("CancelTask"),
    ]
}

/// One JSON-RPC call on `/a2a` as `auth` (a whole header value, or none): status and body, with
/// `id` written as `<id>` so that answers about two tasks can be compared.
fn rpc_answer(
    addr: SocketAddr,
    version: Option<&str>,
    method: &str,
    params: &Value,
    auth: Option<&str>,
    id: &str,
) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(v) = version {
        headers.push(("A2A-Version", v));
    }
    if let Some(a) = auth {
        headers.push(("Authorization", a));
    }
    let answer = http(addr, "POST", "/a2a", &headers, &body.to_string());
    (answer.status, answer.body.replace(id, "<id>"))
}

#[test]
fn every_method_that_names_a_task_answers_another_principal_as_for_an_unknown_task() {
    let s = served(None);
    // Alice's finished run, and her run suspended waiting for her confirmation.
    let finished = run_as(s.addr, "alice-token");
    let confirm = json!({"agent_id": "demo.confirm", "invocation_id": new_uuid7(),
                         "input": {"schema_class": "Message", "message_text": "delete it"}});
    let reply = send(s.addr, "alice-token", confirm);
    assert_eq!(
        reply["result"]["status"]["state"], "input-required",
        "{reply}"
    );
    let suspended = reply["result"]["id"].as_str().unwrap().to_string();
    for alices in [&finished, &suspended] {
        let unknown = new_uuid7();
        for (version, method, params) in task_methods(alices) {
            let theirs = |auth| rpc_answer(s.addr, version, method, &params, auth, alices);
            let (_, _, none_params) = task_methods(&unknown)
                .into_iter()
                .find(|(v, m, _)| *v == version && *m == method)
                .unwrap();
            let none = |auth| rpc_answer(s.addr, version, method, &none_params, auth, &unknown);
            for auth in [Some("Bearer bob-token"), None] {
                let (status, body) = theirs(auth);
                assert_eq!((status, body.clone()), none(auth), "{method} as {auth:?}");
                assert!(
                    !body.contains("Alice") && !body.contains("delete it"),
                    "{method} as {auth:?} shows Alice's task: {body}"
                );
            }
        }
    }
    // Alice still sees both, and her suspended task is still hers to resume.
    let own = task_call(s.addr, "tasks/get", &suspended, Some("Bearer alice-token"));
    assert_eq!(own["result"]["id"], suspended.as_str(), "{own}");
}

#[test]
fn a_principal_reads_the_delegations_made_on_its_behalf_and_an_auditor_reads_every_run() {
    let s = served(None);
    let reply = send(
        s.addr,
        "alice-token",
        request("director.route", message("hi")),
    );
    let parent = reply["result"]["id"].as_str().unwrap().to_string();
    let envelope = &reply["result"]["artifacts"][0]["parts"][0]["data"];
    let child = envelope["delegations"][0]["delegated_invocation_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a delegation: {envelope}"))
        .to_string();
    let bobs = run_as(s.addr, "bob-token");

    let mut alice_sees = listed_ids(&get(s.addr, "/runs", Some("alice-token")));
    alice_sees.sort();
    let mut both = vec![parent.clone(), child.clone()];
    both.sort();
    assert_eq!(alice_sees, both);
    assert_eq!(
        get(s.addr, &format!("/runs/{child}"), Some("alice-token")).status,
        200
    );
    assert_eq!(
        get(s.addr, &format!("/runs/{child}"), Some("bob-token")).status,
        404
    );
    assert_eq!(
        listed_ids(&get(s.addr, "/runs", Some("bob-token"))),
        vec![bobs.clone()]
    );

    let auditor = listed_ids(&get(s.addr, "/runs", Some("auditor-token")));
    for id in [&parent, &child, &bobs] {
        assert!(auditor.contains(id), "the auditor misses {id}");
        assert_eq!(
            get(s.addr, &format!("/runs/{id}"), Some("auditor-token")).status,
            200
        );
        let task = task_call(s.addr, "tasks/get", id, Some("Bearer auditor-token"));
        assert_eq!(task["result"]["id"], id.as_str(), "{task}");
    }
}

/// A2A `ListTasks` (1.0): a principal lists its own tasks, an auditor every principal's.
#[test]
fn list_tasks_shows_a_principal_its_own_and_an_auditor_every_principals() {
    let s = served(None);
    let alices = run_as(s.addr, "alice-token");
    let bobs = run_as(s.addr, "bob-token");
    let list = |token: &str| {
        let auth = bearer(token);
        let body = json!({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}});
        let answer = http(
            s.addr,
            "POST",
            "/a2a",
            &[
                ("Content-Type", "application/json"),
                ("A2A-Version", "1.0"),
                ("Authorization", &auth),
            ],
            &body.to_string(),
        )
        .json();
        let mut ids: Vec<String> = answer["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(list("alice-token"), vec![alices.clone()]);
    assert_eq!(list("bob-token"), vec![bobs.clone()]);
    let mut both = vec![alices, bobs];
    both.sort();
    assert_eq!(list("auditor-token"), both);
}

#[test]
fn the_runs_list_filters_by_the_exact_principal_id() {
    let s = served(None);
    let alices = run_as(s.addr, "alice-token");
    let bobs = run_as(s.addr, "bob-token");
    // Asking for someone else's runs gives none, never theirs.
    let q = |who: &str| {
        format!(
            "/runs?principal={}",
            who.replace(':', "%3A").replace('/', "%2F")
        )
    };
    assert!(listed_ids(&get(s.addr, &q(BOB), Some("alice-token"))).is_empty());
    assert_eq!(
        listed_ids(&get(s.addr, &q(ALICE), Some("alice-token"))),
        vec![alices.clone()]
    );
    // The auditor filters as it asks, by id or name.
    assert_eq!(
        listed_ids(&get(s.addr, &q(BOB), Some("auditor-token"))),
        vec![bobs]
    );
    assert_eq!(
        listed_ids(&get(s.addr, "/runs?principal=Alice", Some("auditor-token"))),
        vec![alices]
    );
}

#[test]
fn a_text_plain_post_is_refused_with_415_and_starts_no_run() {
    let s = served(None);
    let invocation = request("hello.world", message("hi"));
    let id = invocation["invocation_id"].as_str().unwrap().to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": new_uuid7(), "role": "user",
                    "parts": [{"kind": "data", "data": invocation}]}}})
    .to_string();
    let auth = bearer("alice-token");
    for path in ["/a2a", "/", "/agui"] {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let mut headers = vec![("Authorization", auth.as_str())];
            if let Some(t) = content_type {
                headers.push(("Content-Type", t));
            }
            let answer = http(s.addr, "POST", path, &headers, &body);
            assert_eq!(
                answer.status, 415,
                "{path} {content_type:?}: {}",
                answer.body
            );
            assert!(
                answer.json()["error"]
                    .as_str()
                    .unwrap()
                    .contains("application/json")
            );
        }
    }
    assert_eq!(
        get(s.addr, &format!("/runs/{id}"), Some("alice-token")).status,
        404
    );
    // The media types the upstream clients send are taken.
    for content_type in ["application/json", "application/a2a+json; charset=utf-8"] {
        let answer = http(
            s.addr,
            "POST",
            "/a2a",
            &[("Content-Type", content_type), ("Authorization", &auth)],
            r#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"x"}}"#,
        );
        assert_eq!(answer.status, 200, "{content_type}");
    }
}

#[test]
fn a_foreign_host_is_refused_with_421_and_a_reason() {
    let s = served(None);
    let port = s.addr.port();
    for host in [
        "evil.example".to_string(),
        format!("rebind.evil.example:{port}"),
        format!("harness.test.evil.example:{port}"),
    ] {
        for (method, path) in [("GET", "/runs"), ("POST", "/a2a"), ("GET", "/viewer")] {
            let answer = http(
                s.addr,
                method,
                path,
                &[
                    ("Host", &host),
                    ("Authorization", "Bearer alice-token"),
                    ("Content-Type", "application/json"),
                ],
                "{}",
            );
            assert_eq!(answer.status, 421, "{host} {path}");
            let why = answer.json()["error"].as_str().unwrap().to_string();
            assert!(why.contains("--allowed-hosts"), "{why}");
        }
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "harness.test".to_string(),
    ] {
        let answer = http(
            s.addr,
            "GET",
            "/runs",
            &[("Host", &host), ("Authorization", "Bearer alice-token")],
            "",
        );
        assert_eq!(answer.status, 200, "{host}");
    }
    // A name given with --allowed-hosts is taken.
    let s = served(Some(
        BrowserPolicy::new(HARNESS_URL).allow_hosts(["dd.internal.example"]),
    ));
    let answer = http(
        s.addr,
        "GET",
        "/healthz",
        &[("Host", "dd.internal.example:8443")],
        "",
    );
    assert_eq!(answer.status, 200);
}

#[test]
fn a_foreign_origin_is_refused_with_403() {
    let s = served(None);
    let own = format!("http://{}", s.addr);
    for origin in ["https://evil.example", "null", "http://localhost:5173"] {
        for (method, path) in [("GET", "/runs"), ("POST", "/a2a"), ("POST", "/agui")] {
            let answer = http(
                s.addr,
                method,
                path,
                &[
                    ("Origin", origin),
                    ("Authorization", "Bearer alice-token"),
                    ("Content-Type", "application/json"),
                ],
                "{}",
            );
            assert_eq!(answer.status, 403, "{origin} {path}");
            assert!(answer.header("access-control-allow-origin").is_none());
        }
    }
    // The harness's own pages (the viewer) send their own origin, which passes.
    let answer = http(
        s.addr,
        "GET",
        "/runs",
        &[("Origin", &own), ("Authorization", "Bearer alice-token")],
        "",
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[test]
fn a_configured_origin_gets_its_preflight_answered_and_its_answers_marked() {
    let viewer = "http://localhost:5173";
    let s = served(Some(
        BrowserPolicy::new(HARNESS_URL)
            .allow_origins([viewer])
            .unwrap(),
    ));
    for path in ["/agui", "/a2a", "/runs"] {
        let answer = http(
            s.addr,
            "OPTIONS",
            path,
            &[
                ("Origin", viewer),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization,content-type",
                ),
            ],
            "",
        );
        assert_eq!(answer.status, 204, "{path}");
        assert_eq!(answer.header("access-control-allow-origin"), Some(viewer));
        let methods = answer.header("access-control-allow-methods").unwrap();
        assert!(
            methods.contains("POST") && methods.contains("GET"),
            "{methods}"
        );
        let allowed = answer
            .header("access-control-allow-headers")
            .unwrap()
            .to_ascii_lowercase();
        for h in ["authorization", "content-type", "a2a-version"] {
            assert!(allowed.contains(h), "{h} in {allowed}");
        }
        assert!(answer.header("vary").is_some_and(|v| v.contains("Origin")));
    }
    // A preflight from another origin is refused.
    let foreign = http(
        s.addr,
        "OPTIONS",
        "/agui",
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    );
    assert_eq!(foreign.status, 403);
    assert!(foreign.header("access-control-allow-origin").is_none());
    // The real request: answered, and marked for the browser to hand over.
    let id = run_as(s.addr, "alice-token");
    let answer = http(
        s.addr,
        "GET",
        &format!("/runs/{id}"),
        &[("Origin", viewer), ("Authorization", "Bearer alice-token")],
        "",
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), Some(viewer));
    assert!(
        answer
            .header("access-control-expose-headers")
            .is_some_and(|h| h.contains("Link"))
    );
    // An error answer is marked too, so the page can read why.
    let refused = http(s.addr, "GET", "/runs", &[("Origin", viewer)], "");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("access-control-allow-origin"), Some(viewer));
}

/// An agent server (`ddwire agent`) refuses what a page could send without a preflight and any
/// foreign `Origin`, but answers any `Host`: the harness may know it by a name of its own
/// configuration.
#[test]
fn an_agent_server_refuses_text_plain_and_foreign_origins_but_answers_any_host() {
    let agent = ddwire::agent::server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let addr: SocketAddr = agent
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": new_uuid7(), "role": "user",
                    "parts": [{"kind": "data", "data": request("hello.world", message("hi"))}]}}})
    .to_string();
    for path in ["/a2a", "/"] {
        let plain = http(addr, "POST", path, &[("Content-Type", "text/plain")], &body);
        assert_eq!(plain.status, 415, "{path}: {}", plain.body);
        let untyped = http(addr, "POST", path, &[], &body);
        assert_eq!(untyped.status, 415, "{path}");
        let foreign = http(
            addr,
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("Origin", "https://evil.example"),
            ],
            &body,
        );
        assert_eq!(foreign.status, 403, "{path}");
    }
    let answered = http(
        addr,
        "POST",
        "/a2a",
        &[
            ("Content-Type", "application/json"),
            ("Host", "agents.internal.example:9001"),
        ],
        &body,
    );
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.json()["result"]["status"]["state"], "completed");
}

/// A2A 1.0 §3.4.3: a client may start a new task in a context it already has by sending the
/// `contextId` without a `taskId`. The harness's context is the contract's conversation: the
/// first task starts one under its own id, and the second turn joins it, so the agent is given
/// the same conversation_id both times, and the conversation lists both. Another principal's
/// context is refused.
#[test]
fn a_second_turn_naming_the_first_tasks_context_joins_its_conversation_in_both_bindings() {
    let s = served(None);
    for (version, send, shape) in [
        (
            None,
            "message/send",
            json!({"kind": "message", "role": "user", "parts": []}),
        ),
        (
            Some("1.0"),
            "SendMessage",
            json!({"role": "ROLE_USER", "parts": []}),
        ),
    ] {
        let turn = |token: &str, context: Option<&str>| {
            let mut m = shape.clone();
            m["messageId"] = json!(new_uuid7());
            let part = match version {
                None => json!({"kind": "data", "data": request("hello.world", message("hi"))}),
                Some(_) => json!({"data": request("hello.world", message("hi"))}),
            };
            m["parts"] = json!([part]);
            if let Some(c) = context {
                m["contextId"] = json!(c);
            }
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": send, "params": {"message": m}});
            let auth = bearer(token);
            let mut headers = vec![
                ("Content-Type", "application/json"),
                ("Authorization", auth.as_str()),
            ];
            if let Some(v) = version {
                headers.push(("A2A-Version", v));
            }
            let reply = http(s.addr, "POST", "/a2a", &headers, &body.to_string()).json();
            if version.is_some() {
                let mut r = reply.clone();
                if let Some(task) = reply["result"].get("task") {
                    r["result"] = task.clone();
                }
                r
            } else {
                reply
            }
        };
        let first = turn("alice-token", None);
        let context = first["result"]["contextId"].as_str().unwrap().to_string();
        assert_eq!(first["result"]["id"], context.as_str(), "{first}");
        let second = turn("alice-token", Some(&context));
        assert_eq!(second["result"]["contextId"], context.as_str(), "{second}");
        assert_ne!(second["result"]["id"], first["result"]["id"]);
        let states: Vec<&Value> = [&first, &second]
            .iter()
            .map(|r| &r["result"]["status"]["state"])
            .collect();
        assert!(
            states
                .iter()
                .all(|s| s.as_str().unwrap().to_lowercase().contains("completed")),
            "{states:?}"
        );
        // Both runs are one conversation, the agent given its id both times.
        let runs = get(
            s.addr,
            &format!("/conversations/{context}"),
            Some("alice-token"),
        );
        assert_eq!(runs.status, 200, "{}", runs.body);
        let ids: Vec<String> = runs.json()["runs"]
            .as_array()
            .unwrap_or_else(|| panic!("{}", runs.body))
            .iter()
            .map(|r| r["invocation_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 2, "{}", runs.body);
        for id in &ids {
            let envelope = get(s.addr, &format!("/runs/{id}"), Some("alice-token")).json();
            assert_eq!(
                envelope["envelope"]["conversation_id"]
                    .as_str()
                    .or(envelope["conversation_id"].as_str()),
                Some(context.as_str()),
                "{envelope}"
            );
        }
        // Bob cannot start a task in Alice's context.
        let theirs = turn("bob-token", Some(&context));
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        assert!(
            theirs["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no context"),
            "{theirs}"
        );
    }
}
