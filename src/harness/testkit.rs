//! The test kit: a whole harness in memory, over real HTTP/1.1 bytes (the reference's
//! `workbench.testing`).
//!
//! Each agent is served with the same agent server it runs in production, on the in-memory
//! transport at `http://<agent_id>.agents.test`; the harness is served the same way at
//! [`HARNESS_URL`] and is its own delegation callback. Calls between them cross the real A2A
//! wire, with no socket.
//!
//! [`TestHarness::signed`] gives each agent a fresh random key shared with the harness, so
//! every call and every delegation callback is signed and verified
//! ([`crate::wire::sign`]); the keys are in the registry (`RemoteAgent::key`).

use super::conductor::{Conductor, Run};
use super::identity::Authenticator;
use super::policy::Profile;
use super::registry::{Registry, RemoteAgent};
use super::server::{self, Harness};
use super::store::RunStore;
use crate::agent::Agent;
use crate::agent::server::{serve_in_memory, serve_in_memory_signed};
use crate::contract::{InvocationRequest, Principal, PrincipalKind};
use crate::harness::Result;
use crate::wire::a2a::client::{A2aClient, DEFAULT_TIMEOUT};
use crate::wire::http::Limits;
use crate::wire::http::client::HttpClient;
use crate::wire::http::memory::MemoryNet;
use crate::wire::sign::Key;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where the in-memory harness is served.
pub(crate) const HARNESS_URL: &str = "http://harness.test";

/// The principal tests act for (the reference's `TEST_PRINCIPAL`).
pub(crate) fn test_principal() -> Principal {
    Principal::new(
        "https://orcid.org/0000-0002-1825-0097",
        "Josiah Carberry",
        PrincipalKind::Person,
    )
    .expect("a valid principal")
}

/// A harness in memory, with its agents, store and client.
pub struct TestHarness {
    /// The in-memory network the harness and its agents are served on.
    pub net: MemoryNet,
    /// The harness, as served at [`HARNESS_URL`].
    pub(crate) harness: Arc<Harness>,
    /// A client on the same network.
    pub client: A2aClient,
    /// The temporary run store (removed when the harness is dropped).
    pub(crate) runs: PathBuf,
}

impl TestHarness {
    /// A harness over `agents`, a profile that enables each with the class it declares, and a
    /// fresh run store in a temporary directory.
    pub fn new(agents: Vec<Arc<dyn Agent>>) -> TestHarness {
        let profile = permissive(&agents);
        TestHarness::with_profile(agents, &profile, Duration::from_secs(10))
    }

    /// [`TestHarness::new`], with every agent holding a fresh random key it shares with the
    /// harness: the agent server refuses unsigned calls, the harness signs every call, and
    /// requires each delegation callback to be signed by the agent that holds the grant.
    pub fn signed(agents: Vec<Arc<dyn Agent>>) -> TestHarness {
        let profile = permissive(&agents);
        TestHarness::build(agents, &profile, Duration::from_secs(10), true)
    }

    /// A harness over `agents` under the profile `profile_json`, each agent called with
    /// `timeout`.
    pub(crate) fn with_profile(
        agents: Vec<Arc<dyn Agent>>,
        profile_json: &str,
        timeout: Duration,
    ) -> TestHarness {
        TestHarness::build(agents, profile_json, timeout, false)
    }

    fn build(
        agents: Vec<Arc<dyn Agent>>,
        profile_json: &str,
        timeout: Duration,
        signed: bool,
    ) -> TestHarness {
        let net = MemoryNet::new();
        let client = A2aClient::new(HttpClient::memory(net.clone()));
        let mut registry = Registry::default();
        for agent in agents {
            let key = signed.then(|| random_key(&agent.spec().agent_id));
            let url = match &key {
                Some(key) => {
                    serve_in_memory_signed(&net, agent, key).expect("an agent id is a valid key id")
                }
                None => serve_in_memory(&net, agent),
            };
            let mut remote =
                RemoteAgent::from_url(&client, &url, timeout).expect("a served agent's card reads");
            if let Some(key) = &key {
                remote = remote.with_key(key).expect("an agent id is a valid key id");
            }
            registry.add(remote).expect("unique ids");
        }
        let runs =
            std::env::temp_dir().join(format!("ddwire-test-runs-{}", crate::ids::new_uuid7()));
        let store = RunStore::open(&runs).expect("a temporary run store opens");
        let profile = Profile::from_bytes(profile_json.as_bytes(), "test-profile.json")
            .expect("a valid test profile");
        let conductor = Conductor::new(registry, profile, store, client.clone());
        let harness = Arc::new(Harness::new(
            conductor,
            Some(Authenticator::Operator(test_principal())),
            HARNESS_URL,
        ));
        net.serve(
            "harness.test",
            server::handler(Arc::clone(&harness)),
            Limits::DEFAULT,
        );
        TestHarness {
            net,
            harness,
            client,
            runs,
        }
    }

    /// The conductor.
    pub(crate) fn conductor(&self) -> &Conductor {
        &self.harness.conductor
    }

    /// Run a request document through the conductor, acting for the test principal.
    pub fn invoke(&self, request: &Value) -> Result<Run> {
        let request = InvocationRequest::from_value(request)?;
        self.conductor().invoke(request, &test_principal())
    }

    /// Make every later call to `agent_id` panic in the calling thread, as a bug in the HTTP
    /// client or the reply's decoding would (`None` stops it). The conductor must turn such a
    /// panic into a failed, stored run and release every grant and id it held.
    #[cfg(test)]
    pub(crate) fn panic_in_calls_to(&self, agent_id: Option<&str>) {
        let host = agent_id.map(|id| format!("{id}.agents.test"));
        self.net.panic_on_calls_to(host.as_deref());
    }

    /// The harness as an A2A target.
    pub fn target(&self) -> crate::wire::a2a::client::Target {
        let card = self
            .client
            .fetch_card(HARNESS_URL, DEFAULT_TIMEOUT)
            .expect("the harness card reads");
        crate::wire::a2a::client::Target::from_card(&card)
            .expect("the harness card names an endpoint")
    }
}

/// A profile enabling each agent with the class it declares.
fn permissive(agents: &[Arc<dyn Agent>]) -> String {
    let mut profile =
        serde_json::json!({"profile_id": "test-permissive", "version": 1, "agents": {}});
    for a in agents {
        profile["agents"][&a.spec().agent_id] = Value::String(a.spec().action_class.clone());
    }
    profile.to_string()
}

/// A key under `id` with 32 random bytes as its secret (64 hex digits, as a key file holds).
pub(crate) fn random_key(id: &str) -> Key {
    let mut secret = [0u8; 32];
    crate::ids::secret_bytes(&mut secret);
    Key::new(id, crate::ids::hex(&secret).as_bytes()).expect("a valid key")
}

impl Drop for TestHarness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runs);
    }
}
