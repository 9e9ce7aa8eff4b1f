//! One JSON-RPC call as the relay sees it: which A2A method (in which binding), who sends it,
//! which peer it is for, which task and context it names, and the trace context it came with.
//!
//! The target is chosen the way the seed's clients choose it: the message metadata
//! `agent.target` names the peer, `agent.id` the sender (the seed writes them as
//! `metadata.agent.target`: read as the flat key, else the nested `{"agent": {"target"}}`). A call posted to `/peers/{id}/a2a` is for that peer whatever
//! its metadata says. A call that names a task (`tasks/get`, `tasks/cancel`, a resubscription,
//! a message continuing the task) without a target goes to the peer that owns the task.

use crate::trace::SpanContext;
use crate::wire::a2a::{Binding, meta, v03, v10};
use crate::wire::jsonrpc::Call;
use serde_json::{Map, Value};

/// Message (or params) metadata naming the peer a call is for (the seed's key).
pub(crate) const META_TARGET: &str = "agent.target";
/// Message (or params) metadata naming who sends the call (the seed's key).
pub(crate) const META_SENDER: &str = "agent.id";
/// The header naming the sender, for methods whose params carry no metadata (`GetTask`).
pub(crate) const SENDER_HEADER: &str = "x-agent-id";
/// Message metadata counting the relays a message has passed (each relay writes its count
/// plus one on the message it forwards), for a loop through relays that write no `Via`.
pub(crate) const META_HOPS: &str = "relay.hops";

/// What kind of A2A method a call is, whichever binding carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `message/send`, `SendMessage`.
    Send,
    /// `message/stream`, `SendStreamingMessage`.
    Stream,
    /// `tasks/get`, `GetTask`.
    Get,
    /// `tasks/cancel`, `CancelTask`.
    Cancel,
    /// `tasks/resubscribe`, `SubscribeToTask`.
    Subscribe,
    /// `ListTasks` (1.0 only).
    List,
    /// Push notification configs: task methods without a translation between bindings.
    PushConfig,
    /// The extended card, and anything else of either binding.
    Other,
}

impl Kind {
    pub(crate) fn of(method: &str) -> Kind {
        match method {
            v03::SEND | v10::SEND => Kind::Send,
            v03::STREAM | v10::STREAM => Kind::Stream,
            v03::GET_TASK | v10::GET_TASK => Kind::Get,
            v03::CANCEL_TASK | v10::CANCEL_TASK => Kind::Cancel,
            "tasks/resubscribe" | "SubscribeToTask" => Kind::Subscribe,
            v10::LIST_TASKS => Kind::List,
            m if m.contains("ushNotificationConfig") => Kind::PushConfig,
            _ => Kind::Other,
        }
    }

    /// Whether the answer is an event stream.
    pub(crate) fn streams(self) -> bool {
        matches!(self, Kind::Stream | Kind::Subscribe)
    }

    /// Whether the call carries a message.
    pub(crate) fn carries_message(self) -> bool {
        matches!(self, Kind::Send | Kind::Stream)
    }

    /// Whether the call names a task in its params.
    pub(crate) fn names_task(self) -> bool {
        matches!(
            self,
            Kind::Get | Kind::Cancel | Kind::Subscribe | Kind::PushConfig
        )
    }
}

/// A call received, with what the relay reads of it.
#[derive(Debug)]
pub(crate) struct Inbound {
    pub(crate) call: Call,
    pub(crate) kind: Kind,
    pub(crate) binding: Binding,
    /// The peer the request path names (`/peers/{id}/a2a`), if any.
    pub(crate) path_peer: Option<String>,
    /// The request's header fields.
    pub(crate) headers: std::sync::Arc<[(String, String)]>,
}

impl Inbound {
    /// A header value.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        crate::wire::http::header(&self.headers, name)
    }

    /// Every `Via` field of the call, joined as one list (RFC 9110 §5.3); empty if none.
    pub(crate) fn via(&self) -> String {
        let all: Vec<&str> = crate::wire::http::header_values(&self.headers, "via")
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect();
        all.join(", ")
    }

    /// How many relays the call has passed: its `Via` entries, or the message metadata
    /// `relay.hops`, whichever says more.
    pub(crate) fn hops(&self) -> u64 {
        let via = self.via();
        let entries = via.split(',').filter(|e| !e.trim().is_empty()).count() as u64;
        let meta = self
            .message()
            .and_then(|m| m.get("metadata"))
            .and_then(|m| m.get(META_HOPS))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        entries.max(meta)
    }

    /// The message a send or a stream carries.
    pub(crate) fn message(&self) -> Option<&Map<String, Value>> {
        self.call.params.get("message")?.as_object()
    }

    fn message_meta(&self, key: &str) -> Option<&str> {
        meta_str(self.message()?.get("metadata")?, key)
    }

    /// `key` in the message's metadata, else in the params'.
    fn meta(&self, key: &str) -> Option<&str> {
        let params_meta = || meta_str(self.call.params.get("metadata")?, key);
        self.message_meta(key).or_else(params_meta)
    }

    /// Who the call says it comes from: message metadata `agent.id`, else the params'
    /// metadata, else the `X-Agent-Id` header.
    pub(crate) fn sender(&self) -> Option<&str> {
        self.meta(META_SENDER)
            .or_else(|| self.header(SENDER_HEADER))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// The peer the call names: the path's, else `agent.target` in the message's or the
    /// params' metadata.
    pub(crate) fn named_target(&self) -> Option<&str> {
        self.path_peer.as_deref().or_else(|| {
            self.meta(META_TARGET)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        })
    }

    /// The task the call names: the message's `taskId`, or the params' `taskId` or `id` for
    /// task methods.
    pub(crate) fn task_id(&self) -> Option<&str> {
        let named = if self.kind.carries_message() {
            self.message()
                .and_then(|m| m.get("taskId").or_else(|| m.get("task_id")))
        } else if self.kind.names_task() {
            let p = &self.call.params;
            p.get("taskId")
                .or_else(|| p.get("task_id"))
                .or_else(|| p.get("id"))
        } else {
            None
        };
        named.and_then(Value::as_str).filter(|s| !s.is_empty())
    }

    /// The context the call's message names.
    pub(crate) fn context_id(&self) -> Option<&str> {
        self.message()
            .and_then(|m| m.get("contextId").or_else(|| m.get("context_id")))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The trace context the call came with: the `traceparent` header (the transport's own),
    /// else the message metadata's (where ddwire's harness puts it).
    pub(crate) fn trace_parent(&self) -> Option<SpanContext> {
        SpanContext::extract(self.header("traceparent"), self.header("tracestate")).or_else(|| {
            SpanContext::extract(
                self.message_meta(meta::TRACEPARENT),
                self.message_meta(meta::TRACESTATE),
            )
        })
    }
}

/// A string in metadata under `key` (`agent.target`): the flat key, or, when there is none, the
/// nested path (`{"agent": {"target": …}}`), since the seed's clients are read both ways.
fn meta_str<'a>(metadata: &'a Value, key: &str) -> Option<&'a str> {
    if let Some(v) = metadata.get(key) {
        return v.as_str();
    }
    let (outer, inner) = key.split_once('.')?;
    metadata.get(outer)?.get(inner)?.as_str()
}

/// Write `traceparent` (and `tracestate`, when it has members) into the message metadata of
/// `params`, as ddwire agents read them, replacing what the caller put there.
pub(crate) fn inject_trace(params: &mut Value, context: &SpanContext) {
    let Some(message) = params.get_mut("message").and_then(Value::as_object_mut) else {
        return;
    };
    let metadata = message
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    if let Some(m) = metadata.as_object_mut() {
        m.insert(
            meta::TRACEPARENT.into(),
            Value::String(context.traceparent()),
        );
        if context.trace_state.is_empty() {
            m.remove(meta::TRACESTATE);
        } else {
            m.insert(
                meta::TRACESTATE.into(),
                Value::String(context.trace_state.header()),
            );
        }
    }
}

/// Write the hop count `hops` into the message metadata of `params` (`relay.hops`).
pub(crate) fn inject_hops(params: &mut Value, hops: u64) {
    if let Some(m) = params
        .get_mut("message")
        .and_then(|m| m.get_mut("metadata"))
        .and_then(Value::as_object_mut)
    {
        m.insert(META_HOPS.into(), Value::from(hops));
    }
}

/// A task state as the relay records it: the v0.3 name (`completed`, `input-required`), read
/// from either binding's spelling by the one table of spellings; `None` for a state neither
/// binding names.
pub(crate) fn state_name(raw: &Value) -> Option<String> {
    let state = Binding::V10
        .state_from(raw)
        .or_else(|| Binding::V03.state_from(raw))?;
    Some(Binding::V03.state_name(state).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inbound(method: &str, params: Value, path_peer: Option<&str>) -> Inbound {
        Inbound {
            call: Call {
                id: Some(json!(1)),
                method: method.into(),
                params,
            },
            kind: Kind::of(method),
            binding: Binding::of_method(method).unwrap_or(Binding::V03),
            path_peer: path_peer.map(str::to_string),
            headers: vec![("x-agent-id".into(), "hdr".into())].into(),
        }
    }

    #[test]
    fn the_target_and_sender_come_from_the_seeds_metadata_keys_and_the_path_wins() {
        let params = json!({"message": {"messageId": "m", "metadata": {"agent.id": "A", "agent.target": "B"}}});
        let call = inbound("message/send", params.clone(), None);
        assert_eq!((call.sender(), call.named_target()), (Some("A"), Some("B")));
        let call = inbound("message/send", params, Some("C"));
        assert_eq!(call.named_target(), Some("C"));
        let call = inbound("GetTask", json!({"id": "t1"}), None);
        assert_eq!((call.sender(), call.task_id()), (Some("hdr"), Some("t1")));
        assert_eq!(call.named_target(), None);
    }

    #[test]
    fn the_seeds_keys_are_read_flat_or_nested() {
        let nested = json!({"message": {"messageId": "m", "metadata": {"agent": {"id": "A", "target": "B"}}}});
        let call = inbound("message/send", nested, None);
        assert_eq!((call.sender(), call.named_target()), (Some("A"), Some("B")));
        // A flat key wins over the nested one.
        let both = json!({"message": {"messageId": "m", "metadata": {"agent.target": "C", "agent": {"target": "B"}}}});
        assert_eq!(
            inbound("message/send", both, None).named_target(),
            Some("C")
        );
    }

    #[test]
    fn the_trace_context_is_written_into_the_message_metadata_replacing_the_callers() {
        let mut params = json!({"message": {"messageId": "m", "metadata": {"traceparent": "00-old-old-01", "tracestate": "x=1"}}});
        let ctx = SpanContext::extract(
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            None,
        )
        .unwrap();
        inject_trace(&mut params, &ctx);
        assert_eq!(
            params["message"]["metadata"],
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
        );
        let mut bare = json!({"message": {"messageId": "m"}});
        inject_trace(&mut bare, &ctx);
        assert!(bare["message"]["metadata"]["traceparent"].is_string());
    }

    #[test]
    fn state_names_are_read_from_either_binding() {
        for (raw, name) in [
            (json!("TASK_STATE_INPUT_REQUIRED"), Some("input-required")),
            (json!("completed"), Some("completed")),
            (json!(6), Some("input-required")),
            (json!("TASK_STATE_FROZEN"), None),
        ] {
            assert_eq!(state_name(&raw).as_deref(), name, "{raw}");
        }
    }
}
