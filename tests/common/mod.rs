//! Shared by the harness tests: scripted agents (the reference's `workbench.testing`
//! `ScriptedAgent`), the small classes they read and return, harnesses over the in-memory wire
//! or loopback TCP, and readers of the run store.
//!
//! Nothing here stands in for ddwire's own wire: every agent is served by
//! `ddwire::agent::server`, every harness by `ddwire::harness::server`, and every call crosses
//! real HTTP/1.1 bytes. A hand-written peer ([`raw_peer`]) exists only to send replies no
//! ddwire agent server would send.

#![allow(dead_code)]

use ddwire::agent::delegate::{Delegate, Delegated};
use ddwire::agent::server::{self as agent_server, serve_in_memory};
use ddwire::agent::{Agent, AgentError, RunContext};
use ddwire::contract::{
    AgentResult, AgentSpec, CONTRACT_VERSION, ClassSchema, EvidenceItem, GroundingMode, Input,
    InvocationRequest, Outcome, Payload, ReasonCode, classes, content_hash,
};
use ddwire::harness::conductor::Conductor;
use ddwire::harness::grounding::{self, GroundingReport};
use ddwire::harness::identity::Authenticator;
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{Registry, RemoteAgent};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::{HARNESS_URL, TestHarness, test_principal};
use ddwire::ids::new_uuid7;
use ddwire::trace::{self, SpanRecord};
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::{Message, Part, Role, Task};
use ddwire::wire::a2a::{CARD_PATH, artifact, card, meta};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use ddwire::wire::http::{Handler, Limits, Request, Response};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The time any one call in a test may take.
pub const T: Duration = Duration::from_secs(10);

// --- Classes --------------------------------------------------------------------------------

fn grounding_ref_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "source_id": {"type": "string"},
            "content_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"}
        },
        "required": ["source_id", "content_hash"]
    })
}

fn class(name: &str, properties: Value, required: &[&str]) -> ClassSchema {
    let mut props = properties.as_object().cloned().unwrap_or_default();
    props.insert(
        "schema_class".into(),
        json!({"type": "string", "enum": [name]}),
    );
    let mut req = vec!["schema_class"];
    req.extend_from_slice(required);
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": name,
        "type": "object",
        "additionalProperties": false,
        "properties": props,
        "required": req,
    });
    ClassSchema::new(name, schema).expect("a test class schema is valid")
}

/// `ProbeRecord`: a metadata record (what the input-only and none agents read).
pub fn probe_record() -> ClassSchema {
    class(
        "ProbeRecord",
        json!({"title": {"type": "string"}, "creators": {"type": "array", "items": {"type": "string"}}}),
        &["title"],
    )
}

/// `ProbeProfile`: a dataset profile (the none agent's second input class).
pub fn probe_profile() -> ClassSchema {
    class(
        "ProbeProfile",
        json!({"rows": {"type": "integer"}}),
        &["rows"],
    )
}

/// `ProbeClaim`: a claim to check (what the retrieval agent reads).
pub fn probe_claim() -> ClassSchema {
    class(
        "ProbeClaim",
        json!({"text": {"type": "string"}, "subject_uri": {"type": "string"}}),
        &["text"],
    )
}

/// `ProbeReview`: a review grounded on the input.
pub fn probe_review() -> ClassSchema {
    class(
        "ProbeReview",
        json!({"score": {"type": "number"}, "grounded_on": {"type": "array", "items": grounding_ref_schema()}}),
        &["score", "grounded_on"],
    )
}

/// `ProbeCheck`: a verdict grounded on what was retrieved.
pub fn probe_check() -> ClassSchema {
    class(
        "ProbeCheck",
        json!({
            "verdict": {"type": "string", "enum": ["supported", "refuted"]},
            "rationale": {"type": "string"},
            "grounded_on": {"type": "array", "items": grounding_ref_schema()}
        }),
        &["verdict", "rationale", "grounded_on"],
    )
}

/// A `ProbeRecord` input.
pub fn record() -> Value {
    json!({"schema_class": "ProbeRecord", "title": "Soil chemistry survey", "creators": ["Example Researcher"]})
}

/// A `ProbeProfile` input.
pub fn profile() -> Value {
    json!({"schema_class": "ProbeProfile", "rows": 12})
}

/// A `ProbeClaim` input.
pub fn claim() -> Value {
    json!({"schema_class": "ProbeClaim", "text": "A DOI does not change when the object moves."})
}

/// A `Message` input.
pub fn message(text: &str) -> Value {
    json!({"schema_class": "Message", "message_text": text})
}

/// A request document for `agent_id` on `input`, with a fresh id.
pub fn request(agent_id: &str, input: Value) -> Value {
    json!({
        "invocation_id": new_uuid7(),
        "agent_id": agent_id,
        "issued_at": now_rfc3339(),
        "input": input,
    })
}

/// `input` as the contract's open input.
pub fn input(v: Value) -> Input {
    match v {
        Value::Object(m) => Input(m),
        other => panic!("an input is an object, not {other}"),
    }
}

// --- Sources and results ----------------------------------------------------------------------

/// A document a scripted agent "retrieves": a retrieval span names it by id and hash.
#[derive(Clone, Debug)]
pub struct Source {
    pub source_id: String,
    pub document: Value,
}

impl Source {
    /// Its `dd-json-document-v1` hash.
    pub fn content_hash(&self) -> String {
        content_hash(&self.document, "dd-json-document-v1").expect("a registered canonicalisation")
    }

    /// `{"source_id", "content_hash"}`.
    pub fn reference(&self) -> Value {
        json!({"source_id": self.source_id, "content_hash": self.content_hash()})
    }

    /// An evidence item citing it.
    pub fn evidence(&self) -> EvidenceItem {
        EvidenceItem {
            source_id: self.source_id.clone(),
            source_uri: None,
            retrieved_at: Some(now_rfc3339()),
            snapshot_ref: None,
            hash_algorithm: "sha256".into(),
            canonicalisation: "dd-json-document-v1".into(),
            content_hash: self.content_hash(),
            content: None,
        }
    }
}

/// `src:a`.
pub fn source_a() -> Source {
    Source {
        source_id: "src:a".into(),
        document: json!({"source_id": "src:a", "text": "Alpha."}),
    }
}

/// `src:b`.
pub fn source_b() -> Source {
    Source {
        source_id: "src:b".into(),
        document: json!({"source_id": "src:b", "text": "Beta."}),
    }
}

fn payload(v: Value) -> Payload {
    match v {
        Value::Object(m) => Payload(m),
        other => panic!("a payload is an object, not {other}"),
    }
}

/// The reference citing the run's input.
pub fn input_ref(ctx: &RunContext<'_>) -> Value {
    json!({"source_id": ctx.input_ref, "content_hash": ctx.input_hash})
}

/// A succeeded `ProbeReview` grounded on the input, as an input_only or none agent should.
pub fn review_of_input(ctx: &RunContext<'_>) -> AgentResult {
    let mut result = AgentResult::new(Outcome::succeeded("Reviewed."));
    result.payload = Some(payload(json!({
        "schema_class": "ProbeReview", "score": 1.0, "grounded_on": [input_ref(ctx)],
    })));
    result.evidence = vec![EvidenceItem::citing_input(&ctx.input_ref, &ctx.input_hash)];
    result
}

/// A succeeded `ProbeCheck` grounded on exactly `sources`.
pub fn fact_check_over(sources: &[Source]) -> AgentResult {
    let mut result = AgentResult::new(Outcome::succeeded("Checked."));
    let refs: Vec<Value> = sources.iter().map(Source::reference).collect();
    result.payload = Some(payload(json!({
        "schema_class": "ProbeCheck", "verdict": "supported", "rationale": "Scripted.", "grounded_on": refs,
    })));
    result.evidence = sources.iter().map(Source::evidence).collect();
    result
}

/// A succeeded `Reply` grounded on the input and the delegated children.
pub fn reply_over(ctx: &RunContext<'_>, delegated: &[&Delegated]) -> AgentResult {
    let text: Vec<String> = delegated
        .iter()
        .map(|d| format!("{}: {}", d.envelope.agent_id, d.envelope.outcome.statement))
        .collect();
    let mut refs = vec![input_ref(ctx)];
    refs.extend(delegated.iter().map(
        |d| json!({"source_id": d.reference.source_id, "content_hash": d.reference.content_hash}),
    ));
    let mut result = AgentResult::new(Outcome::succeeded("Relayed."));
    result.payload = Some(payload(json!({
        "schema_class": "Reply",
        "reply_text": if text.is_empty() { "Nothing delegated.".to_string() } else { text.join("; ") },
        "reply_derivation": "template",
        "grounded_on": refs,
    })));
    result.evidence = vec![EvidenceItem::citing_input(&ctx.input_ref, &ctx.input_hash)];
    result
        .evidence
        .extend(delegated.iter().map(|d| d.evidence.clone()));
    result
}

/// An abstention outside the agent's scope, saying `statement`.
pub fn abstain(statement: &str) -> AgentResult {
    AgentResult::new(Outcome::abstained(ReasonCode::OutsideAgentScope, statement))
}

// --- Scripted agents --------------------------------------------------------------------------

/// What a scripted agent does before it decides.
#[derive(Clone, Debug)]
pub enum Step {
    /// A `retrieval` span naming the source.
    Retrieve(Source),
    /// A `chat` span naming the model.
    Chat(&'static str),
}

/// How a scripted agent decides.
pub type Behaviour = Box<
    dyn Fn(&InvocationRequest, &RunContext<'_>) -> Result<AgentResult, AgentError> + Send + Sync,
>;

/// A behaviour from a closure.
pub fn behave(
    f: impl Fn(&InvocationRequest, &RunContext<'_>) -> Result<AgentResult, AgentError>
    + Send
    + Sync
    + 'static,
) -> Behaviour {
    Box::new(f)
}

/// Return `review_of_input`.
pub fn reviews() -> Behaviour {
    behave(|_, ctx| Ok(review_of_input(ctx)))
}

/// Return `fact_check_over(sources)`.
pub fn checks(sources: Vec<Source>) -> Behaviour {
    behave(move |_, _| Ok(fact_check_over(&sources)))
}

/// Return this result, whatever the request.
pub fn returns(result: AgentResult) -> Behaviour {
    behave(move |_, _| Ok(result.clone()))
}

/// Raise `kind: message`.
pub fn raises(kind: &'static str, message: &'static str) -> Behaviour {
    behave(move |_, _| Err(AgentError::new(kind, message)))
}

/// A test double whose specification and behaviour are set per test (the reference's
/// `ScriptedAgent(mode, behaviour, steps)`): it records the spans asked for through its run's
/// tracer, then returns (or raises) what its behaviour decides, and counts its calls.
pub struct ScriptedAgent {
    spec: AgentSpec,
    behaviour: Behaviour,
    steps: Vec<Step>,
    calls: AtomicUsize,
}

/// The scripted spec of each mode: `fake.retrieval` (ProbeClaim → ProbeCheck),
/// `fake.input-only` (ProbeRecord → ProbeReview), `fake.none` (ProbeRecord, ProbeProfile →
/// ProbeReview), `fake.delegation` (Message → Reply). Version `0`, action class `advise`.
pub fn scripted_spec(mode: GroundingMode) -> AgentSpec {
    let (id, accepts, payload) = match mode {
        GroundingMode::Retrieval => ("fake.retrieval", vec![probe_claim()], probe_check()),
        GroundingMode::InputOnly => ("fake.input-only", vec![probe_record()], probe_review()),
        GroundingMode::None => (
            "fake.none",
            vec![probe_record(), probe_profile()],
            probe_review(),
        ),
        GroundingMode::Delegation => (
            "fake.delegation",
            vec![classes::message()],
            classes::reply(),
        ),
    };
    let mut schemas = std::collections::BTreeMap::new();
    let names: Vec<String> = accepts.iter().map(|c| c.name.clone()).collect();
    for c in accepts {
        schemas.insert(c.name.clone(), c);
    }
    let payload_name = payload.name.clone();
    schemas.insert(payload_name.clone(), payload);
    AgentSpec {
        agent_id: id.into(),
        version: "0".into(),
        description: format!("Scripted {} agent.", mode.as_str()),
        requirement_ids: Vec::new(),
        action_class: "advise".into(),
        accepts: names,
        grounding_mode: mode,
        payload: Some(payload_name),
        derivations: Default::default(),
        contract_version: CONTRACT_VERSION.into(),
        schemas,
    }
}

impl ScriptedAgent {
    /// The scripted agent of `mode`, deciding with `behaviour`.
    pub fn new(mode: GroundingMode, behaviour: Behaviour) -> ScriptedAgent {
        ScriptedAgent {
            spec: scripted_spec(mode),
            behaviour,
            steps: Vec::new(),
            calls: AtomicUsize::new(0),
        }
    }

    /// Record these spans before deciding.
    pub fn steps(mut self, steps: Vec<Step>) -> ScriptedAgent {
        self.steps = steps;
        self
    }

    /// Another agent id.
    pub fn id(mut self, agent_id: &str) -> ScriptedAgent {
        self.spec.agent_id = agent_id.into();
        self
    }

    /// Declare another payload class.
    pub fn payload_class(mut self, class: ClassSchema) -> ScriptedAgent {
        if let Some(old) = self.spec.payload.take() {
            self.spec.schemas.remove(&old);
        }
        self.spec.payload = Some(class.name.clone());
        self.spec.schemas.insert(class.name.clone(), class);
        self
    }

    /// Declare another action class.
    pub fn action_class(mut self, class: &str) -> ScriptedAgent {
        self.spec.action_class = class.into();
        self
    }

    /// Shared, so a test can count calls after the harness holds it.
    pub fn arc(self) -> Arc<ScriptedAgent> {
        Arc::new(self)
    }

    /// How many times the agent has been run.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Agent for ScriptedAgent {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(
        &self,
        request: &InvocationRequest,
        ctx: &RunContext<'_>,
    ) -> Result<AgentResult, AgentError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        for step in &self.steps {
            match step {
                Step::Retrieve(source) => ctx
                    .tracer
                    .retrieval(&source.source_id, &source.content_hash())
                    .end(),
                Step::Chat(model) => ctx.tracer.chat(model).end(),
            }
        }
        (self.behaviour)(request, ctx)
    }
}

/// `agent` as the trait object a harness serves.
pub fn dyn_agent<A: Agent + 'static>(agent: &Arc<A>) -> Arc<dyn Agent> {
    Arc::clone(agent) as Arc<dyn Agent>
}

// --- Harnesses --------------------------------------------------------------------------------

/// A fresh directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("ddwire-{label}-{}", new_uuid7()));
        std::fs::create_dir_all(&path).expect("a temporary directory");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory the tests running at one moment share, made and filled once by `fill` (a demo
/// store, copied fixtures), and removed when the last of them lets go of it; a test that
/// starts after that gets a fresh one. Each test holds it for its whole run, so every helper it
/// calls sees the same directory, and none is left behind.
pub fn shared_dir(
    slot: &'static std::sync::Mutex<std::sync::Weak<TempDir>>,
    label: &str,
    fill: impl FnOnce(&Path),
) -> Arc<TempDir> {
    let mut shared = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(dir) = shared.upgrade() {
        return dir;
    }
    let dir = Arc::new(TempDir::new(label));
    fill(dir.path());
    *shared = Arc::downgrade(&dir);
    dir
}

/// A profile enabling each agent with the class it declares.
pub fn permissive_profile(agents: &[Arc<dyn Agent>]) -> String {
    let mut profile = json!({"profile_id": "test-permissive", "version": 1, "agents": {}});
    for a in agents {
        profile["agents"][&a.spec().agent_id] = Value::String(a.spec().action_class.clone());
    }
    profile.to_string()
}

/// A harness in memory, as `TestHarness::with_profile` builds it, but authenticating callers
/// with `authenticator` (`None`: only delegation callbacks are accepted).
pub fn harness_with(
    agents: Vec<Arc<dyn Agent>>,
    profile_json: &str,
    authenticator: Option<Authenticator>,
) -> TestHarness {
    let net = MemoryNet::new();
    let urls: Vec<String> = agents
        .into_iter()
        .map(|a| serve_in_memory(&net, a))
        .collect();
    harness_on(net, &urls, profile_json, authenticator, T)
}

/// A harness in memory over agents already served on `net` at `urls`, each called with
/// `timeout`.
pub fn harness_on(
    net: MemoryNet,
    urls: &[String],
    profile_json: &str,
    authenticator: Option<Authenticator>,
    timeout: Duration,
) -> TestHarness {
    let client = A2aClient::new(HttpClient::memory(net.clone()));
    let mut registry = Registry::default();
    for url in urls {
        registry
            .add(RemoteAgent::from_url(&client, url, timeout).expect("a served card reads"))
            .expect("unique ids");
    }
    let runs = std::env::temp_dir().join(format!("ddwire-test-runs-{}", new_uuid7()));
    let store = RunStore::open(&runs).expect("a run store");
    let profile = Profile::from_bytes(profile_json.as_bytes(), "test-profile.json")
        .expect("a valid test profile");
    let conductor = Conductor::new(registry, profile, store, client.clone());
    let harness = Arc::new(Harness::new(conductor, authenticator, HARNESS_URL));
    net.serve(
        "harness.test",
        harness_server::handler(Arc::clone(&harness)),
        Limits::DEFAULT,
    );
    TestHarness {
        net,
        harness,
        client,
        runs,
    }
}

/// A conductor over agents each served on loopback TCP by the agent server, called over TCP.
/// Keep the servers alive while the conductor is used.
pub fn tcp_conductor(
    agents: Vec<Arc<dyn Agent>>,
    runs: &Path,
) -> (Conductor, Vec<ddwire::wire::http::server::Server>) {
    let client = A2aClient::default();
    let profile = permissive_profile(&agents);
    let mut registry = Registry::default();
    let mut servers = Vec::new();
    for agent in agents {
        let server =
            agent_server::serve(agent, "127.0.0.1:0", None).expect("an agent serves on loopback");
        registry
            .add(
                RemoteAgent::from_url(&client, &server.base_url(), T).expect("a served card reads"),
            )
            .expect("unique ids");
        servers.push(server);
    }
    let conductor = Conductor::new(
        registry,
        Profile::from_bytes(profile.as_bytes(), "test-profile.json").expect("a valid profile"),
        RunStore::open(runs).expect("a run store"),
        client,
    );
    (conductor, servers)
}

/// A conductor with no harness around it and no callback URL (as under the CLI): agents are
/// served in memory on `net`; runs go to `runs`.
pub fn bare_conductor(agents: Vec<Arc<dyn Agent>>, runs: &Path) -> (Conductor, MemoryNet) {
    let net = MemoryNet::new();
    let client = A2aClient::new(HttpClient::memory(net.clone()));
    let profile = permissive_profile(&agents);
    let mut registry = Registry::default();
    for agent in agents {
        let url = serve_in_memory(&net, agent);
        registry
            .add(RemoteAgent::from_url(&client, &url, T).expect("a served card reads"))
            .expect("unique ids");
    }
    let conductor = Conductor::new(
        registry,
        Profile::from_bytes(profile.as_bytes(), "test-profile.json").expect("a valid profile"),
        RunStore::open(runs).expect("a run store"),
        client,
    );
    (conductor, net)
}

/// Serve `agent` on `net` at `host` with the agent server (any host name, so one agent can be
/// served twice). Returns the base URL.
pub fn serve_at(net: &MemoryNet, host: &str, agent: Arc<dyn Agent>) -> String {
    let base = format!("http://{host}");
    net.serve(host, agent_server::handler(agent, &base), Limits::DEFAULT)
}

/// A hand-written A2A peer at `host`: it serves `card` (or the card of `spec` at its base URL)
/// and answers every JSON-RPC request with `result(request)` as the `result` member. It is a
/// peer that misbehaves on purpose, not a stand-in for ddwire's agent server.
pub fn raw_peer(
    net: &MemoryNet,
    host: &str,
    card: Value,
    result: impl Fn(&Value) -> Value + Send + Sync + 'static,
) -> String {
    let card_bytes = card.to_string().into_bytes();
    let handler: Handler = Arc::new(move |req: Request| {
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", CARD_PATH) => Response::bytes(200, "application/json", card_bytes.clone()),
            ("POST", "/a2a") | ("POST", "/") => {
                let call: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let body =
                    json!({"jsonrpc": "2.0", "id": call["id"].clone(), "result": result(&call)});
                Response::json(200, &body)
            }
            _ => Response::error(404, "no route"),
        }
    });
    net.serve(host, handler, Limits::DEFAULT)
}

/// The card ddwire's agent server would publish for `spec` at `base`.
pub fn card_of(spec: &AgentSpec, base: &str) -> Value {
    card::agent_card(spec, base)
}

/// An A2A 1.0 `SendMessage` result: a completed task whose one artifact `agent-result` holds
/// `body` as its data part, answering `call`.
pub fn completed_with(call: &Value, body: Value) -> Value {
    let message = call["params"]["message"].clone();
    json!({"task": {
        "id": new_uuid7(),
        "contextId": new_uuid7(),
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": new_uuid7(), "name": artifact::AGENT_RESULT,
                       "parts": [{"data": body, "mediaType": "application/json"}]}],
        "history": [message],
    }})
}

// --- Calls over the wire ----------------------------------------------------------------------

/// A user message with one data part per document, and metadata.
pub fn a2a_message(data: Vec<Value>, metadata: Option<Map<String, Value>>) -> Message {
    let mut m = Message::new(Role::User, data.into_iter().map(Part::data).collect());
    m.metadata = metadata;
    m
}

/// Send `doc` to the harness over A2A (the binding its card prefers) and return the task.
pub fn send(th: &TestHarness, doc: Value) -> Task {
    send_to(th, &th.target(), a2a_message(vec![doc], None), &[])
}

/// Send a message to the harness at `target` with extra headers.
pub fn send_to(th: &TestHarness, target: &Target, m: Message, headers: &[(&str, &str)]) -> Task {
    th.client
        .send_for_task(target, m, headers, T)
        .expect("the harness answers with a task")
}

/// The envelope in a harness task's `envelope` artifact.
pub fn envelope_of(task: &Task) -> Value {
    let artifacts = task.artifacts_named(artifact::ENVELOPE);
    assert_eq!(artifacts.len(), 1, "{task:?}");
    match artifacts[0].parts.as_slice() {
        [Part::Data { data, .. }] => data.clone(),
        other => panic!("the envelope artifact is not one data part: {other:?}"),
    }
}

/// `GET <harness><path>`: the status and the body (JSON if it parses, else a string).
pub fn get(th: &TestHarness, path: &str) -> (u16, Value) {
    let r = th
        .client
        .http
        .send(ClientRequest::get(format!("{HARNESS_URL}{path}"), T))
        .expect("the harness answers");
    let text = String::from_utf8(r.body).expect("UTF-8");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (r.status, body)
}

/// `POST <harness>/agui` with `body` and headers: the status, content type and raw stream.
pub fn post_agui(
    th: &TestHarness,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut req = ClientRequest::post_json(
        format!("{HARNESS_URL}/agui"),
        body.to_string().into_bytes(),
        T,
    )
    .header("Accept", "text/event-stream");
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let r = th.client.http.send(req).expect("the harness answers");
    let content_type = r.header("content-type").unwrap_or("").to_string();
    (
        r.status,
        content_type,
        String::from_utf8(r.body).expect("UTF-8"),
    )
}

/// Now, as the contract spells a timestamp: the `issued_at` ddwire stamps on a new request.
pub fn now_rfc3339() -> String {
    InvocationRequest::new("now", Input(Map::new())).issued_at
}

/// The `data` of each event in an SSE stream, as `@ag-ui/client` reads it: events split on a
/// blank line, `data:` lines joined with `\n` (one optional space after the colon), comments and
/// other fields ignored. Written here, apart from ddwire's own writer, so a test of the stream
/// does not read it with the code that wrote it.
pub fn sse_data(stream: &str) -> Vec<String> {
    stream
        .split("\n\n")
        .filter_map(|block| {
            let data: Vec<&str> = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

/// The events of an SSE stream, parsed as `@ag-ui/client` reads them.
pub fn events(stream: &str) -> Vec<Value> {
    sse_data(stream)
        .iter()
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect()
}

/// The `type` of each event.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The message of a stream that must be exactly one `RUN_ERROR` event.
pub fn run_error_message(stream: &str) -> String {
    let events = events(stream);
    assert_eq!(types(&events), ["RUN_ERROR"], "{events:?}");
    events[0]["message"]
        .as_str()
        .expect("a RUN_ERROR has a message")
        .to_string()
}

/// A RunAgentInput carrying `request` in `forwardedProps`.
pub fn agui_body(request: &Value, thread_id: &str) -> Value {
    json!({
        "threadId": thread_id,
        "runId": "r1",
        "messages": [],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"request": request},
    })
}

/// Send a request document back to the harness under a delegation grant, as a delegation agent
/// would, but with a request of the test's choosing: the task the harness answers.
pub fn send_delegated(
    delegate: &Delegate,
    traceparent: &str,
    doc: Value,
) -> Result<Task, ddwire::Error> {
    let mut metadata = Map::new();
    metadata.insert(
        meta::DELEGATION_TOKEN.into(),
        Value::String(delegate.token.clone()),
    );
    metadata.insert(meta::TRACEPARENT.into(), Value::String(traceparent.into()));
    let card = delegate.client.fetch_card(&delegate.url, T)?;
    let target = Target::from_card(&card)?;
    Ok(delegate
        .client
        .send_for_task(&target, a2a_message(vec![doc], Some(metadata)), &[], T)?)
}

// --- The run store ----------------------------------------------------------------------------

/// The stored envelope of a run.
pub fn stored_envelope(runs: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(runs.join(id).join("envelope.json")).expect("envelope.json");
    serde_json::from_str(&text).expect("JSON")
}

/// The stored request of a run.
pub fn stored_request(runs: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(runs.join(id).join("request.json")).expect("request.json");
    serde_json::from_str(&text).expect("JSON")
}

/// The span lines of a run, one JSON document per line.
pub fn span_lines(runs: &Path, id: &str) -> Vec<String> {
    std::fs::read_to_string(runs.join(id).join("spans.jsonl"))
        .expect("spans.jsonl")
        .lines()
        .map(str::to_string)
        .collect()
}

/// The spans of a run, as records.
pub fn stored_spans(runs: &Path, id: &str) -> Vec<SpanRecord> {
    span_lines(runs, id)
        .iter()
        .map(|l| trace::from_json(l).expect("a span line reads"))
        .collect()
}

/// The one span named `name` among `spans`.
pub fn only<'a>(spans: &'a [SpanRecord], name: &str) -> &'a SpanRecord {
    let found: Vec<&SpanRecord> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "exactly one {name} span: {found:?}");
    found[0]
}

/// The invocation ids in the index, in the order written.
pub fn index_ids(runs: &Path) -> Vec<String> {
    match std::fs::read_to_string(runs.join("invocations.jsonl")) {
        Err(_) => Vec::new(),
        Ok(text) => text
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("an index line is JSON");
                v["invocation_id"].as_str().expect("an id").to_string()
            })
            .collect(),
    }
}

/// Lint a stored run offline, from its files.
pub fn lint_stored(runs: &Path, id: &str) -> GroundingReport {
    grounding::lint(&stored_spans(runs, id), &stored_envelope(runs, id))
}

/// The stored grounding summary.
pub fn grounding_txt(runs: &Path, id: &str) -> String {
    std::fs::read_to_string(runs.join(id).join("grounding.txt")).expect("grounding.txt")
}

/// The problem type URI of an envelope (empty when it has none).
pub fn problem_type(envelope: &Value) -> String {
    envelope["problem"]["type"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Whether `envelope` is failed with the problem `slug`.
pub fn failed_with(envelope: &Value, slug: &str) -> bool {
    envelope["outcome"]["status"] == "failed"
        && problem_type(envelope) == format!("https://w3id.org/data-director/problems/{slug}")
}

/// Invoke through the test harness's conductor (acting for the test principal).
pub fn invoke(th: &TestHarness, doc: Value) -> ddwire::harness::conductor::Run {
    th.invoke(&doc).expect("the conductor makes a run")
}

/// The test principal as a document.
pub fn principal_doc() -> Value {
    serde_json::to_value(test_principal()).expect("a principal serialises")
}
