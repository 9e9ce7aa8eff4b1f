//! The relay's HTTP routes (see the [module documentation](super)).

use super::Relay;
use super::call::{Inbound, Kind};
use super::failure::FailureClass;
use super::hop;
use super::peers::{HealthState, PeerSpec, Registered};
use crate::contract::tokens::{Role, find_token};
use crate::text::Unpoison;
use crate::wire::WireError;
use crate::wire::a2a::{Binding, CARD_PATH, JSONRPC_PATH, LEGACY_CARD_PATH};
use crate::wire::http::{Handler, Request, Response};
use crate::wire::jsonrpc::{self, Incoming, RpcError};
use serde_json::{Value, json};
use std::sync::Arc;

/// The deepest JSON a call may nest (as the agent server's limit).
const MAX_DEPTH: usize = 64;

/// The request handler of `relay`.
pub fn handler(relay: Arc<Relay>) -> Handler {
    Arc::new(move |request: Request| route(&relay, &request))
}

/// What a route asks of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// Nothing: liveness, readiness, and the peers' cards (which A2A clients fetch before
    /// they authenticate, as they do an agent's).
    Nothing,
    /// A known bearer token, when the relay has tokens.
    Caller,
    /// Registration allowed, and an admin token when the relay has tokens.
    Admin,
}

fn need(method: &str, path: &str) -> Need {
    match (method, path) {
        ("GET", "/livez" | "/healthz") => Need::Nothing,
        ("GET", p) if p.ends_with(CARD_PATH) || p.ends_with(LEGACY_CARD_PATH) => Need::Nothing,
        ("POST", "/peers") => Need::Admin,
        ("DELETE", p) if p.starts_with("/peers/") => Need::Admin,
        _ => Need::Caller,
    }
}

/// The browser rules (`serve`'s), then the caller's credentials, then the route.
fn route(relay: &Arc<Relay>, request: &Request) -> Response {
    let browser = &relay.browser;
    let path = request.path.trim_end_matches('/');
    let admitted = browser
        .admit(request)
        .and_then(|()| match request.method.as_str() {
            "POST" => browser.admit_body(request),
            _ => Ok(()),
        })
        .and_then(|()| authorize(relay, request, need(&request.method, path)));
    let response = match admitted {
        Ok(()) => route_to(relay, request, path),
        Err(refused) => refused,
    };
    browser.decorate(request, response)
}

/// Whether the caller may use a route that needs `need`: `Err` is the 401 or 403.
fn authorize(relay: &Relay, request: &Request, need: Need) -> Result<(), Response> {
    if need == Need::Admin && !relay.allow_registration {
        return Err(Response::error(
            403,
            "runtime registration is off: the relay's peers come from its --peers file; start it with --allow-registration (and --tokens with an admin entry) to change them over HTTP",
        ));
    }
    let (Some(tokens), Need::Caller | Need::Admin) = (&relay.tokens, need) else {
        return Ok(());
    };
    let token = find_token(tokens, request.header("authorization")).map_err(|e| {
        // RFC 6750 §3: a request without (valid) credentials is answered 401 with a challenge.
        Response::error(401, &e.to_string())
            .with_header("WWW-Authenticate", "Bearer realm=\"ddwire relay\"")
    })?;
    if need == Need::Admin && token.role != Role::Admin {
        return Err(Response::error(
            403,
            "changing the relay's peers takes a token whose tokens-file entry says \"role\": \"admin\"",
        ));
    }
    Ok(())
}

fn route_to(relay: &Arc<Relay>, request: &Request, path: &str) -> Response {
    let method = request.method.as_str();
    match (method, path) {
        ("POST", "" | JSONRPC_PATH) => rpc(relay, request, None),
        ("GET", "/livez") => Response::json(200, &json!({"status": "ok"})),
        ("GET", "/healthz") => healthz(relay),
        ("GET", "/peers") => list_peers(relay),
        ("POST", "/peers") => add_peer(relay, request),
        ("GET", CARD_PATH | LEGACY_CARD_PATH) => Response::json(200, &relay_card(relay)),
        (_, "/peers" | "/healthz" | "/livez" | JSONRPC_PATH | "") => {
            Response::error(405, "method not allowed")
        }
        _ => match path.strip_prefix("/peers/") {
            Some(rest) => peer_route(relay, request, rest),
            None => Response::error(404, &format!("no route {}", request.path)),
        },
    }
}

/// `/peers/{id}`, `/peers/{id}/a2a`, `/peers/{id}/.well-known/agent-card.json`.
fn peer_route(relay: &Arc<Relay>, request: &Request, rest: &str) -> Response {
    let (id, tail) = match rest.split_once('/') {
        Some((id, tail)) => (id, format!("/{tail}")),
        None => (rest, String::new()),
    };
    match (request.method.as_str(), tail.as_str()) {
        ("POST", JSONRPC_PATH | "") => rpc(relay, request, Some(id)),
        ("DELETE", "") => {
            if relay.registry.remove(id) {
                Response::json(200, &json!({"removed": id}))
            } else {
                Response::error(404, &format!("no peer is registered as {id:?}"))
            }
        }
        ("GET", "") => match relay.registry.get(id) {
            Some(peer) => Response::json(200, &peer.view(&relay.public_url())),
            None => Response::error(404, &format!("no peer is registered as {id:?}")),
        },
        ("GET", CARD_PATH | LEGACY_CARD_PATH) => peer_card(relay, request, id),
        _ => Response::error(404, &format!("no route {}", request.path)),
    }
}

/// One JSON-RPC request: a single call (a batch is refused: each call of a batch could go to
/// another peer, and a relay answers for one).
fn rpc(relay: &Arc<Relay>, request: &Request, path_peer: Option<&str>) -> Response {
    if let Some(e) = &request.body_error {
        return Response::error(e.status(), &e.to_string());
    }
    let call = match jsonrpc::parse(&request.body, MAX_DEPTH) {
        Incoming::Single(Ok(call)) => call,
        Incoming::Single(Err(error)) => return Response::json(200, &error),
        Incoming::Batch(_) => {
            let error = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "relay: a batch is not forwarded; send one call per request",
            );
            return Response::json(200, &jsonrpc::error(&Value::Null, &error));
        }
    };
    let Some(binding) = Binding::of_method(&call.method) else {
        let id = call.id.clone().unwrap_or(Value::Null);
        let error = RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!(
                "relay: {:?} is not an A2A method of either binding (v0.3 message/send, tasks/get, tasks/cancel; 1.0 SendMessage, GetTask, CancelTask)",
                call.method
            ),
        );
        return Response::json(200, &jsonrpc::error(&id, &error));
    };
    // The relay answers for the protocol as a peer would: a version it cannot carry for this
    // method is -32009 here, never forwarded as if it had been 1.0.
    let declared = crate::wire::a2a::endpoint::declared_version(request);
    if let Err(e) =
        crate::wire::a2a::endpoint::check_version(binding, declared.as_deref(), &call.method)
    {
        let id = call.id.clone().unwrap_or(Value::Null);
        return Response::json(200, &jsonrpc::error(&id, &e.to_rpc(binding)));
    }
    let inbound = Inbound {
        kind: Kind::of(&call.method),
        call,
        binding,
        path_peer: path_peer.map(str::to_string),
        headers: request.headers.clone(),
    };
    if inbound.kind.streams() && inbound.call.id.is_some() {
        return super::stream::carry_stream(relay.clone(), inbound);
    }
    let outcome = hop::carry(relay, &inbound);
    match hop::answer(&inbound, &outcome) {
        Some(text) => Response::bytes(200, "application/json", text.into_bytes()),
        None => Response::empty(204),
    }
}

/// The relay's own card, at its root: JSON-RPC at `/a2a` in both bindings, streaming, and a
/// skill per peer naming the `agent.target` that routes to it, so any A2A client (`ddwire
/// send URL --metadata '{"agent.target": "ID"}'`) can call through the relay's root.
fn relay_card(relay: &Relay) -> Value {
    let skills: Vec<Value> = relay
        .registry
        .all()
        .iter()
        .map(|p| {
            let id = &p.spec.id;
            json!({
                "id": id,
                "name": id,
                "description": format!(
                    "forwarded to peer {id}: send with message metadata \"agent.target\": \"{id}\", or to /peers/{id}/a2a"
                ),
                "tags": ["relay", "peer"],
            })
        })
        .collect();
    let mut card = crate::wire::a2a::card::base_card(
        "ddwire relay",
        "Relays A2A calls to the peer a message's metadata \"agent.target\" names (each peer is \
         a skill below; /peers/{id}/a2a names one by path); a call naming none is refused \
         with -32015, listing the peers.",
        env!("CARGO_PKG_VERSION"),
        &relay.public_url(),
        Vec::new(),
        skills,
    );
    card["capabilities"]["streaming"] = Value::Bool(true);
    card
}

fn list_peers(relay: &Relay) -> Response {
    let url = relay.public_url();
    let peers: Vec<Value> = relay.registry.all().iter().map(|p| p.view(&url)).collect();
    Response::json(200, &json!({ "peers": peers }))
}

/// `POST /peers`: register (or replace) a peer, and fetch its card at once (within
/// [`super::CARD_TIMEOUT`], carrying the relay's `Via`). A peer that is the relay itself, or
/// at an address the egress policy refuses, is refused with 400.
fn add_peer(relay: &Relay, request: &Request) -> Response {
    if let Some(e) = &request.body_error {
        return Response::error(e.status(), &e.to_string());
    }
    let doc = match crate::json::parse(&request.body, crate::json::Limits::DEFAULT) {
        Ok(doc) => doc,
        Err(e) => return Response::error(400, &format!("the body is not JSON: {e}")),
    };
    let spec = match PeerSpec::from_json(&doc).and_then(|spec| {
        spec.check_destination(&relay.egress)?;
        relay.refuse_itself(&spec)?;
        Ok(spec)
    }) {
        Ok(spec) => spec,
        Err(e) => return Response::error(400, &e.to_string()),
    };
    let (id, url) = (spec.id.clone(), spec.url.clone());
    let status = match relay.registry.register(spec) {
        Ok(Registered::Added) => 201,
        Ok(Registered::Replaced) => 200,
        Err(e) => return Response::error(409, &e.to_string()),
    };
    let _ = relay.fetch_card(&id, &url, "");
    match relay.registry.get(&id) {
        Some(peer) => Response::json(status, &peer.view(&relay.public_url())),
        None => Response::error(409, &format!("peer {id:?} was removed meanwhile")),
    }
}

/// A peer's card, with every interface URL pointing at the relay's route for it. A card
/// request that has passed this relay already (its `Via`) is a peer URL leading back here:
/// 508 Loop Detected (RFC 5842 §7.2) rather than another fetch.
fn peer_card(relay: &Relay, request: &Request, id: &str) -> Response {
    let via = request.header_joined("via").unwrap_or_default();
    if hop::via_names(&via, &relay.via_name) {
        return Response::error(
            508,
            &format!(
                "peer {id:?} leads back to this relay (its card request carries this relay's Via): a relay is not its own peer"
            ),
        );
    }
    let hops = via.split(',').filter(|e| !e.trim().is_empty()).count();
    if hops >= relay.max_hops as usize {
        return Response::error(
            508,
            &format!(
                "the card request has passed {hops} relays, the most this relay carries on is {}",
                relay.max_hops
            ),
        );
    }
    if let Some(peer) = relay.registry.get(id)
        && peer.card.is_none()
    {
        let fetched = relay.fetch_card(id, &peer.spec.url, &via);
        // 508 Loop Detected (RFC 5842 §7.2): the fetch came back to a relay it had passed.
        if matches!(fetched, Err(WireError::HttpStatus { status: 508, .. })) {
            return Response::error(
                508,
                &format!("peer {id:?}'s card leads back to a relay this request has passed"),
            );
        }
    }
    // Read after any fetch, which recorded the card or why there is none.
    let Some(peer) = relay.registry.get(id) else {
        return Response::error(404, &format!("no peer is registered as {id:?}"));
    };
    let Some(card) = peer.card.as_deref() else {
        let why = peer.card_error.as_deref().unwrap_or("no card");
        return Response::error(502, &format!("peer {id:?} serves no usable card: {why}"));
    };
    let via = format!("{}/peers/{id}{JSONRPC_PATH}", relay.public_url());
    Response::json(200, &point_at(card, &via))
}

/// `card` with its `url` and every interface's `url` replaced by `via`.
fn point_at(card: &Value, via: &str) -> Value {
    let mut card = card.clone();
    if card.get("url").is_some_and(Value::is_string) {
        card["url"] = Value::String(via.to_string());
    }
    for list in ["supportedInterfaces", "additionalInterfaces"] {
        if let Some(items) = card.get_mut(list).and_then(Value::as_array_mut) {
            for item in items {
                if item.get("url").is_some_and(Value::is_string) {
                    item["url"] = Value::String(via.to_string());
                }
            }
        }
    }
    card
}

/// `GET /healthz`: readiness, from the peers' last health check (the background one, or a
/// forward's outcome): 200 when every peer is up (or there is none), 200 `degraded` when some
/// are, 503 when none is.
fn healthz(relay: &Relay) -> Response {
    let peers = relay.registry.all();
    let up = peers
        .iter()
        .filter(|p| p.health.state == HealthState::Up)
        .count();
    let status = if up == peers.len() {
        "ok"
    } else if up > 0 {
        "degraded"
    } else {
        "unavailable"
    };
    let each: Vec<Value> = peers
        .iter()
        .map(|p| {
            json!({"id": p.spec.id, "role": p.spec.role.as_str(), "state": p.health.state.as_str(),
                   "detail": p.health.detail})
        })
        .collect();
    let counts = relay.counts.lock().unpoisoned();
    let failed: serde_json::Map<String, Value> = FailureClass::ALL
        .iter()
        .map(|class| {
            let n = counts.failed.get(class).copied().unwrap_or(0);
            (class.as_str().to_string(), json!(n))
        })
        .collect();
    let body = json!({
        "status": status,
        "peers": {"configured": peers.len(), "up": up, "each": each},
        "topology": relay.topology.as_str(),
        "tasks_known": relay.owners.len(),
        "forwarded": counts.forwarded,
        "failed": failed,
        "traces": {
            "dir": relay.sink.dir.as_ref().map(|d| d.display().to_string()),
            "spans_written": relay.sink.spans_written.load(std::sync::atomic::Ordering::Relaxed),
            "write_errors": relay.sink.write_errors.load(std::sync::atomic::Ordering::Relaxed),
        },
        "export": relay.sink.exporter.as_ref().map(|x| {
            let s = x.stats();
            json!({"endpoint": x.config().endpoint, "stats": format!("{s:?}")})
        }),
    });
    Response::json(if status == "unavailable" { 503 } else { 200 }, &body)
}
