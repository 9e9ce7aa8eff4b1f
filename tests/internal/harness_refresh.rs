//! The registry refreshes, over loopback TCP: an agent that comes up after the harness is
//! admitted (on the first invocation naming it, in the background, or on
//! `POST /agents/refresh`), a card that changed is checked again and the harness card rebuilt,
//! a card without the Data Director extension is refused with what to add, and `/healthz`
//! says whether the harness is ready.

use super::common;
use common::*;
use ddwire::agent::builtin::Hello;
use ddwire::agent::server as agent_server;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::{Authenticator, token_digest};
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{AgentEntry, Registry};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::test_principal;
use ddwire::wire::a2a::card::EXTENSION_URI;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::TaskState;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::server::{self as http_server, Server};
use ddwire::wire::http::{Limits, Request, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

struct Served {
    harness: Arc<Harness>,
    server: Server,
    runs: TempDir,
}

impl Served {
    fn url(&self) -> String {
        self.server.base_url()
    }
}

/// A harness on loopback over the agents at `urls`, none of which need be up yet.
fn harness_over(urls: &[String], authenticator: Authenticator) -> Served {
    let entries: Vec<AgentEntry> = urls
        .iter()
        .map(|url| AgentEntry {
            url: url.clone(),
            name: None,
            timeout: Some(T),
            key_file: None,
            tls_client: None,
        })
        .collect();
    let client = A2aClient::default();
    let registry = Registry::from_config(&client, &entries).unwrap();
    let runs = TempDir::new("refresh");
    let profile = permissive_profile(&[Arc::new(Hello::new())]);
    let conductor = Conductor::new(
        registry,
        Profile::from_bytes(profile.as_bytes(), "profile.json").unwrap(),
        RunStore::open(runs.path().join("runs")).unwrap(),
        client,
    );
    let bound = http_server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let public = bound.default_public_url();
    let harness = Arc::new(
        Harness::new(conductor, Some(authenticator), &public)
            .with_open_connections(bound.open_connections()),
    );
    let server = bound
        .serve(harness_server::handler(Arc::clone(&harness)))
        .unwrap();
    Served {
        harness,
        server,
        runs,
    }
}

fn operator() -> Authenticator {
    Authenticator::Operator(test_principal())
}

fn http(method: &str, url: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = if method == "POST" {
        ClientRequest::post_json(url, b"{}".to_vec(), T)
    } else {
        ClientRequest::get(url, T)
    };
    for (k, v) in headers {
        request = request.header(k, v);
    }
    let r = HttpClient::tcp().send(request).expect("the server answers");
    let text = String::from_utf8(r.body).unwrap();
    (
        r.status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn invoke_hello(served: &Served) -> ddwire::wire::a2a::model::Task {
    let client = A2aClient::default();
    let card = client.fetch_card(&served.url(), T).unwrap();
    let target = Target::from_card(&card).unwrap();
    let doc = request("hello.world", message("hi"));
    client
        .send_for_task(&target, a2a_message(vec![doc], None), &[], T)
        .expect("the harness answers with a task")
}

#[test]
fn an_agent_started_after_the_harness_is_admitted_by_the_first_invocation_that_names_it() {
    let port = free_port();
    let agent_url = format!("http://127.0.0.1:{port}");
    let served = harness_over(std::slice::from_ref(&agent_url), operator());
    assert!(served.harness.conductor.registry.is_empty());
    let (status, health) = http("GET", &format!("{}/healthz", served.url()), &[]);
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["ready"], false);
    assert_eq!(health["agents"]["available"], 0);
    assert_eq!(health["agents"]["configured"], 1);
    assert!(
        health["reasons"][0]
            .as_str()
            .unwrap()
            .contains("no agent is available"),
        "{health}"
    );
    let (status, live) = http("GET", &format!("{}/livez", served.url()), &[]);
    assert_eq!((status, live), (200, json!({"status": "live"})));

    let _agent =
        agent_server::serve(Arc::new(Hello::new()), &format!("127.0.0.1:{port}"), None).unwrap();
    let task = invoke_hello(&served);
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let envelope = envelope_of(&task);
    assert_eq!(envelope["agent_id"], "hello.world");
    let id = envelope["invocation_id"].as_str().unwrap();
    assert_eq!(
        stored_envelope(&served.runs.path().join("runs"), id)["invocation_id"],
        id
    );
    // The harness card now offers the agent as a skill, and readiness follows.
    let card = served.harness.card();
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(skills.contains(&"hello.world"), "{skills:?}");
    let (status, health) = http("GET", &format!("{}/healthz", served.url()), &[]);
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "ready");
    assert_eq!(health["agents"]["available"], 1);
    assert_eq!(health["store"]["writable"], true);
    assert!(health["connections"].as_u64().unwrap() >= 1, "{health}");
}

#[test]
fn the_background_refresh_admits_an_agent_that_comes_up_later() {
    let port = free_port();
    let served = harness_over(&[format!("http://127.0.0.1:{port}")], operator());
    let registry = served.harness.conductor.registry.clone();
    registry.refresh_in_background();
    let _agent =
        agent_server::serve(Arc::new(Hello::new()), &format!("127.0.0.1:{port}"), None).unwrap();
    // Retries come after 1, 2, 4, 8 s...: the agent is admitted by the fourth at the latest.
    let deadline = Instant::now() + Duration::from_secs(40);
    while registry.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(registry.ids(), ["hello.world"]);
    assert!(registry.unavailable().is_empty());
}

/// Serves a card that a test can change, at the well-known path; the card's `url` sends
/// calls to a real agent elsewhere.
fn card_server(card: Arc<Mutex<Value>>) -> Server {
    http_server::serve(
        "127.0.0.1:0",
        Arc::new(move |request: Request| {
            if request.path.starts_with("/.well-known/") {
                Response::json(200, &card.lock().unwrap())
            } else {
                Response::error(404, "only a card here")
            }
        }),
        Limits::DEFAULT,
    )
    .unwrap()
}

#[test]
fn post_agents_refresh_checks_a_changed_card_again_and_rebuilds_the_harness_card() {
    let agent = agent_server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let real = A2aClient::default()
        .fetch_card(&agent.base_url(), T)
        .unwrap();
    let card = Arc::new(Mutex::new(real.clone()));
    let front = card_server(Arc::clone(&card));
    let served = harness_over(&[front.base_url()], operator());
    let manifest_version = |served: &Served| {
        served.harness.card()["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["params"].get("agents"))
            .and_then(|agents| agents[0]["version"].as_str().map(str::to_string))
    };
    let before = manifest_version(&served).expect("hello is in the manifest");

    // Unchanged: nothing to report.
    let refresh = format!("{}/agents/refresh", served.url());
    let (status, body) = http("POST", &refresh, &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["refreshed"]["changed"], json!([]));

    // A new version on the card: checked again, admitted, and the harness card follows.
    let bumped = format!("{before}.1");
    {
        let mut card = card.lock().unwrap();
        let extensions = card["capabilities"]["extensions"].as_array_mut().unwrap();
        let ours = extensions
            .iter_mut()
            .find(|e| e["uri"] == EXTENSION_URI)
            .unwrap();
        ours["params"]["version"] = json!(bumped);
    }
    let (status, body) = http("POST", &refresh, &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["refreshed"]["changed"],
        json!(["hello.world"]),
        "{body}"
    );
    assert_eq!(manifest_version(&served), Some(bumped));
    let task = invoke_hello(&served);
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");

    // The extension removed: the agent is no longer admitted, and the reason says what to add.
    card.lock().unwrap()["capabilities"]["extensions"] = json!([]);
    let (status, body) = http("POST", &refresh, &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["refreshed"]["removed"],
        json!(["hello.world"]),
        "{body}"
    );
    let reason = body["incompatible"][front.base_url()].as_str().unwrap();
    assert!(
        reason.starts_with("add the Data Director extension"),
        "{reason}"
    );
    assert_eq!(manifest_version(&served), None);
}

#[test]
fn agents_refresh_asks_for_the_credential_an_invocation_needs() {
    let served = harness_over(
        &[format!("http://127.0.0.1:{}", free_port())],
        Authenticator::Bearer(vec![ddwire::harness::identity::Token::new(
            token_digest("s3cret"),
            test_principal(),
        )]),
    );
    let refresh = format!("{}/agents/refresh", served.url());
    let (status, body) = http("POST", &refresh, &[]);
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Bearer"), "{body}");
    let (status, _) = http("POST", &refresh, &[("Authorization", "Bearer wrong")]);
    assert_eq!(status, 401);
    let (status, body) = http("POST", &refresh, &[("Authorization", "Bearer s3cret")]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["refreshed"]["unavailable"], 1);
}

/// Issue 13's dead end: a plain A2A agent (an a2a-sdk agent's card, no Data Director
/// extension) is refused, and the refusal says it is incompatible and what to add.
#[test]
fn a_plain_a2a_card_over_loopback_is_refused_as_incompatible_with_what_to_add() {
    let plain = json!({
        "name": "Currency Agent",
        "description": "Converts currencies",
        "url": "http://127.0.0.1:1/",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "convert", "name": "convert", "description": "x", "tags": []}],
    });
    let front = card_server(Arc::new(Mutex::new(plain)));
    let served = harness_over(&[front.base_url()], operator());
    let registry = &served.harness.conductor.registry;
    assert!(registry.is_empty());
    assert!(registry.unavailable().is_empty(), "{registry:?}");
    let reason = &registry.incompatible()[&front.base_url()];
    assert!(reason.contains(EXTENSION_URI), "{reason}");
    assert!(reason.contains("a2a-sdk"), "{reason}");

    let task = invoke_hello(&served);
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let shown = format!("{task:?}");
    assert!(
        shown.contains("incompatible: add the Data Director extension"),
        "{shown}"
    );
}

#[test]
fn healthz_is_503_when_the_run_store_cannot_be_written() {
    let agent = agent_server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let served = harness_over(&[agent.base_url()], operator());
    let (status, health) = http("GET", &format!("{}/healthz", served.url()), &[]);
    assert_eq!(status, 200, "{health}");
    // The store's control folder replaced by a file: nothing can be written there any more
    // (this works as root too, where permissions would not stop a write).
    let control = served.runs.path().join("runs").join(".ddwire");
    std::fs::rename(&control, served.runs.path().join("moved")).unwrap();
    std::fs::write(&control, b"not a folder").unwrap();
    let (status, health) = http("GET", &format!("{}/healthz", served.url()), &[]);
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["store"]["writable"], false);
    assert!(
        health["reasons"][0]
            .as_str()
            .unwrap()
            .contains("the run store cannot be written"),
        "{health}"
    );
}

#[test]
fn a_refresh_keeps_an_admitted_agent_whose_card_cannot_be_read_for_now() {
    let agent = agent_server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let served = harness_over(&[agent.base_url()], operator());
    let registry = &served.harness.conductor.registry;
    assert_eq!(registry.ids(), ["hello.world"]);
    agent.shutdown();
    // A brief outage does not unregister it: a call fails as a call to a down agent does.
    let refreshed = registry.refresh();
    assert!(refreshed.removed.is_empty(), "{refreshed:?}");
    assert_eq!(registry.ids(), ["hello.world"]);
    assert!(registry.unavailable().is_empty());
}

/// `POST /agents/refresh` and SIGHUP read the agents configuration file again: an agent added
/// to it is admitted, one removed from it is dropped, without a restart; a file that no longer
/// reads changes nothing.
#[test]
fn reloading_reads_the_agents_file_again_adding_and_dropping_agents() {
    let hello = agent_server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let echo = agent_server::serve(
        Arc::new(ddwire::agent::builtin::Echo::new()),
        "127.0.0.1:0",
        None,
    )
    .unwrap();
    let dir = TempDir::new("reload-agents");
    let file = dir.path().join("agents.json");
    let write = |urls: &[&str]| {
        let agents: Vec<Value> = urls.iter().map(|u| json!({"url": u})).collect();
        std::fs::write(&file, json!({ "agents": agents }).to_string()).unwrap();
    };
    write(&[&hello.base_url()]);
    let registry = Registry::from_config_file(&A2aClient::default(), &file).unwrap();
    assert_eq!(registry.ids(), ["hello.world"]);
    write(&[&hello.base_url(), &echo.base_url()]);
    let added = registry.reload().unwrap();
    assert_eq!(added.added, ["echo.wire"], "{added:?}");
    assert_eq!(registry.ids(), ["echo.wire", "hello.world"]);
    write(&[&echo.base_url()]);
    let removed = registry.reload().unwrap();
    assert_eq!(removed.removed, ["hello.world"], "{removed:?}");
    assert_eq!(registry.ids(), ["echo.wire"]);
    assert_eq!(registry.configured(), 1);
    std::fs::write(&file, "{ not json").unwrap();
    assert!(registry.reload().is_err());
    assert_eq!(
        registry.ids(),
        ["echo.wire"],
        "a broken file changes nothing"
    );
}
