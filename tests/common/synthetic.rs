//! Synthetic run stores for the listing tests: index lines of the reference's shape, written
//! as a writer leaves them, and a harness serving a store read-only.

#![allow(dead_code)]

use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::Authenticator;
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::Registry;
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::{HARNESS_URL, test_principal};
use ddwire::ids::new_uuid7;
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::Limits;
use ddwire::wire::http::client::HttpClient;
use ddwire::wire::http::memory::MemoryNet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The time any one call may take.
pub const T: Duration = Duration::from_secs(30);
pub const AGENTS: [&str; 3] = ["hello", "echo.wire", "director"];
pub const STATUSES: [&str; 4] = ["succeeded", "failed", "abstained", "referred"];

pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ddwire-listing-{tag}-{}", new_uuid7()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The index line of run `i`: an envelope of the reference's shape, about 700 bytes.
pub fn line(i: usize, id: &str) -> String {
    let agent = AGENTS[i % 3];
    let status = STATUSES[i % 4];
    let (who, name) = if i.is_multiple_of(5) {
        ("https://orcid.org/0000-0001-5109-3700", "Ada Lovelace")
    } else {
        ("https://orcid.org/0000-0002-1825-0097", "Josiah Carberry")
    };
    let conversation = format!("019c0000-0000-7000-8000-{:012x}", i / 10);
    let (day, second) = (1 + i / 86_400, i % 86_400);
    let completed_at = format!(
        "2026-01-{day:02}T{:02}:{:02}:{:02}.000000Z",
        second / 3600,
        second / 60 % 60,
        second % 60
    );
    format!(
        concat!(
            r#"{{"acting_for":{{"assurance":"asserted","name":"{name}","principal_id":"{who}","principal_kind":"person"}},"#,
            r#""agent_id":"{agent}","agent_version":"0.1.0","completed_at":"{at}","contract_version":"0.7.0","#,
            r#""conversation_id":"{conv}","evidence":[],"grounding_mode":"none","invocation_id":"{id}","#,
            r#""outcome":{{"statement":"Run {i} of a long store.","status":"{status}"}},"#,
            r#""payload":{{"schema_class":"EchoReply","value":{{"n":{i},"text":"{pad}"}}}},"#,
            r#""policy_bundle_ref":"profile:listing@v1","policy_digest":"{zeros}","requires_human_review":true,"#,
            r#""telemetry":{{"energy_estimate_j":null,"energy_method":"not_measured","input_tokens":3,"output_tokens":5,"trace_id":"{trace:032x}"}}}}"#
        ),
        name = name,
        who = who,
        agent = agent,
        at = completed_at,
        conv = conversation,
        id = id,
        i = i,
        status = status,
        pad = "lorem ipsum ".repeat(3),
        zeros = "0".repeat(64),
        trace = i,
    )
}

/// A store of `n` runs (oldest first), written as a writer leaves it; with `dirs`, each run
/// has its directory too. Returns the ids, oldest first.
pub fn store_of(root: &Path, n: usize, dirs: bool) -> Vec<String> {
    std::fs::create_dir_all(root).unwrap();
    let mut index = BufWriter::new(std::fs::File::create(root.join("invocations.jsonl")).unwrap());
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = new_uuid7();
        let text = line(i, &id);
        writeln!(index, "{text}").unwrap();
        if dirs {
            std::fs::create_dir(root.join(&id)).unwrap();
            std::fs::write(root.join(&id).join("envelope.json"), &text).unwrap();
        }
        ids.push(id);
    }
    index.flush().unwrap();
    ids
}

/// A harness serving `runs` read-only on the in-memory transport.
pub fn harness(runs: &Path) -> (Arc<Harness>, MemoryNet, A2aClient) {
    let net = MemoryNet::new();
    let client = A2aClient::new(HttpClient::memory(net.clone()));
    let profile =
        Profile::from_bytes(br#"{"profile_id": "listing", "agents": {}}"#, "p.json").unwrap();
    let conductor = Conductor::new(
        Registry::default(),
        profile,
        RunStore::open_read_only(runs).unwrap(),
        client.clone(),
    );
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(test_principal())),
        HARNESS_URL,
    ));
    net.serve(
        "harness.test",
        harness_server::handler(Arc::clone(&harness)),
        Limits::DEFAULT,
    );
    (harness, net, client)
}
