//! A run its agent suspends, over loopback TCP in both bindings: the harness answers
//! `input-required` on the run's task, the same principal resumes it with a data part on that
//! task, and the run is stored once, holding both turns; another principal's resumption is
//! refused; a suspension past its expiry is stored as expired.

use super::rpc;

use ddwire::agent::Agent;
use ddwire::agent::builtin::Confirm;
use ddwire::agent::server as agent_server;
use ddwire::contract::{Principal, PrincipalKind};
use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::{Authenticator, Token, token_digest};
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{Registry, RemoteAgent};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::RunStore;
use ddwire::ids::new_uuid7;
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::{Limits, server::Server};
use rpc::{B, BOTH, Rpc, T, texts};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const ADA: &str = "ada-token";
const GRACE: &str = "grace-token";

struct Served {
    base: String,
    runs: PathBuf,
    /// Leave the run store when dropped (for a second harness over it).
    keep_runs: bool,
    harness: Option<Server>,
    _agent: Server,
}

impl Served {
    fn new(suspend_for: Duration) -> Served {
        let runs = std::env::temp_dir().join(format!("ddwire-harness-suspend-{}", new_uuid7()));
        Served::over(suspend_for, runs)
    }

    /// A harness over the run store at `runs` (a second one reads what the first left).
    fn over(suspend_for: Duration, runs: PathBuf) -> Served {
        let agent: Arc<dyn Agent> = Arc::new(Confirm::new());
        let client = A2aClient::default();
        let served = agent_server::serve(Arc::clone(&agent), "127.0.0.1:0", None).unwrap();
        let mut registry = Registry::default();
        registry
            .add(RemoteAgent::from_url(&client, &served.base_url(), T).expect("a card"))
            .unwrap();
        let profile = json!({"profile_id": "test", "version": 1,
                             "agents": {"demo.confirm": agent.spec().action_class}});
        let profile = Profile::from_bytes(profile.to_string().as_bytes(), "profile.json").unwrap();
        let mut conductor =
            Conductor::new(registry, profile, RunStore::open(&runs).unwrap(), client);
        conductor.suspend_for = suspend_for;
        let person =
            |id: &str, name: &str| Principal::new(id, name, PrincipalKind::Person).unwrap();
        let auth = Authenticator::Bearer(vec![
            Token::new(
                token_digest(ADA),
                person("https://orcid.org/0000-0001-5109-3700", "Ada"),
            ),
            Token::new(
                token_digest(GRACE),
                person("https://orcid.org/0000-0002-1825-0097", "Grace"),
            ),
        ]);
        let bound = ddwire::wire::http::server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
        let base = bound.default_public_url();
        let harness = Arc::new(Harness::new(conductor, Some(auth), &base));
        let server = bound.serve(harness_server::handler(harness)).unwrap();
        Served {
            base,
            runs,
            keep_runs: false,
            harness: Some(server),
            _agent: served,
        }
    }

    fn rpc(&self, token: &str) -> Rpc {
        Rpc::tcp(&format!("{}/a2a", self.base))
            .with_header("Authorization", &format!("Bearer {token}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.harness.take());
        if !self.keep_runs {
            let _ = std::fs::remove_dir_all(&self.runs);
        }
    }
}

fn confirm_request() -> Value {
    json!({"agent_id": "demo.confirm", "invocation_id": new_uuid7(),
           "input": {"schema_class": "Message", "message_text": "delete the draft"}})
}

/// A message continuing `task` with one data part.
fn resumption(binding: B, task: &Value, data: Value) -> Value {
    let mut message = binding.data(&new_uuid7(), data);
    message["taskId"] = task["id"].clone();
    message["contextId"] = task["contextId"].clone();
    message
}

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_suspended_run_answers_input_required_and_resumes_on_the_same_task_as_one_stored_run() {
    let s = Served::new(Duration::from_secs(60));
    for binding in BOTH {
        let ada = s.rpc(ADA);
        let request = confirm_request();
        let id = request["invocation_id"].as_str().unwrap().to_string();
        let task = ada.send(binding, binding.data(&new_uuid7(), request));
        assert_eq!(task["id"], id.as_str());
        assert_eq!(
            task["status"]["state"],
            binding.state("input-required"),
            "{task}"
        );
        let asked = texts(&task["status"]["message"]);
        assert!(asked[0].starts_with("Confirm to proceed"), "{asked:?}");
        assert!(task["metadata"]["dd.expires_at"].is_string(), "{task}");
        assert!(
            !s.runs.join(&id).exists(),
            "nothing is stored before the decision"
        );

        let done = ada.send(
            binding,
            resumption(binding, &task, json!({"confirm": true})),
        );
        assert_eq!(done["id"], id.as_str(), "the same task");
        assert_eq!(
            done["status"]["state"],
            binding.state("completed"),
            "{done}"
        );
        let envelope = &done["artifacts"][0]["parts"][0]["data"];
        assert_eq!(envelope["outcome"]["status"], "succeeded", "{envelope}");
        assert_eq!(
            envelope["payload"]["reply_text"],
            "Confirmed: delete the draft"
        );
        // The history keeps both messages and the agent's question between them.
        assert_eq!(done["history"].as_array().unwrap().len(), 3, "{done}");

        let run = s.runs.join(&id);
        let turns = read_json(run.join("turns.json"));
        let turns_list = turns["turns"].as_array().unwrap();
        assert_eq!(turns_list.len(), 2, "{turns}");
        assert!(turns_list[0].get("resumption").is_none());
        assert_eq!(
            turns_list[0]["agent_reply"]["result"]["outcome"]["status"],
            "suspended"
        );
        assert_eq!(turns_list[1]["resumption"], json!({"confirm": true}));
        assert_eq!(
            turns_list[1]["agent_reply"]["result"]["outcome"]["status"],
            "succeeded"
        );
        assert!(!turns_list[0]["spans"].as_array().unwrap().is_empty());
        assert_eq!(turns["resumed_by"], "https://orcid.org/0000-0001-5109-3700");
        assert!(turns["expires_at"].is_string() && turns["suspended_at"].is_string());
        assert_eq!(read_json(run.join("envelope.json")), *envelope);
        let reply = read_json(run.join("agent-result.json"));
        assert_eq!(reply["result"]["outcome"]["status"], "succeeded");

        // Decided: the task takes no further message.
        let error = ada.err(
            binding,
            binding.send(),
            json!({"message": resumption(binding, &task, json!({"confirm": true}))}),
        );
        assert_eq!(error["code"], -32004, "{error}");
    }
}

#[test]
fn a_resumption_from_another_principal_is_refused_and_the_run_stays_suspended() {
    let s = Served::new(Duration::from_secs(60));
    for binding in BOTH {
        let task = s
            .rpc(ADA)
            .send(binding, binding.data(&new_uuid7(), confirm_request()));
        let refused = s.rpc(GRACE).err(
            binding,
            binding.send(),
            json!({"message": resumption(binding, &task, json!({"confirm": true}))}),
        );
        // Answered as an unknown task is: another principal's task is never revealed (the
        // Guard issue's one access rule, which GetTask already followed).
        assert_eq!(refused["code"], -32001, "{refused}");
        let unknown = s.rpc(GRACE).err(
            binding,
            binding.send(),
            json!({"message": resumption(binding, &json!({"id": new_uuid7(), "contextId": task["contextId"]}), json!({"confirm": true}))}),
        );
        assert_eq!(refused["message"], unknown["message"], "{unknown}");
        let id = task["id"].as_str().unwrap();
        let still = s.rpc(ADA).get(binding, id);
        assert_eq!(still["status"]["state"], binding.state("input-required"));
        // Declining is a decision too: stored, abstained.
        let done = s.rpc(ADA).send(
            binding,
            resumption(binding, &task, json!({"confirm": false})),
        );
        let envelope = &done["artifacts"][0]["parts"][0]["data"];
        assert_eq!(envelope["outcome"]["status"], "abstained", "{done}");
    }
}

#[test]
fn a_suspension_past_its_expiry_is_stored_as_expired_and_its_task_ends_failed() {
    let s = Served::new(Duration::from_secs(1));
    let binding = B::V10;
    let task = s
        .rpc(ADA)
        .send(binding, binding.data(&new_uuid7(), confirm_request()));
    let id = task["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1500));
    let late = s.rpc(ADA).send(
        binding,
        resumption(binding, &task, json!({"confirm": true})),
    );
    assert_eq!(late["status"]["state"], binding.state("failed"), "{late}");
    let envelope = read_json(s.runs.join(&id).join("envelope.json"));
    assert_eq!(envelope["outcome"]["status"], "failed");
    let detail = envelope["problem"]["detail"].as_str().unwrap();
    assert!(detail.starts_with("demo.confirm: Expired: "), "{detail}");
    let turns = read_json(s.runs.join(&id).join("turns.json"));
    assert_eq!(turns["turns"].as_array().unwrap().len(), 1);
}

/// `POST /agui` with `input` as `token`'s principal: the events, in order.
fn agui(s: &Served, token: &str, input: Value) -> Vec<Value> {
    use ddwire::wire::http::client::{ClientRequest, HttpClient};
    let request = ClientRequest::post_json(
        format!("{}/agui", s.base),
        input.to_string().into_bytes(),
        T,
    )
    .header("Authorization", &format!("Bearer {token}"));
    let response = HttpClient::tcp().send(request).expect("the run ends");
    String::from_utf8(response.body)
        .unwrap()
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn an_ag_ui_run_its_agent_suspends_ends_with_an_interrupt_and_a_resume_entry_continues_it() {
    let s = Served::new(Duration::from_secs(60));
    let request = confirm_request();
    let id = request["invocation_id"].as_str().unwrap().to_string();
    let first = agui(
        &s,
        ADA,
        json!({"threadId": "t", "runId": "r1", "messages": [], "forwardedProps": {"request": request}}),
    );
    let last = first.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{first:?}");
    assert!(last.get("result").is_none(), "{last}");
    assert_eq!(last["outcome"]["type"], "interrupt");
    let interrupt = &last["outcome"]["interrupts"][0];
    assert_eq!(interrupt["id"], id.as_str());
    assert!(
        interrupt["message"]
            .as_str()
            .unwrap()
            .starts_with("Confirm")
    );
    assert!(interrupt["expiresAt"].is_string());

    let resume = |answer: Value| {
        json!({"threadId": "t", "runId": "r2", "messages": [],
               "resume": [{"interruptId": id, "status": "resolved", "payload": answer}]})
    };
    // Another principal cannot answer it.
    let refused = agui(&s, GRACE, resume(json!({"confirm": true})));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["type"], "RUN_ERROR");
    assert_eq!(refused[0]["code"], "resume_refused");

    let second = agui(&s, ADA, resume(json!({"confirm": true})));
    let last = second.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{second:?}");
    assert_eq!(last["result"]["outcome"]["status"], "succeeded", "{last}");
    assert!(last.get("outcome").is_none());
    let turns = read_json(s.runs.join(&id).join("turns.json"));
    assert_eq!(turns["turns"].as_array().unwrap().len(), 2);

    // A cancelled resume entry abandons the run: stored as canceled.
    let request = confirm_request();
    let id = request["invocation_id"].as_str().unwrap().to_string();
    agui(
        &s,
        ADA,
        json!({"threadId": "t", "runId": "r3", "messages": [], "forwardedProps": {"request": request}}),
    );
    let cancelled = agui(
        &s,
        ADA,
        json!({"threadId": "t", "runId": "r4", "messages": [],
               "resume": [{"interruptId": id, "status": "cancelled"}]}),
    );
    let last = cancelled.last().unwrap();
    assert_eq!(last["result"]["outcome"]["status"], "failed", "{last}");
    let detail = last["result"]["problem"]["detail"].as_str().unwrap();
    assert!(detail.starts_with("demo.confirm: Canceled: "), "{detail}");
}

#[test]
fn a_run_suspended_before_a_restart_is_input_required_again_and_resumes() {
    let mut first = Served::new(Duration::from_secs(60));
    first.keep_runs = true;
    let runs = first.runs.clone();
    let binding = B::V10;
    let task = first
        .rpc(ADA)
        .send(binding, binding.data(&new_uuid7(), confirm_request()));
    let id = task["id"].as_str().unwrap().to_string();
    let record = runs
        .join(".ddwire")
        .join("suspended")
        .join(format!("{id}.json"));
    assert!(record.exists(), "the suspension is kept on disk");
    drop(first);

    let second = Served::over(Duration::from_secs(60), runs);
    let again = second.rpc(ADA).get(binding, &id);
    assert_eq!(
        again["status"]["state"],
        binding.state("input-required"),
        "{again}"
    );
    assert!(texts(&again["status"]["message"])[0].starts_with("Confirm to proceed"));
    let done = second.rpc(ADA).send(
        binding,
        resumption(binding, &again, json!({"confirm": true})),
    );
    assert_eq!(
        done["status"]["state"],
        binding.state("completed"),
        "{done}"
    );
    let turns = read_json(second.runs.join(&id).join("turns.json"));
    assert_eq!(turns["turns"].as_array().unwrap().len(), 2);
    assert!(!record.exists(), "the record goes once the run is stored");
}
