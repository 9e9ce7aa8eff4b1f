//! A tracer for one invocation: isolated, no global state.
//!
//! Each run gets its own [`Tracer`], so concurrent runs, tests and CLI runs never share
//! spans. Open spans form a parent stack (the most recently started open span is the parent
//! of the next); finished spans are held per trace id and released by [`Tracer::take`], so a
//! long-running harness does not accumulate them.
//!
//! A span is open while its [`ActiveSpan`] guard lives; dropping the guard (or calling
//! [`ActiveSpan::end`]) finishes it, as Python's `with tracer.start_as_current_span(...)`.
//!
//! ```
//! use ddwire::trace::{Tracer, attr};
//!
//! let tracer = Tracer::new("hello.world");
//! let root = tracer.invoke_agent("hello.world");
//! {
//!     let chat = tracer.chat("template-v1");
//!     chat.record_tokens(Some(12), Some(3));
//! } // the chat span ends here, as a child of the root
//! let trace_id = root.context().trace_id;
//! root.end();
//! let spans = tracer.take(trace_id);
//! assert_eq!(spans.len(), 2);
//! assert_eq!(spans[0].parent_id, Some(spans[1].span_id));
//! assert_eq!(spans[0].owned_str(attr::MODEL_ID), Some("template-v1"));
//! assert!(tracer.take(trace_id).is_empty()); // released once taken
//! ```

use super::context::{FLAG_SAMPLED, SpanContext, SpanId, TraceId, TraceState};
use super::names::{SpanName, attr};
use super::record::{
    AttrValue, Attributes, Event, Link, Resource, SpanKind, SpanRecord, Status, StatusCode,
};
use crate::text::Unpoison;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The tracer of one invocation (or one agent run).
#[derive(Debug)]
pub struct Tracer {
    service_name: String,
    /// Built with the first span: a tracer that records none (an echo call's) never needs it.
    resource: OnceLock<Arc<Resource>>,
    remote_parent: Option<SpanContext>,
    state: Mutex<State>,
}

/// Per-span limits, OpenTelemetry's defaults (`OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`,
/// `OTEL_SPAN_EVENT_COUNT_LIMIT`, `OTEL_SPAN_LINK_COUNT_LIMIT`): past each, the oldest entry
/// is dropped, as the Python SDK does.
pub(crate) const MAX_ATTRIBUTES: usize = 128;
/// See [`MAX_ATTRIBUTES`].
pub(crate) const MAX_EVENTS: usize = 128;
/// See [`MAX_ATTRIBUTES`].
pub(crate) const MAX_LINKS: usize = 128;

#[derive(Debug, Default)]
struct State {
    /// Open spans, in start order; the last is the current span.
    open: Vec<SpanRecord>,
    /// Finished spans by trace, in the order they ended.
    finished: HashMap<TraceId, Vec<SpanRecord>>,
}

impl Tracer {
    /// A tracer whose spans name `service_name` in their resource.
    pub fn new(service_name: &str) -> Tracer {
        Tracer {
            service_name: service_name.to_string(),
            resource: OnceLock::new(),
            remote_parent: None,
            state: Mutex::default(),
        }
    }

    /// Parent this tracer's root spans to a span in another process (from a `traceparent`),
    /// so they join the caller's trace. `None` leaves roots starting new traces.
    pub fn with_remote_parent(mut self, parent: Option<SpanContext>) -> Tracer {
        self.remote_parent = parent;
        self
    }

    /// The remote parent this tracer's roots hang under, if any.
    #[cfg(test)]
    pub(crate) fn remote_parent(&self) -> Option<&SpanContext> {
        self.remote_parent.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unpoisoned()
    }

    /// Start building a span named `name`.
    pub(crate) fn span(&self, name: SpanName) -> SpanBuilder<'_> {
        self.builder(Name::Owned(name))
    }

    /// Start building a span with an informational name of [`super::names`] (the relay's
    /// `a2a.task`, say): outside the trace format's six, so it carries no `dd.operation`.
    pub(crate) fn informational_span(&self, name: &'static str) -> SpanBuilder<'_> {
        self.builder(Name::Informational(name))
    }

    fn builder(&self, name: Name) -> SpanBuilder<'_> {
        SpanBuilder {
            tracer: self,
            name,
            kind: SpanKind::Internal,
            parent: Parent::Current,
            links: Vec::new(),
            attributes: Attributes::default(),
        }
    }

    /// `invoke_agent`: the root of an invocation, naming the agent.
    pub fn invoke_agent(&self, agent_id: &str) -> ActiveSpan<'_> {
        self.span(SpanName::InvokeAgent)
            .attribute(attr::AGENT_ID, agent_id)
            .start()
    }

    /// `policy_gate`: the profile's decision about `agent_id`.
    pub(crate) fn policy_gate(&self, agent_id: &str) -> ActiveSpan<'_> {
        self.span(SpanName::PolicyGate)
            .attribute(attr::AGENT_ID, agent_id)
            .start()
    }

    /// `retrieval`: one record retrieved, with its source id and content hash.
    pub fn retrieval(&self, source_id: &str, content_hash: &str) -> ActiveSpan<'_> {
        self.span(SpanName::Retrieval)
            .attribute(attr::SOURCE_ID, source_id)
            .attribute(attr::CONTENT_HASH, content_hash)
            .start()
    }

    /// `chat`: one model call.
    pub fn chat(&self, model_id: &str) -> ActiveSpan<'_> {
        self.span(SpanName::Chat)
            .attribute(attr::MODEL_ID, model_id)
            .start()
    }

    /// `delegate`: one delegation, naming the agent delegated *to*.
    pub(crate) fn delegate(&self, agent_id: &str) -> ActiveSpan<'_> {
        self.span(SpanName::Delegate)
            .attribute(attr::AGENT_ID, agent_id)
            .start()
    }

    /// `execute_tool`: one tool call (`dd.tool_name` is informational, not owned).
    #[cfg(test)]
    pub(crate) fn execute_tool(&self, tool_name: &str) -> ActiveSpan<'_> {
        self.span(SpanName::ExecuteTool)
            .attribute(attr::TOOL_NAME, tool_name)
            .start()
    }

    /// Take (and release) the finished spans of `trace_id`, in the order they ended.
    pub fn take(&self, trace_id: TraceId) -> Vec<SpanRecord> {
        self.lock().finished.remove(&trace_id).unwrap_or_default()
    }

    /// Take (and release) every finished span, trace by trace, each in the order it ended.
    pub fn take_all(&self) -> Vec<SpanRecord> {
        let mut state = self.lock();
        let mut traces: Vec<Vec<SpanRecord>> =
            state.finished.drain().map(|(_, spans)| spans).collect();
        traces.sort_by_key(|spans| spans.first().map(|s| s.end_ns));
        traces.into_iter().flatten().collect()
    }

    /// How many spans are held (open and finished); zero after every trace is taken.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        let state = self.lock();
        state.open.len() + state.finished.values().map(Vec::len).sum::<usize>()
    }
}

enum Parent {
    /// The innermost open span, else the remote parent, else a new trace.
    Current,
    /// A new trace, whatever is open.
    #[cfg(test)]
    NewTrace,
    /// A new trace whose root has these ids, chosen before it started.
    Chosen(TraceId, SpanId),
    /// This context.
    #[cfg(test)]
    Explicit(SpanContext),
}

/// A span's name: one of the trace format's six (which sets `dd.operation`), or an
/// informational one spelled in [`super::names`].
enum Name {
    Owned(SpanName),
    Informational(&'static str),
}

/// Options for one span before it starts.
pub(crate) struct SpanBuilder<'t> {
    tracer: &'t Tracer,
    name: Name,
    kind: SpanKind,
    parent: Parent,
    links: Vec<Link>,
    attributes: Attributes,
}

impl<'t> SpanBuilder<'t> {
    /// The span's kind (default `INTERNAL`, as the reference's helpers use).
    pub(crate) fn kind(mut self, kind: SpanKind) -> Self {
        self.kind = kind;
        self
    }

    /// Start a new trace instead of joining the current one (how a delegated child's
    /// `invoke_agent` begins, linked rather than nested).
    #[cfg(test)]
    pub(crate) fn new_trace(mut self) -> Self {
        self.parent = Parent::NewTrace;
        self
    }

    /// Start a new trace, as [`SpanBuilder::new_trace`], with ids chosen beforehand: a
    /// transport names the run's root span in its reply (W3C `traceresponse`) before the run
    /// has started. The ids must be random and non-zero ([`TraceId::random`],
    /// [`SpanId::random`]), as every id this tracer makes is.
    pub(crate) fn new_trace_with(mut self, trace_id: TraceId, span_id: SpanId) -> Self {
        self.parent = Parent::Chosen(trace_id, span_id);
        self
    }

    /// Parent the span to `parent` instead of the current span.
    #[cfg(test)]
    pub(crate) fn parent(mut self, parent: SpanContext) -> Self {
        self.parent = Parent::Explicit(parent);
        self
    }

    /// Link the span to another span (e.g. the parent invocation's `delegate` span).
    pub(crate) fn link(mut self, to: &SpanContext) -> Self {
        self.links.push(Link {
            trace_id: to.trace_id,
            span_id: to.span_id,
            trace_state: to.trace_state.clone(),
            attributes: Attributes::default(),
        });
        self
    }

    /// Set an attribute before the span starts.
    pub(crate) fn attribute(mut self, key: &str, value: impl Into<AttrValue>) -> Self {
        self.attributes.set(key, value);
        self
    }

    /// Open the span; it becomes the current span until it ends.
    pub(crate) fn start(self) -> ActiveSpan<'t> {
        let tracer = self.tracer;
        let mut state = tracer.lock();
        let parent: Option<SpanContext> = match &self.parent {
            Parent::Current => state
                .open
                .last()
                .map(SpanRecord::context)
                .or_else(|| tracer.remote_parent.clone()),
            Parent::Chosen(..) => None,
            #[cfg(test)]
            Parent::NewTrace => None,
            #[cfg(test)]
            Parent::Explicit(ctx) => Some(ctx.clone()),
        };
        let (trace_id, parent_id, trace_state) = match (&self.parent, parent) {
            (Parent::Chosen(trace_id, _), _) => (*trace_id, None, TraceState::default()),
            (_, Some(p)) => (p.trace_id, Some(p.span_id), p.trace_state),
            (_, None) => (TraceId::random(), None, TraceState::default()),
        };
        let mut attributes = Attributes::default();
        let name = match self.name {
            Name::Owned(name) => {
                attributes.set(attr::OPERATION, name.as_str());
                name.as_str()
            }
            Name::Informational(name) => name,
        };
        for (k, v) in self.attributes.0 {
            attributes.set(k, v);
        }
        drop_oldest(&mut attributes.0, MAX_ATTRIBUTES);
        let mut links = self.links;
        drop_oldest(&mut links, MAX_LINKS);
        let span_id = match self.parent {
            Parent::Chosen(_, span_id) => span_id,
            _ => SpanId::random(),
        };
        state.open.push(SpanRecord {
            name: name.to_string(),
            trace_id,
            span_id,
            parent_id,
            trace_state,
            kind: self.kind,
            start_ns: crate::time::now_ns(),
            end_ns: 0,
            status: Status::default(),
            attributes,
            events: Vec::new(),
            links,
            resource: Arc::clone(
                tracer
                    .resource
                    .get_or_init(|| Arc::new(Resource::for_service(&tracer.service_name))),
            ),
        });
        ActiveSpan {
            tracer,
            span_id,
            trace_id,
            ended: false,
        }
    }
}

/// An open span. Ends when dropped or when [`ActiveSpan::end`] is called.
pub struct ActiveSpan<'t> {
    tracer: &'t Tracer,
    span_id: SpanId,
    trace_id: TraceId,
    ended: bool,
}

impl ActiveSpan<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut SpanRecord) -> R) -> Option<R> {
        let mut state = self.tracer.lock();
        state
            .open
            .iter_mut()
            .find(|s| s.span_id == self.span_id)
            .map(f)
    }

    /// Set an attribute (an earlier value of the same key is replaced and the key moves to
    /// the end, as in OpenTelemetry Python).
    pub(crate) fn set(&self, key: &str, value: impl Into<AttrValue>) {
        let value = value.into();
        self.with(|s| {
            s.attributes.set(key, value);
            drop_oldest(&mut s.attributes.0, MAX_ATTRIBUTES);
        });
    }

    /// `record_tokens`: set `dd.input_tokens` and `dd.output_tokens`, each only if known.
    pub fn record_tokens(&self, input_tokens: Option<u64>, output_tokens: Option<u64>) {
        if let Some(n) = input_tokens {
            self.set(attr::INPUT_TOKENS, n);
        }
        if let Some(n) = output_tokens {
            self.set(attr::OUTPUT_TOKENS, n);
        }
    }

    /// Add a timed event, now.
    pub(crate) fn add_event(&self, name: &str, attributes: Attributes) {
        self.add_event_at(name, attributes, crate::time::now_ns());
    }

    /// Add an event at `time_ns` (nanoseconds since the epoch), taken by the caller where the
    /// order of events matters more than the moment of adding them.
    pub(crate) fn add_event_at(&self, name: &str, attributes: Attributes, time_ns: u64) {
        let event = Event {
            name: name.to_string(),
            time_ns,
            attributes,
        };
        self.with(|s| {
            s.events.push(event);
            drop_oldest(&mut s.events, MAX_EVENTS);
        });
    }

    /// Set the status as OpenTelemetry Python's `set_status` does: a description is kept
    /// only with `ERROR`, `UNSET` changes nothing, and `OK` is final.
    pub(crate) fn set_status(&self, code: StatusCode, description: Option<&str>) {
        if code == StatusCode::Unset {
            return;
        }
        self.with(|s| {
            if s.status.code != StatusCode::Ok {
                s.status = Status::new(code, description);
            }
        });
    }

    /// This span's context (to send as a `traceparent`, or to link to).
    pub fn context(&self) -> SpanContext {
        self.with(|s| s.context()).unwrap_or(SpanContext {
            trace_id: self.trace_id,
            span_id: self.span_id,
            flags: FLAG_SAMPLED,
            trace_state: TraceState::default(),
            is_remote: false,
        })
    }

    /// The span as it stands, as if it ended now: what a check that must read the span
    /// before it ends (the grounding linter, over a root that records the verdict) sees. The
    /// span itself stays open. `None` once it has ended.
    pub(crate) fn snapshot(&self) -> Option<SpanRecord> {
        self.with(|s| {
            let mut span = s.clone();
            span.end_ns = crate::time::now_ns().max(span.start_ns);
            span
        })
    }

    /// The `traceparent` header value naming this span.
    pub(crate) fn traceparent(&self) -> String {
        self.context().traceparent()
    }

    /// End the span now.
    pub fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        let mut state = self.tracer.lock();
        if let Some(pos) = state.open.iter().position(|s| s.span_id == self.span_id) {
            let mut span = state.open.remove(pos);
            // A wall clock stepped backwards must not produce a span that ends before it starts.
            span.end_ns = crate::time::now_ns().max(span.start_ns);
            state.finished.entry(span.trace_id).or_default().push(span);
        }
    }
}

fn drop_oldest<T>(items: &mut Vec<T>, limit: usize) {
    if items.len() > limit {
        items.drain(..items.len() - limit);
    }
}

impl Drop for ActiveSpan<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_nest_under_the_innermost_open_span_and_end_in_order() {
        let tracer = Tracer::new("t");
        let root = tracer.invoke_agent("a");
        let gate = tracer.policy_gate("a");
        gate.end();
        let retrieval = tracer.retrieval("src:a", &"0".repeat(64));
        let chat = tracer.chat("m");
        chat.end();
        retrieval.end();
        let root_ctx = root.context();
        root.end();
        let spans = tracer.take(root_ctx.trace_id);
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["policy_gate", "chat", "retrieval", "invoke_agent"]);
        assert_eq!(spans[0].parent_id, Some(root_ctx.span_id));
        assert_eq!(spans[1].parent_id, Some(spans[2].span_id));
        assert_eq!(spans[3].parent_id, None);
        assert!(
            spans
                .iter()
                .all(|s| s.trace_id == root_ctx.trace_id && s.end_ns >= s.start_ns)
        );
        assert_eq!(tracer.held(), 0);
    }

    #[test]
    fn roots_join_the_remote_parent_and_inherit_its_trace_state() {
        let parent = SpanContext::extract(
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("rojo=00f067aa0ba902b7"),
        )
        .unwrap();
        let tracer = Tracer::new("agent").with_remote_parent(Some(parent.clone()));
        tracer.chat("m").end();
        let spans = tracer.take(parent.trace_id);
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].parent_id, Some(parent.span_id));
        assert_eq!(spans[0].trace_state, parent.trace_state);
    }

    #[test]
    fn a_new_trace_with_a_link_is_not_nested_in_the_current_span() {
        let tracer = Tracer::new("t");
        let delegate = tracer.delegate("child");
        let link_to = delegate.context();
        let child = tracer
            .span(SpanName::InvokeAgent)
            .new_trace()
            .link(&link_to)
            .start();
        let child_ctx = child.context();
        child.end();
        delegate.end();
        let spans = tracer.take(child_ctx.trace_id);
        assert_ne!(child_ctx.trace_id, link_to.trace_id);
        assert_eq!(spans[0].parent_id, None);
        assert_eq!(spans[0].links[0].span_id, link_to.span_id);
    }

    #[test]
    fn a_root_with_chosen_ids_starts_a_new_trace_under_those_ids() {
        let tracer = Tracer::new("t");
        let open = tracer.delegate("x");
        let (trace_id, span_id) = (TraceId::random(), SpanId::random());
        let root = tracer
            .span(SpanName::InvokeAgent)
            .new_trace_with(trace_id, span_id)
            .start();
        let child = tracer.chat("m");
        let child_ctx = child.context();
        child.end();
        root.end();
        open.end();
        let spans = tracer.take(trace_id);
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[1].span_id, spans[1].parent_id), (span_id, None));
        assert_eq!(spans[0].parent_id, Some(span_id));
        assert_eq!(child_ctx.trace_id, trace_id);
    }

    #[test]
    fn a_snapshot_shows_an_open_span_as_it_stands_and_leaves_it_open() {
        let tracer = Tracer::new("t");
        let root = tracer.invoke_agent("a");
        root.set(attr::OUTCOME, "succeeded");
        let seen = root.snapshot().expect("an open span has a snapshot");
        assert!(seen.end_ns >= seen.start_ns && seen.end_ns > 0);
        assert_eq!(seen.owned_str(attr::OUTCOME), Some("succeeded"));
        root.set_status(StatusCode::Error, Some("late"));
        let trace_id = root.context().trace_id;
        root.end();
        let spans = tracer.take(trace_id);
        assert_eq!(spans.len(), 1, "the snapshot is not a span of the trace");
        assert_eq!(spans[0].span_id, seen.span_id);
        assert_eq!(spans[0].status.description.as_deref(), Some("late"));
        assert_eq!(seen.status, Status::default());
    }

    #[test]
    fn every_helper_sets_dd_operation_to_the_span_name() {
        let tracer = Tracer::new("t");
        tracer.execute_tool("grep").end();
        let spans = tracer.take_all();
        assert_eq!(spans[0].owned_str(attr::OPERATION), Some("execute_tool"));
        // dd.tool_name is on the span but is not an owned attribute.
        assert!(spans[0].attributes.get(attr::TOOL_NAME).is_some());
        assert!(spans[0].owned(attr::TOOL_NAME).is_none());
    }

    #[test]
    fn a_status_description_is_kept_only_with_error() {
        let tracer = Tracer::new("t");
        let s = tracer.chat("m");
        s.set_status(StatusCode::Ok, Some("fine"));
        s.end();
        let e = tracer.chat("m");
        e.set_status(StatusCode::Error, Some("boom"));
        e.end();
        let spans = tracer.take_all();
        assert_eq!(spans[0].status.description, None);
        assert_eq!(spans[1].status.description.as_deref(), Some("boom"));
    }
}
