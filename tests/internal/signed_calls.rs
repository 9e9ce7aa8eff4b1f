//! Signed calls between the harness and its agents (HMAC-SHA256, `vendor-notes/hmac-signing.md`):
//! over the in-memory wire, over loopback TCP, and between ddwire processes. A keyed agent
//! answers only calls the harness signed with its key; the harness verifies delegation
//! callbacks the same way and binds each grant to its parent invocation; a replayed, altered,
//! stale or unsigned request is refused with HTTP 401 and a JSON-RPC error saying why.

use super::common;

use common::*;
use ddwire::agent::builtin::{Director, Hello};
use ddwire::agent::delegate::Delegate;
use ddwire::agent::server as agent_server;
use ddwire::agent::{Agent, AgentError};
use ddwire::contract::{GroundingMode, OutcomeStatus};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness, random_key};
use ddwire::ids::new_uuid7;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::endpoint::SIGNATURE_REFUSED;
use ddwire::wire::a2a::model::{Task, TaskState};
use ddwire::wire::a2a::{Binding, meta};
use ddwire::wire::http::client::{ClientRequest, ClientResponse, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use ddwire::wire::sign::{self, Direction, Key, Signable, Signer};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// --- Helpers ----------------------------------------------------------------------------------

/// A JSON-RPC `message/send` (A2A v0.3) body carrying `doc`, with `metadata`, written out by
/// hand as the v0.3 specification spells it.
fn send_body(doc: Value, metadata: Map<String, Value>) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": new_uuid7(),
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": new_uuid7(),
                "role": "user",
                "parts": [{"kind": "data", "data": doc}],
                "metadata": metadata,
            },
            "configuration": {"blocking": true, "acceptedOutputModes": ["application/json"]},
        },
    })
    .to_string()
    .into_bytes()
}

/// POST `body` to `url` with extra header fields.
fn post(http: &HttpClient, url: &str, body: &[u8], headers: &[(&str, String)]) -> ClientResponse {
    let mut request = ClientRequest::post_json(url, body.to_vec(), T);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    http.send(request).expect("the server answers")
}

/// The signature header fields of `signature`.
fn fields(signature: &sign::Signature) -> Vec<(&'static str, String)> {
    signature.headers().to_vec()
}

/// Sign a POST of `body` to `url` with `key` in `direction`.
fn signed(key: &Key, direction: Direction, url: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    let signature = Signer::new(key.clone(), direction)
        .sign_url("POST", url, body)
        .expect("a valid request signs");
    fields(&signature)
}

/// The JSON-RPC error of a refused signature: HTTP 401, `WWW-Authenticate`, code -32040 and
/// `data.reason`. Returns (reason, message).
fn refusal(response: &ClientResponse) -> (String, String) {
    assert_eq!(
        response.status,
        401,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(
        response.header("www-authenticate"),
        Some("DD-HMAC-SHA256-V1")
    );
    let body: Value = serde_json::from_slice(&response.body).expect("a JSON-RPC body");
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], SIGNATURE_REFUSED);
    (
        body["error"]["data"]["reason"]
            .as_str()
            .expect("a reason")
            .to_string(),
        body["error"]["message"]
            .as_str()
            .expect("a message")
            .to_string(),
    )
}

/// The task in a 200 JSON-RPC `message/send` reply.
fn task_of(response: &ClientResponse) -> Task {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let body: Value = serde_json::from_slice(&response.body).expect("JSON");
    Task::from_json(body["result"].clone(), Binding::V03).expect("a v0.3 task")
}

fn hello_request() -> Value {
    request("hello.world", message("hi"))
}

// --- In memory: the harness signs, agents verify ---------------------------------------------

#[test]
fn a_signed_harness_calls_its_keyed_agents_and_they_answer() {
    let th = TestHarness::signed(vec![Arc::new(Hello::new())]);
    assert!(
        th.conductor()
            .registry
            .get("hello.world")
            .unwrap()
            .key
            .is_some()
    );
    let run = invoke(&th, hello_request());
    assert_eq!(
        run.envelope.outcome.status,
        OutcomeStatus::Succeeded,
        "{:?}",
        run.envelope.outcome
    );
    assert!(run.report.passed);
}

#[test]
fn a_keyed_agent_refuses_an_unsigned_call_with_401_but_serves_its_card() {
    let net = MemoryNet::new();
    let url = agent_server::serve_in_memory_signed(
        &net,
        Arc::new(Hello::new()),
        &random_key("hello.world"),
    )
    .unwrap();
    let http = HttpClient::memory(net);
    let body = send_body(hello_request(), Map::new());
    let (reason, message) = refusal(&post(&http, &format!("{url}/a2a"), &body, &[]));
    assert_eq!(reason, "missing");
    assert!(
        message.starts_with("the request is not signed: the DD-Signature header is missing"),
        "{message}"
    );
    // The card is public: read without a signature, by the A2A client as by anyone.
    let card = A2aClient::new(http).fetch_card(&url, T).unwrap();
    assert_eq!(card["name"], "hello.world");
}

#[test]
fn a_harness_without_the_agents_key_gets_a_failed_envelope_naming_the_signature() {
    let net = MemoryNet::new();
    let url = agent_server::serve_in_memory_signed(
        &net,
        Arc::new(Hello::new()),
        &random_key("hello.world"),
    )
    .unwrap();
    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(Hello::new())];
    let th = harness_on(
        net,
        &[url],
        &permissive_profile(&agents),
        Some(ddwire::harness::identity::Authenticator::Operator(
            ddwire::harness::testkit::test_principal(),
        )),
        T,
    );
    let run = invoke(&th, hello_request());
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
    let detail = run.envelope.problem.unwrap().detail.unwrap();
    assert!(
        detail.contains("JSON-RPC error -32040: the request is not signed"),
        "{detail}"
    );
}

#[test]
fn a_call_signed_with_another_key_is_refused_by_the_agent() {
    let net = MemoryNet::new();
    let url = agent_server::serve_in_memory_signed(
        &net,
        Arc::new(Hello::new()),
        &random_key("hello.world"),
    )
    .unwrap();
    let http = HttpClient::memory(net);
    let endpoint = format!("{url}/a2a");
    let body = send_body(hello_request(), Map::new());
    let headers = signed(
        &random_key("hello.world"),
        Direction::ToAgent,
        &endpoint,
        &body,
    );
    let (reason, _) = refusal(&post(&http, &endpoint, &body, &headers));
    assert_eq!(reason, "bad-signature");
    let headers = signed(
        &random_key("someone.else"),
        Direction::ToAgent,
        &endpoint,
        &body,
    );
    let (reason, message) = refusal(&post(&http, &endpoint, &body, &headers));
    assert_eq!(reason, "unknown-key", "{message}");
}

// --- In memory: delegation callbacks ----------------------------------------------------------

/// What a delegation agent's probes got back: the task's state and its failure detail.
type Probes = Arc<Mutex<Vec<(String, TaskState, String)>>>;

/// Send `doc` to the harness as a callback under `delegate`'s grant, through `client`, naming
/// `parent` as the invocation the grant was issued for.
fn callback(
    client: &A2aClient,
    delegate: &Delegate,
    parent: Option<&str>,
    doc: Value,
) -> Result<Task, ddwire::Error> {
    let mut metadata = Map::new();
    metadata.insert(meta::DELEGATION_TOKEN.into(), json!(delegate.token));
    if let Some(parent) = parent {
        metadata.insert(meta::PARENT_INVOCATION_ID.into(), json!(parent));
    }
    let card = client.fetch_card(&delegate.url, T)?;
    Ok(client.send_for_task(
        &Target::from_card(&card)?,
        a2a_message(vec![doc], Some(metadata)),
        &[],
        T,
    )?)
}

fn record_probe(probes: &Probes, name: &str, outcome: Result<Task, ddwire::Error>) {
    let entry = match outcome {
        Ok(task) => {
            let detail = task.failure_detail().unwrap_or_default();
            (name.to_string(), task.status.state, detail)
        }
        Err(e) => (name.to_string(), TaskState::Unknown, e.to_string()),
    };
    probes.lock().unwrap().push(entry);
}

#[test]
fn a_keyed_agents_callback_must_be_signed_by_it_and_name_its_parent() {
    let probes: Probes = Arc::default();
    let other_key: Arc<Mutex<Option<Key>>> = Arc::default();
    let (p, k) = (Arc::clone(&probes), Arc::clone(&other_key));
    let prober = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |request, ctx| {
            let delegate = ctx.delegate.clone().expect("a grant");
            let parent = delegate.parent_invocation_id.clone();
            assert_eq!(parent.as_deref(), Some(request.invocation_id.as_str()));
            let unsigned = A2aClient::new(delegate.client.http.clone());
            let other = k.lock().unwrap().clone().expect("the other agent's key");
            let signed_by_other = delegate
                .client
                .signed(Signer::new(other, Direction::ToHarness));
            let doc = || request_doc("fake.none");
            record_probe(
                &p,
                "unsigned",
                callback(&unsigned, &delegate, parent.as_deref(), doc()),
            );
            record_probe(
                &p,
                "other key",
                callback(&signed_by_other, &delegate, parent.as_deref(), doc()),
            );
            record_probe(
                &p,
                "other parent",
                callback(&delegate.client, &delegate, Some(&new_uuid7()), doc()),
            );
            record_probe(
                &p,
                "signed",
                callback(&delegate.client, &delegate, parent.as_deref(), doc()),
            );
            Ok(abstain("Probed the harness."))
        }),
    );
    let th = TestHarness::signed(vec![
        Arc::new(prober),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]);
    *other_key.lock().unwrap() = th
        .conductor()
        .registry
        .get("fake.none")
        .unwrap()
        .key
        .clone();
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;

    let probes = probes.lock().unwrap().clone();
    let [unsigned, other_key, other_parent, good] = probes.as_slice() else {
        panic!("four probes: {probes:?}")
    };
    assert_eq!(unsigned.1, TaskState::Failed, "{unsigned:?}");
    assert!(
        unsigned
            .2
            .contains("fake.delegation shares a key with the harness, so its delegation callbacks must be signed"),
        "{unsigned:?}"
    );
    assert_eq!(other_key.1, TaskState::Failed, "{other_key:?}");
    assert!(
        other_key.2.contains(
            "signed with the key of fake.none, but the grant was issued to fake.delegation"
        ),
        "{other_key:?}"
    );
    assert_eq!(other_parent.1, TaskState::Failed, "{other_parent:?}");
    assert!(
        other_parent
            .2
            .contains("the delegation token was not issued for invocation"),
        "{other_parent:?}"
    );
    assert_eq!(good.1, TaskState::Completed, "{good:?}");
    // Only the signed callback naming its own parent ran a child.
    assert_eq!(parent.delegations.len(), 1, "{:?}", parent.delegations);
    assert_eq!(index_ids(&th.runs).len(), 2);
    assert_eq!(th.conductor().live_grants(), 0);
}

fn request_doc(agent_id: &str) -> Value {
    request(agent_id, record())
}

#[test]
fn a_signed_delegation_runs_the_child_and_both_lint_clean() {
    let th = TestHarness::signed(vec![Arc::new(Director::new()), Arc::new(Hello::new())]);
    let run = invoke(&th, request("director.route", message("hello there")));
    assert_eq!(
        run.envelope.outcome.status,
        OutcomeStatus::Succeeded,
        "{:?}",
        run.envelope
    );
    assert_eq!(run.envelope.delegations.len(), 1);
    assert!(run.report.passed, "{:?}", run.report.violations);
}

/// A signed request as sent: its body, its signature fields and the key that signed it.
type Captured = (Vec<u8>, Vec<(&'static str, String)>, Key);

/// A callback captured on the wire: replayed as it was, it is refused by the nonce cache; signed
/// again with a fresh nonce after the parent returned, its grant has expired.
#[test]
fn a_replayed_callback_is_refused_and_a_resigned_one_finds_its_grant_expired() {
    let captured: Arc<Mutex<Option<Captured>>> = Arc::default();
    let keep = Arc::clone(&captured);
    let agent = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |request, ctx| {
            let delegate = ctx.delegate.clone().expect("a grant");
            let key = delegate
                .client
                .signer
                .clone()
                .expect("a keyed agent signs")
                .key;
            let mut metadata = Map::new();
            metadata.insert(meta::DELEGATION_TOKEN.into(), json!(delegate.token));
            metadata.insert(
                meta::PARENT_INVOCATION_ID.into(),
                json!(request.invocation_id),
            );
            let body = send_body(request_doc("fake.none"), metadata);
            let url = format!("{}/a2a", delegate.url);
            let headers = signed(&key, Direction::ToHarness, &url, &body);
            let task = task_of(&post(&delegate.client.http, &url, &body, &headers));
            if task.status.state != TaskState::Completed {
                return Err(AgentError::new(
                    "Probe",
                    format!("{:?}", task.failure_detail()),
                ));
            }
            *keep.lock().unwrap() = Some((body, headers, key));
            Ok(abstain("Delegated once."))
        }),
    );
    let th = TestHarness::signed(vec![
        Arc::new(agent),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]);
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(
        parent.outcome.status,
        OutcomeStatus::Abstained,
        "{:?}",
        parent.outcome
    );
    assert_eq!(index_ids(&th.runs).len(), 2);

    let (body, headers, key) = captured.lock().unwrap().clone().expect("captured");
    let http = &th.client.http;
    let url = format!("{HARNESS_URL}/a2a");
    let (reason, message) = refusal(&post(http, &url, &body, &headers));
    assert_eq!(reason, "replayed", "{message}");

    let fresh = signed(&key, Direction::ToHarness, &url, &body);
    let task = task_of(&post(http, &url, &body, &fresh));
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        task.failure_detail()
            .unwrap()
            .contains("unknown or expired delegation token")
    );
    // Altered after signing: refused before anything runs.
    let mut altered = body.clone();
    altered.extend_from_slice(b" ");
    let (reason, _) = refusal(&post(http, &url, &altered, &fresh));
    assert_eq!(reason, "bad-signature");
    assert_eq!(index_ids(&th.runs).len(), 2, "nothing more ran");
}

#[test]
fn a_harness_refuses_a_signed_request_that_does_not_verify_but_takes_unsigned_callers() {
    let th = TestHarness::signed(vec![Arc::new(Hello::new())]);
    let url = format!("{HARNESS_URL}/a2a");
    let body = send_body(hello_request(), Map::new());
    // Signed the other way (as the harness signs its calls to agents): refused.
    let key = th
        .conductor()
        .registry
        .get("hello.world")
        .unwrap()
        .key
        .clone()
        .unwrap();
    let (reason, _) = refusal(&post(
        &th.client.http,
        &url,
        &body,
        &signed(&key, Direction::ToAgent, &url, &body),
    ));
    assert_eq!(reason, "bad-signature");
    // An outside caller sends no signature and is authenticated as before.
    let task = task_of(&post(&th.client.http, &url, &body, &[]));
    assert_eq!(task.status.state, TaskState::Completed);
}

// --- Loopback TCP: one agent server, signed by hand -------------------------------------------

struct Loopback {
    server: ddwire::wire::http::server::Server,
    key: Key,
    http: HttpClient,
}

impl Loopback {
    fn start() -> Loopback {
        let key = random_key("hello.world");
        let server = agent_server::serve_signed(
            Arc::new(Hello::new()),
            "127.0.0.1:0",
            None,
            &key,
            Duration::from_secs(300),
        )
        .expect("a keyed agent serves on loopback");
        Loopback {
            server,
            key,
            http: HttpClient::tcp(),
        }
    }

    fn url(&self) -> String {
        format!("{}/a2a", self.server.base_url())
    }
}

#[test]
fn over_loopback_a_signed_call_is_answered_once_and_its_replay_refused() {
    let agent = Loopback::start();
    let body = send_body(hello_request(), Map::new());
    let headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    let task = task_of(&post(&agent.http, &agent.url(), &body, &headers));
    assert_eq!(task.status.state, TaskState::Completed);
    let (reason, message) = refusal(&post(&agent.http, &agent.url(), &body, &headers));
    assert_eq!(reason, "replayed");
    assert!(message.contains("replayed request is refused"), "{message}");
}

/// A verifier keeps its nonces in memory; so that a restart does not reopen the replay window,
/// a request signed before the verifier started is refused by its time. (The target, not the
/// host, is signed, so the restarted agent may listen elsewhere.)
#[test]
fn a_call_captured_before_the_agent_restarted_is_refused_after_the_restart() {
    let key = random_key("hello.world");
    let serve = || {
        agent_server::serve_signed(
            Arc::new(Hello::new()),
            "127.0.0.1:0",
            None,
            &key,
            Duration::from_secs(300),
        )
        .expect("a keyed agent serves on loopback")
    };
    let http = HttpClient::tcp();
    let first = serve();
    let url = format!("{}/a2a", first.base_url());
    let body = send_body(hello_request(), Map::new());
    let headers = signed(&key, Direction::ToAgent, &url, &body);
    let task = task_of(&post(&http, &url, &body, &headers));
    assert_eq!(task.status.state, TaskState::Completed);
    first.shutdown();
    // Timestamps are whole seconds: the restart comes in a later one than the signature.
    std::thread::sleep(Duration::from_millis(1100));
    let restarted = serve();
    let again = format!("{}/a2a", restarted.base_url());
    let (reason, message) = refusal(&post(&http, &again, &body, &headers));
    assert_eq!(reason, "stale", "{message}");
    assert!(message.contains("before this server started"), "{message}");
    // A call signed now is answered.
    let fresh = signed(&key, Direction::ToAgent, &again, &body);
    let task = task_of(&post(&http, &again, &body, &fresh));
    assert_eq!(task.status.state, TaskState::Completed);
}

#[test]
fn over_loopback_an_altered_body_target_or_method_is_refused() {
    let agent = Loopback::start();
    let body = send_body(hello_request(), Map::new());
    let base = agent.server.base_url();
    let other_body = send_body(request("hello.world", message("bye")), Map::new());
    // Signed for one body, sent with another.
    let headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    let (reason, _) = refusal(&post(&agent.http, &agent.url(), &other_body, &headers));
    assert_eq!(reason, "bad-signature");
    // Signed for `/a2a`, sent to `/` (also a JSON-RPC path).
    let headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    let (reason, _) = refusal(&post(&agent.http, &format!("{base}/"), &body, &headers));
    assert_eq!(reason, "bad-signature");
    // Signed for `/a2a`, sent with a query string.
    let headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    let with_query = format!("{}?A2A-Version=0.3", agent.url());
    let (reason, _) = refusal(&post(&agent.http, &with_query, &body, &headers));
    assert_eq!(reason, "bad-signature");
    // Signed as a PUT, sent as a POST.
    let signature = Signer::new(agent.key.clone(), Direction::ToAgent)
        .sign(&Signable {
            method: "PUT",
            target: "/a2a",
            body: &body,
        })
        .unwrap();
    let (reason, _) = refusal(&post(&agent.http, &agent.url(), &body, &fields(&signature)));
    assert_eq!(reason, "bad-signature");
    // The genuine request, never accepted above, still goes through.
    let headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    assert_eq!(
        task_of(&post(&agent.http, &agent.url(), &body, &headers))
            .status
            .state,
        TaskState::Completed
    );
}

#[test]
fn over_loopback_a_stale_or_future_timestamp_is_refused() {
    let agent = Loopback::start();
    let body = send_body(hello_request(), Map::new());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (i, timestamp) in [now - 301 - 60, now + 301 + 60].into_iter().enumerate() {
        let signature = sign::sign_at(
            &agent.key,
            Direction::ToAgent,
            &Signable {
                method: "POST",
                target: "/a2a",
                body: &body,
            },
            timestamp,
            &format!("stale-probe-nonce-{i}"),
        )
        .unwrap();
        let (reason, message) =
            refusal(&post(&agent.http, &agent.url(), &body, &fields(&signature)));
        assert_eq!(reason, "stale", "{message}");
        assert!(message.contains("the replay window is ±300 s"), "{message}");
    }
}

#[test]
fn over_loopback_an_unsigned_call_is_refused_and_the_card_is_public() {
    let agent = Loopback::start();
    let body = send_body(hello_request(), Map::new());
    let (reason, _) = refusal(&post(&agent.http, &agent.url(), &body, &[]));
    assert_eq!(reason, "missing");
    // A half-signed request names the header it lacks.
    let mut headers = signed(&agent.key, Direction::ToAgent, &agent.url(), &body);
    headers.retain(|(name, _)| *name != sign::NONCE_HEADER);
    let (reason, message) = refusal(&post(&agent.http, &agent.url(), &body, &headers));
    assert_eq!(reason, "missing");
    assert!(message.contains("DD-Nonce"), "{message}");
    let card = A2aClient::new(agent.http.clone())
        .fetch_card(&agent.server.base_url(), T)
        .unwrap();
    assert_eq!(card["name"], "hello.world");
}

// --- Between ddwire processes -----------------------------------------------------------------

mod processes {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    /// A running `ddwire` process, killed when dropped.
    struct Process(Child);

    impl Drop for Process {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn ddwire() -> Command {
        let mut c = Command::new(crate::internal_tests::ddwire_exe());
        for var in [
            "DD_AGENTS_CONFIG",
            "DD_PROFILE",
            "DD_RUNS_DIR",
            "DD_HARNESS_URL",
        ] {
            c.env_remove(var);
        }
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    }

    /// Start `ddwire args…` and read its stderr until a line holds `marker` followed by
    /// `http://ADDR`; returns the process and `http://ADDR`.
    fn start(args: &[&str], marker: &str) -> (Process, String) {
        let mut child = ddwire().args(args).spawn().expect("ddwire starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut process = Process(child);
        let (tx, rx) = crossbeam_channel::unbounded::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while let Ok(line) = rx.recv_deadline(deadline.max(std::time::Instant::now())) {
            if let Some(rest) = line.split_once(marker).map(|(_, rest)| rest)
                && let Some(url) = rest.split_whitespace().next()
            {
                return (process, url.to_string());
            }
            seen.push(line);
        }
        let status = process.0.try_wait().ok().flatten();
        panic!("ddwire {args:?} did not report its address ({status:?}): {seen:?}");
    }

    fn key_file(dir: &Path, name: &str, mode: u32) -> String {
        let path = dir.join(name);
        // 64 hex digits, unique per test (the tests need a well-formed key, not a secret one).
        let text =
            format!("{}{}", ddwire::ids::new_uuid7(), ddwire::ids::new_uuid7()).replace('-', "");
        std::fs::write(&path, format!("{text}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = mode;
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn signed_calls_between_ddwire_processes_run_an_agent_and_a_delegation() {
        let dir = TempDir::new("signed-processes");
        let hello_key = key_file(dir.path(), "hello.key", 0o600);
        let director_key = key_file(dir.path(), "director.key", 0o600);
        let (_hello, hello_url) = start(
            &["agent", "hello", "--port", "0", "--key-file", &hello_key],
            "listening on ",
        );
        let (_director, director_url) = start(
            &[
                "agent",
                "director",
                "--port",
                "0",
                "--key-file",
                &director_key,
            ],
            "listening on ",
        );
        // Relative key files are read from the config's folder.
        let config = dir.path().join("agents.json");
        std::fs::write(
            &config,
            json!({"agents": [
                {"url": hello_url, "key_file": "hello.key", "timeout_s": 30},
                {"url": director_url, "key_file": "director.key", "timeout_s": 30},
            ]})
            .to_string(),
        )
        .unwrap();
        let runs = dir.path().join("runs");
        let (_harness, harness_url) = start(
            &[
                "serve",
                "--port",
                "0",
                "--agents",
                config.to_str().unwrap(),
                "--runs",
                runs.to_str().unwrap(),
                "--acting-for-id",
                "https://orcid.org/0000-0002-1825-0097",
                "--acting-for-name",
                "Josiah Carberry",
            ],
            "harness on ",
        );

        // Three debug-built processes, a delegation and its signed callback: on a loaded
        // 2-core machine one run has taken more than the 10 s other tests allow a call (it
        // failed once as "the harness answers"). The agents' own timeout is 30 s; allow twice
        // that, so only a real hang fails.
        let patient = Duration::from_secs(60);
        let client = A2aClient::default();
        let target = Target::from_card(&client.fetch_card(&harness_url, patient).unwrap()).unwrap();
        let ask = |doc: Value| {
            let task = client
                .send_for_task(&target, a2a_message(vec![doc], None), &[], patient)
                .expect("the harness answers");
            envelope_of(&task)
        };
        let hello = ask(hello_request());
        assert_eq!(hello["outcome"]["status"], "succeeded", "{hello}");
        let routed = ask(request("director.route", message("hello there")));
        assert_eq!(routed["outcome"]["status"], "succeeded", "{routed}");
        assert_eq!(routed["delegations"].as_array().unwrap().len(), 1);

        // The agent itself answers no unsigned caller.
        let body = send_body(hello_request(), Map::new());
        let (reason, _) = refusal(&post(
            &HttpClient::tcp(),
            &format!("{hello_url}/a2a"),
            &body,
            &[],
        ));
        assert_eq!(reason, "missing");
    }

    #[test]
    fn a_key_file_others_can_read_stops_the_agent_from_starting() {
        let dir = TempDir::new("signed-open-key");
        let open = key_file(dir.path(), "open.key", 0o644);
        let out = ddwire()
            .args(["agent", "hello", "--port", "0", "--key-file", &open])
            .output()
            .expect("ddwire runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if cfg!(unix) {
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(stderr.contains("chmod 600"), "{stderr}");
        }
        let missing = dir.path().join("missing.key");
        let out = ddwire()
            .args(["agent", "hello", "--port", "0", "--key-file"])
            .arg(&missing)
            .output()
            .expect("ddwire runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("cannot read key file"), "{stderr}");
    }
}
