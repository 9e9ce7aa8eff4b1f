//! An agent of your own, on the ddwire library: `example.glossary` answers a `Message` by
//! looking its words up in a small glossary (a retrieval), composing a reply from the entry it
//! found (a chat), and citing that entry (a grounding reference and an evidence item). The
//! harness's grounding linter holds it to grounding mode `retrieval`: it may cite only what it
//! retrieved, and chat only after retrieving.
//!
//! ```text
//! cargo run --example glossary_agent -- 127.0.0.1:8112
//! ddwire invoke --agents examples/agents.json --profile examples/profile.json \
//!     --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry" \
//!     --agent example.glossary --input examples/messages/glossary.json
//! ```

use ddwire::agent::server;
use ddwire::agent::{Agent, AgentError, RunContext};
use ddwire::contract::{
    AgentResult, AgentSpec, Canonicalisation, Derivation, Derived, EvidenceItem, GroundingMode,
    InvocationRequest, Outcome, Payload, ReasonCode, classes,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The glossary the agent retrieves from: each entry is a source document with its own id.
const GLOSSARY: &[(&str, &str)] = &[
    (
        "envelope",
        "The harness's answer to one invocation: outcome, payload, evidence, and whom it acted for.",
    ),
    (
        "withheld",
        "A result the harness did not let out because it failed the grounding linter or the contract.",
    ),
    (
        "principal",
        "The person or accountable role a run acts for, named by the caller's credentials.",
    ),
];

struct Glossary {
    spec: AgentSpec,
}

impl Glossary {
    fn new() -> Glossary {
        let (message, reply) = (classes::message(), classes::reply());
        Glossary {
            spec: AgentSpec {
                agent_id: "example.glossary".into(),
                version: "0.1.0".into(),
                description:
                    "Explains a Data Director term from a small glossary, citing the entry.".into(),
                requirement_ids: vec!["EXAMPLE-1".into()],
                action_class: "converse".into(),
                accepts: vec!["Message".into()],
                grounding_mode: GroundingMode::Retrieval,
                payload: Some("Reply".into()),
                derivations: BTreeMap::from([(
                    "reply_text".into(),
                    Derived {
                        how: Derivation::Template,
                        recorded_in: Some("reply_derivation".into()),
                    },
                )]),
                contract_version: ddwire::contract::CONTRACT_VERSION.into(),
                schemas: BTreeMap::from([
                    (message.name.clone(), message),
                    (reply.name.clone(), reply),
                ]),
            },
        }
    }
}

/// An entry as the source document the agent cites.
fn entry_document(term: &str, text: &str) -> Value {
    json!({"source_id": format!("glossary:{term}"), "term": term, "text": text})
}

impl Agent for Glossary {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(
        &self,
        request: &InvocationRequest,
        ctx: &RunContext<'_>,
    ) -> Result<AgentResult, AgentError> {
        let text = request
            .input
            .0
            .get("message_text")
            .and_then(Value::as_str)
            .ok_or_else(|| AgentError::new("InvalidInput", "a Message needs message_text"))?
            .to_ascii_lowercase();
        let Some((term, meaning)) = GLOSSARY.iter().find(|(term, _)| text.contains(term)) else {
            // Nothing retrieved, nothing to cite: abstain rather than answer ungrounded.
            return Ok(AgentResult::new(Outcome::abstained(
                ReasonCode::NoCandidatesRetrieved,
                "The glossary has no entry for any word of the message.",
            )));
        };

        // The retrieval: one span naming the source by id and content hash.
        let document = entry_document(term, meaning);
        let source_id = format!("glossary:{term}");
        let canonicalisation = Canonicalisation::JsonDocument;
        let content_hash = canonicalisation
            .content_hash(&document)
            .map_err(|e| AgentError::new("HashError", e.to_string()))?;
        ctx.tracer.retrieval(&source_id, &content_hash).end();

        // The chat: composing the reply, after the retrieval ended.
        let chat = ctx.tracer.chat("example-template-v1");
        let reply = format!("{term}: {meaning}");
        chat.record_tokens(Some(text.split_whitespace().count() as u64), Some(12));
        chat.end();

        // The citation: the payload's grounded_on and the evidence name the same source.
        let payload = json!({
            "schema_class": "Reply",
            "reply_text": reply,
            "reply_derivation": "template",
            "grounded_on": [{"source_id": source_id, "content_hash": content_hash}],
        });
        let Value::Object(payload) = payload else {
            return Err(AgentError::new("Bug", "a JSON object literal"));
        };
        let mut result = AgentResult::new(Outcome::succeeded(format!("Explained '{term}'.")));
        result.payload = Some(Payload(payload));
        result.evidence = vec![EvidenceItem {
            source_id,
            source_uri: None,
            retrieved_at: None,
            snapshot_ref: None,
            hash_algorithm: "sha256".into(),
            canonicalisation: canonicalisation.name().into(),
            content_hash,
            // The entry itself travels with the evidence: the linter checks it hashes as cited.
            content: document.as_object().cloned(),
        }];
        result.model_id = Some("example-template-v1".into());
        Ok(result)
    }
}

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8112".into());
    let served = match server::serve(Arc::new(Glossary::new()), &addr, None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("glossary_agent: cannot serve on {addr}: {e}");
            std::process::exit(2);
        }
    };
    // The first line on stdout is the URL, for scripts (and the examples test) to read.
    println!("{}", served.base_url());
    eprintln!("example.glossary listening; stop it with Ctrl-C");
    served.wait();
}
