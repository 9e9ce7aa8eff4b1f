//! `GET /healthz`: whether this harness is ready to take invocations, and why not.
//!
//! Liveness (`GET /livez`) only says the process answers; readiness says whether work sent
//! here can succeed. The harness is ready when its run store can be written (or it was opened
//! `--read-only` on purpose), at least one agent is available, and it is not draining. The
//! answer is JSON in every case, 200 when ready and 503 when not (the status a load balancer
//! or a Kubernetes readiness probe acts on), with the reasons named:
//!
//! ```json
//! {"status": "ready", "ready": true, "reasons": [],
//!  "store": {"writable": true, "read_only": false},
//!  "agents": {"available": 2, "configured": 6, "unavailable": {"…": "…"}, "incompatible": {}},
//!  "runs_in_flight": 0, "connections": 1,
//!  "export": {"endpoint": "http://…/v1/traces", "queued": 0, "dropped_batches": 0, …}}
//! ```

use super::served::Harness;
use crate::wire::http::Response;
use crate::wire::http::server::OpenConnections;
use serde_json::{Value, json};

/// The readiness answer.
pub(crate) fn readiness(harness: &Harness, connections: &Option<OpenConnections>) -> Response {
    let conductor = &harness.conductor;
    let mut reasons = Vec::new();
    let read_only = !conductor.store.is_writable();
    let store = if read_only {
        json!({ "writable": false, "read_only": true })
    } else {
        match conductor.store.probe_writable() {
            Ok(()) => json!({ "writable": true, "read_only": false }),
            Err(e) => {
                reasons.push(format!("the run store cannot be written: {e}"));
                json!({ "writable": false, "read_only": false, "error": e.to_string() })
            }
        }
    };
    let registry = &conductor.registry;
    let available = registry.len();
    let unavailable = registry.unavailable();
    let incompatible = registry.incompatible();
    if available == 0 {
        reasons.push(format!(
            "no agent is available ({} configured, {} unavailable, {} incompatible); they are \
             fetched again in the background, or at once with POST /agents/refresh",
            registry.configured(),
            unavailable.len(),
            incompatible.len()
        ));
    }
    let draining = harness.drain.is_started();
    if draining {
        reasons.push("the harness is draining: it is shutting down".into());
    }
    let export = conductor.otlp.as_ref().map(|x| {
        let mut stats = serde_json::to_value(x.stats()).unwrap_or(Value::Null);
        if let Some(map) = stats.as_object_mut() {
            map.insert("endpoint".into(), json!(x.config().endpoint));
        }
        stats
    });
    let ready = reasons.is_empty();
    let body = json!({
        "status": if draining { "draining" } else if ready { "ready" } else { "not ready" },
        "ready": ready,
        "reasons": reasons,
        "store": store,
        "agents": {
            "available": available,
            "configured": registry.configured(),
            "unavailable": unavailable,
            "incompatible": incompatible,
        },
        "runs_in_flight": conductor.running(),
        "connections": connections.as_ref().map(OpenConnections::get),
        "export": export,
    });
    Response::json(if ready { 200 } else { 503 }, &body)
}
