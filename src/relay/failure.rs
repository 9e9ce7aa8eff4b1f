//! Why a hop failed, classed from typed errors (never from the words of a message), and the
//! JSON-RPC error the caller gets for it.
//!
//! | class | when | code answered |
//! |---|---|---|
//! | `topology_violation` | the star gate refused the route, before any forward | -32010 |
//! | `peer_404` | the peer answered HTTP 404, whatever its body | -32011 |
//! | `peer_timeout` | the peer did not answer (or went quiet mid-stream) in time | -32012 |
//! | `peer_disconnect` | nothing listens at the peer, or it closed the connection mid-answer | -32013 |
//! | `peer_invalid_reply` | the peer answered something outside HTTP, JSON-RPC or A2A | -32014 |
//! | `peer_jsonrpc_error` | the peer answered with a JSON-RPC error | the peer's own error, as sent |
//! | `unknown_peer` | the call names no peer, or one not registered, or a task none owns | -32015 |
//! | `binding_unsupported` | the peer offers no interface in the caller's binding, and the method is not translated | -32009 |
//! | `invalid_params` | the call's params cannot be read to translate them into the peer's binding | -32602 |
//! | `unsupported_operation` | a stream sent as a notification (no id): nobody to stream to | -32004 |
//! | `loop_detected` | the call has passed this relay already (its `Via`), or more relays than the hop limit | -32016 |
//! | `destination_refused` | the peer's address is one the relay may not reach (`--peer-allow`) | -32017 |
//! | `task_conflict` | the peer answered with a task id another peer owns: not passed on | -32018 |
//!
//! A relay-made error carries `data`: in the v0.3 binding `{"class", "peer"}`, in the 1.0
//! binding a `google.rpc.ErrorInfo` (`reason` the class in capitals, `domain`
//! [`ERROR_DOMAIN`], `metadata` `{"class", "peer"}`), as A2A 1.0 §9.5 shapes error data. Codes
//! are JSON-RPC server errors (-32000 to -32099) outside the -32001 to -32009 A2A assigns;
//! -32010 is the seed's code for the topology gate.

use super::topology::Violation;
use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::jsonrpc::RpcError;
use serde_json::{Value, json};
use std::fmt;

/// The `domain` of the ErrorInfo a relay-made 1.0 error carries.
pub(crate) const ERROR_DOMAIN: &str = "ddwire.relay";

/// A failure's class: the relay's `a2a.relay.failure_class` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FailureClass {
    TopologyViolation,
    Peer404,
    PeerTimeout,
    PeerDisconnect,
    PeerJsonrpcError,
    PeerInvalidReply,
    UnknownPeer,
    BindingUnsupported,
    UnsupportedOperation,
    InvalidParams,
    LoopDetected,
    DestinationRefused,
    TaskConflict,
}

impl FailureClass {
    /// Every class, for counts that list each.
    pub(crate) const ALL: [FailureClass; 13] = [
        FailureClass::TopologyViolation,
        FailureClass::Peer404,
        FailureClass::PeerTimeout,
        FailureClass::PeerDisconnect,
        FailureClass::PeerJsonrpcError,
        FailureClass::PeerInvalidReply,
        FailureClass::UnknownPeer,
        FailureClass::BindingUnsupported,
        FailureClass::UnsupportedOperation,
        FailureClass::InvalidParams,
        FailureClass::LoopDetected,
        FailureClass::DestinationRefused,
        FailureClass::TaskConflict,
    ];

    /// The class as the `a2a.relay.failure_class` attribute spells it.
    pub(crate) fn as_str(self) -> &'static str {
        // The discriminants run 0.. in the order of `ALL`, as `FAILURE_CLASSES` lists them.
        crate::trace::names::relay::FAILURE_CLASSES[self as usize]
    }

    /// The JSON-RPC code the relay answers with; `None` for a peer's own error, passed on.
    pub(crate) fn code(self) -> Option<i64> {
        match self {
            FailureClass::TopologyViolation => Some(-32010),
            FailureClass::Peer404 => Some(-32011),
            FailureClass::PeerTimeout => Some(-32012),
            FailureClass::PeerDisconnect => Some(-32013),
            FailureClass::PeerInvalidReply => Some(-32014),
            FailureClass::UnknownPeer => Some(-32015),
            FailureClass::BindingUnsupported => Some(crate::wire::jsonrpc::VERSION_NOT_SUPPORTED),
            FailureClass::UnsupportedOperation => Some(crate::wire::jsonrpc::UNSUPPORTED_OPERATION),
            FailureClass::InvalidParams => Some(crate::wire::jsonrpc::INVALID_PARAMS),
            FailureClass::LoopDetected => Some(-32016),
            FailureClass::DestinationRefused => Some(-32017),
            FailureClass::TaskConflict => Some(-32018),
            FailureClass::PeerJsonrpcError => None,
        }
    }

    /// The class of a failed call to a peer, by the error's type alone.
    pub(crate) fn of(e: &WireError) -> FailureClass {
        match e {
            WireError::HttpStatus { status: 404, .. } => FailureClass::Peer404,
            WireError::Timeout { .. } => FailureClass::PeerTimeout,
            // The relay interrupts none of its calls; were one, the peer's answer was not read.
            WireError::Connect { .. }
            | WireError::Disconnected { .. }
            | WireError::Tls { .. }
            | WireError::Interrupted { .. } => FailureClass::PeerDisconnect,
            WireError::JsonRpc { .. } => FailureClass::PeerJsonrpcError,
            WireError::Egress { .. } => FailureClass::DestinationRefused,
            // The relay's client signs nothing and opens no socket of its own to listen on,
            // so a signing or local I/O error is never met; were it, the call did not go out
            // as the caller meant it.
            WireError::HttpStatus { .. }
            | WireError::Protocol { .. }
            | WireError::Sign { .. }
            | WireError::Io { .. } => FailureClass::PeerInvalidReply,
        }
    }
}

/// Why the relay could not carry a call through.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The star gate refused the route.
    Topology(Violation),
    /// The call names no peer: no `agent.target`, no `/peers/{id}/a2a` path, no known task.
    NoTarget { method: String },
    /// The peer named is not registered.
    UnknownPeer { id: String, known: Vec<String> },
    /// The call names a task no peer is known to own.
    UnknownTask { id: String },
    /// The call to the peer failed.
    Peer { peer: String, error: WireError },
    /// The peer answered HTTP 200 with a JSON-RPC result that is no answer to the call (a
    /// send answered with neither a Task nor a Message, say), or its card offers no JSON-RPC.
    InvalidReply { peer: String, reason: String },
    /// The peer offers no interface in the binding the call came in.
    BindingUnsupported {
        peer: String,
        binding: Binding,
        offered: Vec<&'static str>,
    },
    /// The call's params could not be read to translate them for the peer's binding.
    InvalidParams { binding: Binding, reason: String },
    /// A stream sent as a notification: its events would answer no call.
    StreamWithoutId { method: String },
    /// The call came through this relay already, or through more relays than `limit`.
    Loop { reason: String },
    /// The peer answered for a task another peer owns.
    TaskConflict {
        peer: String,
        task: String,
        owner: String,
    },
}

impl Failure {
    /// The call to `peer` failed with `error`.
    pub(crate) fn from_peer(peer: &str, error: WireError) -> Failure {
        Failure::Peer {
            peer: peer.to_string(),
            error,
        }
    }

    /// `peer` answered something that is no answer to the call, for `reason`.
    pub(crate) fn invalid_reply(peer: &str, reason: String) -> Failure {
        Failure::InvalidReply {
            peer: peer.to_string(),
            reason,
        }
    }

    pub(crate) fn class(&self) -> FailureClass {
        match self {
            Failure::Topology(_) => FailureClass::TopologyViolation,
            Failure::NoTarget { .. }
            | Failure::UnknownPeer { .. }
            | Failure::UnknownTask { .. } => FailureClass::UnknownPeer,
            Failure::Peer { error, .. } => FailureClass::of(error),
            Failure::InvalidReply { .. } => FailureClass::PeerInvalidReply,
            Failure::BindingUnsupported { .. } => FailureClass::BindingUnsupported,
            Failure::StreamWithoutId { .. } => FailureClass::UnsupportedOperation,
            Failure::InvalidParams { .. } => FailureClass::InvalidParams,
            Failure::Loop { .. } => FailureClass::LoopDetected,
            Failure::TaskConflict { .. } => FailureClass::TaskConflict,
        }
    }

    /// The peer concerned, when there is one.
    pub(crate) fn peer(&self) -> Option<&str> {
        match self {
            Failure::Topology(v) => Some(&v.target),
            Failure::UnknownPeer { id, .. } => Some(id),
            Failure::Peer { peer, .. }
            | Failure::InvalidReply { peer, .. }
            | Failure::BindingUnsupported { peer, .. }
            | Failure::TaskConflict { peer, .. } => Some(peer),
            Failure::Loop { .. }
            | Failure::NoTarget { .. }
            | Failure::UnknownTask { .. }
            | Failure::StreamWithoutId { .. }
            | Failure::InvalidParams { .. } => None,
        }
    }

    /// The error the caller gets, written for `binding`.
    pub(crate) fn to_rpc(&self, binding: Binding) -> RpcError {
        if let Failure::Peer {
            error:
                WireError::JsonRpc {
                    code,
                    message,
                    data,
                },
            ..
        } = self
        {
            // The peer's own answer, passed on as it was sent.
            return RpcError {
                code: *code,
                message: message.clone(),
                data: data.clone(),
            };
        }
        let class = self.class();
        let mut error = RpcError::new(
            class.code().unwrap_or(crate::wire::jsonrpc::INTERNAL_ERROR),
            self.to_string(),
        );
        let mut detail = json!({ "class": class.as_str() });
        if let Some(peer) = self.peer() {
            detail["peer"] = Value::String(peer.to_string());
        }
        error.data = Some(match binding {
            Binding::V03 => detail,
            Binding::V10 => json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": class.as_str().to_ascii_uppercase(),
                "domain": ERROR_DOMAIN,
                "metadata": detail,
            }]),
        });
        error
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Topology(v) => v.fmt(f),
            Failure::NoTarget { method } => write!(
                f,
                "relay: {method} names no peer: set the message metadata \"agent.target\" to a peer id, or POST to /peers/{{id}}/a2a"
            ),
            Failure::UnknownPeer { id, known } => write!(
                f,
                "relay: no peer is registered as {id:?}; known: [{}]",
                known.join(", ")
            ),
            Failure::UnknownTask { id } => write!(
                f,
                "relay: no peer is known to own task {id:?} (the relay remembers the tasks it carried, newest first); POST to /peers/{{id}}/a2a to ask a peer directly"
            ),
            Failure::Peer { peer, error } => {
                let what = match FailureClass::of(error) {
                    FailureClass::Peer404 => "answered 404",
                    FailureClass::PeerTimeout => "timed out",
                    FailureClass::PeerDisconnect => "disconnected",
                    FailureClass::DestinationRefused => {
                        "is at a destination the relay may not reach"
                    }
                    _ => "answered outside the protocol",
                };
                write!(f, "relay: peer {peer:?} {what}: {error}")
            }
            Failure::InvalidReply { peer, reason } => write!(
                f,
                "relay: peer {peer:?} answered outside A2A, so nothing is passed on as its answer: {reason}"
            ),
            Failure::BindingUnsupported {
                peer,
                binding,
                offered,
            } => write!(
                f,
                "relay: peer {peer:?} offers no A2A {} JSON-RPC interface (its card offers [{}]), and this method is not translated: call it in a binding the peer offers",
                binding.version(),
                offered.join(", ")
            ),
            Failure::InvalidParams { binding, reason } => write!(
                f,
                "relay: the call's params are not A2A {} params, so they cannot be translated for the peer: {reason}",
                binding.version()
            ),
            Failure::Loop { reason } => write!(f, "relay: loop refused: {reason}"),
            Failure::TaskConflict { peer, task, owner } => write!(
                f,
                "relay: peer {peer:?} answered for task {task:?}, which peer {owner:?} owns: a peer cannot claim another's task, so nothing is passed on"
            ),
            Failure::StreamWithoutId { method } => write!(
                f,
                "relay: {method} streams its answer, and was sent as a notification (no id) that nothing may answer: give it an id"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_class_is_spelled_by_its_own_entry_of_the_names_list() {
        let spelled: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(spelled, crate::trace::names::relay::FAILURE_CLASSES);
        assert_eq!(FailureClass::PeerTimeout.as_str(), "peer_timeout");
        assert_eq!(FailureClass::TaskConflict.as_str(), "task_conflict");
    }

    fn peer(error: WireError) -> Failure {
        Failure::Peer {
            peer: "B".into(),
            error,
        }
    }

    #[test]
    fn each_wire_error_has_its_class_and_code() {
        let url = || "http://b.test/a2a".to_string();
        let cases = [
            (
                WireError::HttpStatus {
                    url: url(),
                    status: 404,
                    body: r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
                },
                "peer_404",
                -32011,
            ),
            (
                WireError::Timeout {
                    url: url(),
                    after: Duration::from_secs(1),
                },
                "peer_timeout",
                -32012,
            ),
            (
                WireError::Connect {
                    url: url(),
                    reason: "connection refused".into(),
                },
                "peer_disconnect",
                -32013,
            ),
            (
                WireError::Disconnected {
                    url: url(),
                    reason: "closed mid-answer".into(),
                },
                "peer_disconnect",
                -32013,
            ),
            (
                WireError::HttpStatus {
                    url: url(),
                    status: 502,
                    body: "<html>".into(),
                },
                "peer_invalid_reply",
                -32014,
            ),
            (
                WireError::protocol(Some("http://b.test"), "not JSON"),
                "peer_invalid_reply",
                -32014,
            ),
        ];
        for (error, class, code) in cases {
            let failure = peer(error);
            assert_eq!(failure.class().as_str(), class);
            let rpc = failure.to_rpc(Binding::V03);
            assert_eq!(rpc.code, code);
            assert_eq!(rpc.data.as_ref().unwrap()["class"], class);
            assert!(
                rpc.message.starts_with("relay: peer \"B\""),
                "{}",
                rpc.message
            );
        }
    }

    #[test]
    fn a_peers_json_rpc_error_is_passed_on_as_it_was_sent() {
        let failure = peer(WireError::JsonRpc {
            code: -32001,
            message: "Task t not found".into(),
            data: Some(json!([{"reason": "TASK_NOT_FOUND"}])),
        });
        assert_eq!(failure.class(), FailureClass::PeerJsonrpcError);
        let rpc = failure.to_rpc(Binding::V10);
        assert_eq!(
            (rpc.code, rpc.message.as_str()),
            (-32001, "Task t not found")
        );
        assert_eq!(rpc.data, Some(json!([{"reason": "TASK_NOT_FOUND"}])));
    }

    #[test]
    fn a_relay_error_in_the_1_0_binding_carries_an_error_info() {
        let rpc = Failure::UnknownPeer {
            id: "Z".into(),
            known: vec!["A".into()],
        }
        .to_rpc(Binding::V10);
        assert_eq!(rpc.code, -32015);
        assert_eq!(
            rpc.data.unwrap(),
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNKNOWN_PEER",
                    "domain": "ddwire.relay", "metadata": {"class": "unknown_peer", "peer": "Z"}}])
        );
    }
}
