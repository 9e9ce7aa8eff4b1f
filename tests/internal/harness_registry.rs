//! Agent discovery (the reference's `test_registry.py`): the agents configuration, agent cards
//! read over the wire, the manifest, and what is refused at registration. Spec invariant 14.

use super::common;

use common::*;
use ddwire::agent::Agent;
use ddwire::agent::builtin::{Echo, Hello, Stub};
use ddwire::contract::{CONTRACT_VERSION, GroundingMode, InvocationRequest};
use ddwire::harness::HarnessError;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{AgentEntry, Registry, load_config, parse_config};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::test_principal;
use ddwire::wire::a2a::card::EXTENSION_URI;
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::client::HttpClient;
use ddwire::wire::http::memory::MemoryNet;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

const IDS: [&str; 4] = ["echo.wire", "fake.none", "hello.world", "stub.abstain"];

fn agents() -> Vec<(&'static str, Arc<dyn Agent>)> {
    vec![
        ("hello.test", Arc::new(Hello::new())),
        ("stub.test", Arc::new(Stub::new())),
        ("echo.test", Arc::new(Echo::new())),
        (
            "fake.test",
            Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
        ),
    ]
}

/// Every agent served on one in-memory network, and a client on it.
/// Each served agent with its base URL.
type Served = Vec<(String, Arc<dyn Agent>)>;

fn served() -> (MemoryNet, A2aClient, Served) {
    let net = MemoryNet::new();
    let served = agents()
        .into_iter()
        .map(|(host, agent)| (serve_at(&net, host, Arc::clone(&agent)), agent))
        .collect();
    let client = A2aClient::new(HttpClient::memory(net.clone()));
    (net, client, served)
}

fn entries(urls: &[&str], extra: Value) -> Vec<AgentEntry> {
    let mut list: Vec<Value> = urls.iter().map(|u| json!({"url": u})).collect();
    if let Value::Array(more) = extra {
        list.extend(more);
    }
    parse_config(
        json!({ "agents": list }).to_string().as_bytes(),
        "agents.json",
    )
    .unwrap()
}

fn registry_of(extra: Value) -> (Registry, MemoryNet, Served) {
    let (net, client, served) = served();
    let urls: Vec<&str> = served.iter().map(|(u, _)| u.as_str()).collect();
    let registry = Registry::from_config(&client, &entries(&urls, extra)).unwrap();
    (registry, net, served)
}

/// One entry naming `name` at a hand-written peer serving `card`.
fn registry_of_card(name: &str, card: Value) -> Registry {
    let net = MemoryNet::new();
    let url = raw_peer(&net, "peer.test", card, |_| Value::Null);
    let client = A2aClient::new(HttpClient::memory(net));
    let entries = parse_config(
        json!({"agents": [{"name": name, "url": url}]})
            .to_string()
            .as_bytes(),
        "agents.json",
    )
    .unwrap();
    Registry::from_config(&client, &entries).unwrap()
}

fn ids(registry: &Registry) -> BTreeSet<String> {
    registry.ids().into_iter().collect()
}

fn expected_ids() -> BTreeSet<String> {
    IDS.iter().map(|s| s.to_string()).collect()
}

/// The configuration lists agents by URL only; the registry reads each card over A2A and
/// rebuilds the agent's spec from it.
#[test]
fn config_lists_agents_by_url_and_the_registry_reads_each_card() {
    let (_net, client, served) = served();
    let dir = TempDir::new("registry-config");
    let path = dir.path().join("agents.json");
    let list: Vec<Value> = served
        .iter()
        .map(|(url, _)| json!({"url": url, "timeout_s": 5}))
        .collect();
    std::fs::write(&path, json!({ "agents": list }).to_string()).unwrap();

    let config = load_config(&path).unwrap();
    assert_eq!(config.len(), 4);
    let registry = Registry::from_config(&client, &config).unwrap();
    assert_eq!(ids(&registry), expected_ids());
    assert!(registry.unavailable().is_empty() && registry.incompatible().is_empty());
    for (url, agent) in &served {
        let remote = registry.get(&agent.spec().agent_id).unwrap();
        assert_eq!(&remote.url, url);
        assert_eq!(remote.target.url, format!("{url}/a2a"));
        assert_eq!(remote.timeout, std::time::Duration::from_secs(5));
        assert_eq!(&remote.spec, agent.spec());
    }
}

/// The registry keeps the card exactly as the agent served it.
#[test]
fn from_url_keeps_the_raw_card_it_fetched() {
    let (registry, net, _) = registry_of(json!([]));
    let client = A2aClient::new(HttpClient::memory(net));
    let hello = registry.get("hello.world").unwrap();
    assert_eq!(
        hello.card,
        client.fetch_card("http://hello.test", T).unwrap()
    );
    assert_eq!(hello.card["name"], "hello.world");
}

/// The manifest rebuilt from the cards equals each agent's own description.
#[test]
fn manifest_rebuilt_from_cards_equals_each_agents_own_description() {
    let (registry, _net, served) = registry_of(json!([]));
    let manifest = registry.manifest();
    assert_eq!(manifest.len(), 4);
    for entry in &manifest {
        let id = entry["agent_id"].as_str().unwrap();
        let (_, agent) = served
            .iter()
            .find(|(_, a)| a.spec().agent_id == id)
            .unwrap();
        assert_eq!(entry, &agent.spec().describe());
        assert!(!entry["accepts"].as_array().unwrap().is_empty());
    }
    assert_eq!(registry.listing()["agents"], Value::Array(manifest));
}

/// An agent whose card cannot be read is listed as unavailable with the reason; the rest load.
#[test]
fn an_unreachable_agent_is_unavailable_and_the_rest_still_load() {
    let (registry, _net, _) = registry_of(json!([{"name": "r3", "url": "http://r3.test"}]));
    assert_eq!(ids(&registry), expected_ids());
    let reason = &registry.unavailable()["r3"];
    assert!(reason.contains("cannot read the agent card"), "{reason}");
    assert!(reason.contains("connection refused"), "{reason}");
    // Without a name, the URL labels it.
    let (registry, _net, _) = registry_of(json!([{"url": "http://r4.test"}]));
    assert!(registry.unavailable().contains_key("http://r4.test"));
}

/// Spec invariant 14: a card that does not declare the Data Director extension is rejected at
/// registration as incompatible, and the reason says what to add and where an example is.
#[test]
fn a_card_without_the_spec_extension_is_incompatible_and_the_reason_says_what_to_add() {
    let card = json!({"name": "someone-else", "url": "http://peer.test/a2a", "capabilities": {"extensions": []}});
    let registry = registry_of_card("foreign", card);
    assert!(registry.is_empty());
    assert!(registry.unavailable().is_empty());
    let reason = &registry.incompatible()["foreign"];
    assert!(
        reason.starts_with("add the Data Director extension"),
        "{reason}"
    );
    assert!(reason.contains(EXTENSION_URI), "{reason}");
    assert!(reason.contains("capabilities.extensions"), "{reason}");
    assert!(reason.contains("vendor-notes/a2a.md"), "{reason}");
    // A card that declares the extension under another URI is no better.
    let mut card = card_of(&scripted_spec(GroundingMode::None), "http://peer.test");
    card["capabilities"]["extensions"][0]["uri"] = json!("https://example.org/not-data-director");
    let registry = registry_of_card("renamed", card);
    assert!(registry.is_empty());
    assert!(registry.incompatible()["renamed"].contains(EXTENSION_URI));
}

/// A card naming a class it carries no schema for is rejected, and the reason names the class.
#[test]
fn a_card_naming_a_class_the_contract_lacks_is_rejected() {
    let mut card = card_of(&scripted_spec(GroundingMode::None), "http://peer.test");
    card["capabilities"]["extensions"][0]["params"]["accepts"] = json!(["Horoscope"]);
    let registry = registry_of_card("odd", card);
    assert!(registry.is_empty());
    assert!(
        registry.unavailable()["odd"].contains("Horoscope"),
        "{}",
        registry.unavailable()["odd"]
    );
}

/// A class schema that does not match the digest the card pins is refused.
#[test]
fn a_card_whose_class_schema_does_not_match_its_digest_is_rejected() {
    let mut card = card_of(&scripted_spec(GroundingMode::None), "http://peer.test");
    card["capabilities"]["extensions"][0]["params"]["schemas"]["ProbeRecord"]["json_schema"]["additionalProperties"] =
        json!(true);
    let registry = registry_of_card("altered", card);
    assert!(registry.is_empty());
    assert!(
        registry.unavailable()["altered"].contains("does not match its digest"),
        "{}",
        registry.unavailable()["altered"]
    );
}

/// A card built against another contract version is listed as incompatible, not unavailable,
/// and an unknown-agent error says so.
#[test]
fn a_card_built_against_another_contract_is_incompatible_not_unavailable() {
    let mut card = card_of(&scripted_spec(GroundingMode::None), "http://peer.test");
    card["capabilities"]["extensions"][0]["params"]["contract_version"] = json!("0.1.0");
    let registry = registry_of_card("old", card);
    assert!(registry.is_empty() && registry.unavailable().is_empty());
    let reason = &registry.incompatible()["old"];
    assert!(
        reason.contains("0.1.0") && reason.contains(CONTRACT_VERSION),
        "{reason}"
    );
    let runs = TempDir::new("registry-incompatible");
    let conductor = Conductor::new(
        registry,
        Profile::default_profile(),
        RunStore::open(runs.path()).unwrap(),
        A2aClient::default(),
    );
    let request = InvocationRequest::from_value(&request("fake.none", message("hi"))).unwrap();
    let err = conductor.invoke(request, &test_principal()).unwrap_err();
    assert!(matches!(err, HarnessError::UnknownAgent { .. }), "{err}");
    let unknown = err.to_string();
    assert!(unknown.contains("old incompatible: "), "{unknown}");
}

/// A configuration that is missing, not JSON, or lacks a `url` is a registry error.
#[test]
fn a_missing_or_malformed_config_is_a_registry_error() {
    let dir = TempDir::new("registry-bad-config");
    let err = load_config(&dir.path().join("absent.json")).unwrap_err();
    assert!(
        matches!(err, HarnessError::Config { .. }) && err.to_string().contains("not found"),
        "{err}"
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"agents": [{"name": "no-url"}]}"#).unwrap();
    let err = load_config(&bad).unwrap_err();
    assert!(err.to_string().contains("needs a `url`"), "{err}");
    std::fs::write(&bad, "agents:\n  - url: http://x\n").unwrap();
    assert!(matches!(
        load_config(&bad).unwrap_err(),
        HarnessError::Config { .. }
    ));
    std::fs::write(
        &bad,
        r#"{"agents": [{"url": "http://x", "timeout_s": -1}]}"#,
    )
    .unwrap();
    assert!(
        load_config(&bad)
            .unwrap_err()
            .to_string()
            .contains("timeout_s")
    );
}

/// Two agents with one id is a configuration error, not a silent override.
#[test]
fn duplicate_agent_id_is_a_registry_error() {
    let net = MemoryNet::new();
    let a = serve_at(&net, "a.test", Arc::new(Stub::new()));
    let b = serve_at(&net, "b.test", Arc::new(Stub::new()));
    let client = A2aClient::new(HttpClient::memory(net));
    let err = Registry::from_config(&client, &entries(&[&a, &b], json!([]))).unwrap_err();
    assert!(
        matches!(err, HarnessError::Config { .. }) && err.to_string().contains("two agents"),
        "{err}"
    );
}
