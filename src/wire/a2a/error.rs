//! Why an A2A call is refused, as a typed error, and how each binding writes it.
//!
//! A2A 1.0 §5.4 (and §9.5 for JSON-RPC) assigns each error a JSON-RPC code; the v0.3 binding
//! uses the same codes (0.3 §8.2). In the 1.0 binding every error also carries `error.data`, an
//! array holding a `google.rpc.ErrorInfo` (`@type`, `reason`, `domain: "a2a-protocol.org"`,
//! `metadata`), as a2a-sdk 1.3.0 sends it and the 1.0 TCK requires (JSONRPC-ERR-003); a
//! validation error adds a `google.rpc.BadRequest` naming the field. The v0.3 binding leaves
//! `data` out: 0.3 §6.12 makes it free-form, and its clients map errors by code.

use super::Binding;
use super::model::TaskState;
use crate::wire::jsonrpc::{self, RpcError};
use serde_json::{Value, json};
use std::fmt;

/// The `domain` of every ErrorInfo A2A errors carry.
pub(crate) const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The JSON-RPC code of a non-blocking send refused because the endpoint already runs as
/// many tasks in the background as it may: a server error (JSON-RPC 2.0 §5.1) outside the
/// -32001 to -32009 that A2A assigns.
pub(crate) const BACKGROUND_FULL: i64 = -32041;

/// The JSON-RPC code of a blocking call still running when the server's drain deadline passed:
/// its task was canceled and answered with this server error, rather than a closed connection.
pub(crate) const SHUTTING_DOWN: i64 = -32042;

/// Why a binding's JSON does not decode into the model: the location (`params.message.role`)
/// and what is wrong there. Written as `<at> <reason>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub(crate) at: String,
    pub(crate) reason: String,
}

impl DecodeError {
    pub(crate) fn new(at: impl Into<String>, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            at: at.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.at, self.reason)
    }
}

/// Why an A2A call was refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum A2aError {
    /// The params break the method's schema: `field` (a path such as `params.message.parts`,
    /// empty when the whole params are at fault) and why. -32602.
    InvalidParams { field: String, reason: String },
    /// No task has this id (A2A 1.0 §3.4.2, §3.1.3). -32001.
    TaskNotFound { id: String },
    /// The task has reached a terminal state and accepts no further message (1.0 §3.1.1,
    /// 0.3 §7.1). -32004 in both bindings.
    TaskTerminal { id: String, state: TaskState },
    /// The task is still being worked on and is not waiting for input, so a message cannot
    /// continue it. -32004.
    TaskBusy { id: String, state: TaskState },
    /// The message names a task and a context that is not the task's (1.0 §3.4.3). -32602.
    ContextMismatch {
        context_id: String,
        task_id: String,
        task_context_id: String,
    },
    /// The task is in a state that cannot be canceled (1.0 §3.1.5). -32002.
    TaskNotCancelable { id: String, state: TaskState },
    /// Push notifications are declared absent. -32003.
    PushNotificationNotSupported,
    /// The operation is not supported here; the text says which and why. -32004.
    Unsupported { what: String },
    /// No authenticated extended card is configured. -32007.
    ExtendedCardNotConfigured,
    /// The `A2A-Version` declared is not the method's binding (1.0 §3.6.2). -32009.
    VersionNotSupported {
        declared: String,
        method: String,
        expected: &'static str,
    },
    /// The method is not one of either binding. -32601.
    MethodNotFound { method: String },
    /// The caller's credentials name no principal. -32600.
    Unauthenticated { reason: String },
    /// A non-blocking send when the endpoint already runs `limit` tasks in the background.
    /// [`BACKGROUND_FULL`].
    BackgroundFull { limit: usize },
    /// A non-blocking send or stream by an owner already holding `share` of the endpoint's
    /// `limit` background slots. [`BACKGROUND_FULL`].
    BackgroundShareFull { share: usize, limit: usize },
    /// The server's drain deadline passed while the call's task ran: the task was canceled.
    /// [`SHUTTING_DOWN`].
    ShuttingDown { id: String },
    /// Something on this side failed; the text says what. -32603.
    Internal { what: String },
}

impl A2aError {
    /// An [`A2aError::InvalidParams`] for `field`.
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> A2aError {
        A2aError::InvalidParams {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The JSON-RPC error code.
    pub(crate) fn code(&self) -> i64 {
        match self {
            A2aError::InvalidParams { .. } | A2aError::ContextMismatch { .. } => {
                jsonrpc::INVALID_PARAMS
            }
            A2aError::TaskNotFound { .. } => jsonrpc::TASK_NOT_FOUND,
            A2aError::TaskTerminal { .. }
            | A2aError::TaskBusy { .. }
            | A2aError::Unsupported { .. } => jsonrpc::UNSUPPORTED_OPERATION,
            A2aError::TaskNotCancelable { .. } => jsonrpc::TASK_NOT_CANCELABLE,
            A2aError::PushNotificationNotSupported => jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED,
            A2aError::ExtendedCardNotConfigured => jsonrpc::EXTENDED_CARD_NOT_CONFIGURED,
            A2aError::VersionNotSupported { .. } => jsonrpc::VERSION_NOT_SUPPORTED,
            A2aError::MethodNotFound { .. } => jsonrpc::METHOD_NOT_FOUND,
            A2aError::Unauthenticated { .. } => jsonrpc::INVALID_REQUEST,
            A2aError::BackgroundFull { .. } | A2aError::BackgroundShareFull { .. } => {
                BACKGROUND_FULL
            }
            A2aError::ShuttingDown { .. } => SHUTTING_DOWN,
            A2aError::Internal { .. } => jsonrpc::INTERNAL_ERROR,
        }
    }

    /// The ErrorInfo `reason` of this error (a2a-sdk's `A2A_ERROR_MAPPING`, which the TCK's
    /// requirement base lists).
    pub(crate) fn reason(&self) -> &'static str {
        match self.code() {
            jsonrpc::TASK_NOT_FOUND => "TASK_NOT_FOUND",
            jsonrpc::TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
            jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            jsonrpc::UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
            jsonrpc::EXTENDED_CARD_NOT_CONFIGURED => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            jsonrpc::VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
            jsonrpc::INVALID_PARAMS => "INVALID_PARAMS",
            jsonrpc::METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
            jsonrpc::INVALID_REQUEST => "INVALID_REQUEST",
            BACKGROUND_FULL => "RESOURCE_EXHAUSTED",
            SHUTTING_DOWN => "UNAVAILABLE",
            _ => "INTERNAL_ERROR",
        }
    }

    /// The JSON-RPC error object this error is in `binding`.
    pub(crate) fn to_rpc(&self, binding: Binding) -> RpcError {
        let mut error = RpcError::new(self.code(), self.to_string());
        if binding == Binding::V10 {
            error.data = Some(self.details());
        }
        error
    }

    /// The A2A 1.0 `error.data`: an ErrorInfo, and for a validation error a BadRequest.
    pub(crate) fn details(&self) -> Value {
        let mut metadata = serde_json::Map::new();
        let mut details = Vec::new();
        // As a2a-sdk 1.3.0 writes them: `metadata` empty, except for a validation error,
        // which names its field there and in a BadRequest.
        if let A2aError::InvalidParams { field, reason } = self
            && !field.is_empty()
        {
            metadata.insert(
                "errors".into(),
                json!([{"field": field, "message": reason}]),
            );
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": reason}],
            }));
        }
        details.insert(
            0,
            json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": self.reason(),
                "domain": ERROR_DOMAIN,
                "metadata": metadata,
            }),
        );
        Value::Array(details)
    }
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            A2aError::InvalidParams { field, reason } if field.is_empty() => {
                write!(f, "Invalid parameters: {reason}")
            }
            A2aError::InvalidParams { field, reason } => {
                write!(f, "Invalid parameters: {field} {reason}")
            }
            // The SDKs' words for it, on every method.
            A2aError::TaskNotFound { .. } => f.write_str("Task not found"),
            A2aError::TaskTerminal { id, state } => write!(
                f,
                "Task {id} is in terminal state {}: it accepts no further message; start a new \
                 task (in the same context, if you like)",
                state_label(*state)
            ),
            A2aError::TaskBusy { id, state } => write!(
                f,
                "Task {id} is {}, not waiting for input: a message can continue it only once it \
                 asks for input",
                state_label(*state)
            ),
            A2aError::ContextMismatch {
                context_id,
                task_id,
                task_context_id,
            } => write!(
                f,
                "Context {context_id} does not match context {task_context_id} of task {task_id}"
            ),
            A2aError::TaskNotCancelable { id, state } => write!(
                f,
                "Task cannot be canceled: task {id} is in terminal state {}",
                state_label(*state)
            ),
            A2aError::PushNotificationNotSupported => {
                f.write_str("Push Notification is not supported")
            }
            A2aError::Unsupported { what } => write!(f, "This operation is not supported: {what}"),
            A2aError::ExtendedCardNotConfigured => {
                f.write_str("Authenticated Extended Card is not configured")
            }
            A2aError::VersionNotSupported {
                declared,
                method,
                expected,
            } => write!(
                f,
                "A2A version '{declared}' is not supported by this handler for {method}. \
                 Expected version '{expected}'."
            ),
            A2aError::MethodNotFound { method } => write!(f, "Method not found: {method}"),
            A2aError::Unauthenticated { reason } => write!(f, "Unauthenticated: {reason}"),
            A2aError::BackgroundFull { limit } => write!(
                f,
                "This server already runs {limit} tasks in the background, its limit: send \
                 blocking, or again once one has finished"
            ),
            A2aError::BackgroundShareFull { share, limit } => write!(
                f,
                "You already run {share} tasks in the background, one principal's share of \
                 this server's {limit}: send blocking, or again once one of yours has finished"
            ),
            A2aError::ShuttingDown { id } => write!(
                f,
                "shutting_down: the server reached its drain deadline while task {id} ran; the \
                 task was canceled (GetTask shows it where the server keeps its tasks); send \
                 the message again once a server is up"
            ),
            A2aError::Internal { what } => write!(f, "Internal error: {what}"),
        }
    }
}

impl std::error::Error for A2aError {}

/// A state as the 1.0 enum names it (`TASK_STATE_COMPLETED`), the spelling both SDKs' messages
/// use.
fn state_label(state: TaskState) -> &'static str {
    super::Binding::V10.state_name(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_error_carries_error_info_and_a_0_3_error_none() {
        let e = A2aError::TaskNotFound { id: "t-1".into() };
        let v10 = e.to_rpc(Binding::V10);
        assert_eq!(v10.code, -32001);
        let data = v10.data.unwrap();
        assert_eq!(data[0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(data[0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(data[0]["domain"], "a2a-protocol.org");
        assert_eq!(e.to_rpc(Binding::V03).data, None);
    }

    #[test]
    fn a_validation_error_names_its_field_in_a_bad_request() {
        let e = A2aError::invalid("params.message.parts", "must hold at least one part");
        assert_eq!(e.code(), -32602);
        let data = e.details();
        assert_eq!(data[0]["reason"], "INVALID_PARAMS");
        assert_eq!(
            data[1]["fieldViolations"][0]["field"],
            "params.message.parts"
        );
        assert_eq!(
            e.to_string(),
            "Invalid parameters: params.message.parts must hold at least one part"
        );
    }
}
