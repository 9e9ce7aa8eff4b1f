//! Carrying a call between bindings: a caller's v0.3 call to a peer that offers 1.0 only (or
//! the other way round) is read in the caller's binding into ddwire's one A2A model and written
//! in the peer's, and the answer back the same way (A2A 1.0 §9 and v0.3 §3.2: the same
//! operations, spelled differently).
//!
//! Translated: sends and streams (the message, its metadata, and the send configuration's
//! `acceptedOutputModes`, `historyLength` and blocking, which v0.3 spells `blocking` and 1.0
//! `returnImmediately`), `tasks/get` and `tasks/cancel` (their params are the same in both), a
//! send's Task or Message, a task call's Task, and stream events. What the model does not hold
//! (a push notification config, fields neither binding defines) is not carried. Other methods
//! are not translated: the peer must offer the caller's binding.

use super::call::Kind;
use super::failure::Failure;
use crate::wire::a2a::codec::{
    decode_result, decode_send_params, decode_task, encode_result, encode_send_params, encode_task,
};
use crate::wire::a2a::error::DecodeError;
use crate::wire::a2a::{Binding, Operation};
use serde_json::{Map, Value};

/// The method `kind` is called in `binding`, when the relay translates it.
pub(crate) fn method(kind: Kind, binding: Binding) -> Option<&'static str> {
    let operation = match kind {
        Kind::Send => Operation::Send,
        Kind::Stream => Operation::Stream,
        Kind::Get => Operation::GetTask,
        Kind::Cancel => Operation::CancelTask,
        _ => return None,
    };
    Some(binding.method(operation))
}

/// A call's params, written for `to`; the failure says what in them could not be read, or
/// that the method is not translated.
pub(crate) fn params(
    kind: Kind,
    from: Binding,
    to: Binding,
    params: Value,
) -> Result<Value, Failure> {
    let invalid = |reason| Failure::InvalidParams {
        binding: from,
        reason,
    };
    match kind {
        Kind::Send | Kind::Stream => {
            let decoded = decode_send_params(from, params);
            let mut p = decoded.map_err(|e| invalid(e.to_string()))?;
            p.configuration = Some(Value::Object(configuration(
                p.configuration.as_ref(),
                from,
                to,
            )));
            Ok(encode_send_params(to, &p))
        }
        // `{"id", "historyLength"?, "metadata"?}` in both.
        Kind::Get | Kind::Cancel => Ok(Value::Object(members(
            &params,
            &["id", "historyLength", "metadata"],
        ))),
        _ => Err(invalid(
            "this method is not translated between bindings".into(),
        )),
    }
}

/// A send configuration for `to`: the members both bindings define.
fn configuration(c: Option<&Value>, from: Binding, to: Binding) -> Map<String, Value> {
    let Some(c) = c else {
        return Map::new();
    };
    let mut out = members(c, &["acceptedOutputModes", "historyLength"]);
    let returns_at_once = match from {
        Binding::V03 => c.get("blocking").and_then(Value::as_bool).map(|b| !b),
        Binding::V10 => c.get("returnImmediately").and_then(Value::as_bool),
    };
    if let Some(at_once) = returns_at_once {
        match to {
            Binding::V03 => out.insert("blocking".into(), Value::Bool(!at_once)),
            Binding::V10 => out.insert("returnImmediately".into(), Value::Bool(at_once)),
        };
    }
    out
}

/// The members of `v` named `keys`, those it has.
fn members(v: &Value, keys: &[&str]) -> Map<String, Value> {
    let member = |key: &&str| Some((key.to_string(), v.get(*key)?.clone()));
    keys.iter().filter_map(member).collect()
}

/// A peer's `result`, written for the caller's binding `to`.
pub(crate) fn result(
    kind: Kind,
    from: Binding,
    to: Binding,
    result: Value,
) -> Result<Value, DecodeError> {
    match kind {
        Kind::Send => {
            let r = decode_result(from, result)?;
            Ok(encode_result(to, &r))
        }
        // Both answer the Task itself, which 1.0 does not wrap as it wraps a send's.
        Kind::Get | Kind::Cancel => {
            let task = decode_task(from, result)?;
            Ok(encode_task(to, &task))
        }
        _ => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_v03_send_becomes_a_1_0_send_and_its_task_comes_back_in_v03() {
        let sent = json!({"message": {"kind": "message", "role": "user", "messageId": "m",
            "contextId": "c", "parts": [{"kind": "text", "text": "hi"}], "metadata": {"agent.target": "B"}},
            "configuration": {"blocking": false, "acceptedOutputModes": ["text/plain"], "pushNotificationConfig": {"url": "x"}}});
        let out = params(Kind::Send, Binding::V03, Binding::V10, sent).unwrap();
        assert_eq!(out["message"]["role"], "ROLE_USER");
        assert_eq!(out["message"]["parts"][0]["text"], "hi");
        assert_eq!(out["message"]["metadata"]["agent.target"], "B");
        assert_eq!(
            out["configuration"],
            json!({"acceptedOutputModes": ["text/plain"], "returnImmediately": true})
        );
        let answer = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let back = result(Kind::Send, Binding::V10, Binding::V03, answer).unwrap();
        assert_eq!(
            (back["kind"].as_str(), back["status"]["state"].as_str()),
            (Some("task"), Some("completed"))
        );
        let task =
            json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "canceled"}});
        let back = result(Kind::Cancel, Binding::V03, Binding::V10, task).unwrap();
        assert_eq!(back["status"]["state"], "TASK_STATE_CANCELED");
        assert!(back.get("task").is_none(), "{back}");
        assert!(params(Kind::List, Binding::V10, Binding::V03, json!({})).is_err());
    }
}
