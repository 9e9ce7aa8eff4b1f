//! Raw A2A JSON-RPC calls for the conformance tests, in either binding, over real HTTP/1.1
//! bytes (loopback TCP or the in-memory transport): the request body is written here by hand,
//! so a test sees exactly what a client of that binding would send and get back.
#![allow(dead_code)]

use ddwire::wire::http::client::{ClientRequest, HttpClient};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub const T: Duration = Duration::from_secs(20);

/// One binding, as a client writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum B {
    V03,
    V10,
}

pub const BOTH: [B; 2] = [B::V03, B::V10];

impl B {
    pub fn send(self) -> &'static str {
        match self {
            B::V03 => "message/send",
            B::V10 => "SendMessage",
        }
    }

    pub fn get(self) -> &'static str {
        match self {
            B::V03 => "tasks/get",
            B::V10 => "GetTask",
        }
    }

    pub fn cancel(self) -> &'static str {
        match self {
            B::V03 => "tasks/cancel",
            B::V10 => "CancelTask",
        }
    }

    /// A user message with one text part.
    pub fn text(self, id: &str, text: &str) -> Value {
        match self {
            B::V03 => json!({"kind": "message", "messageId": id, "role": "user",
                             "parts": [{"kind": "text", "text": text}]}),
            B::V10 => json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}),
        }
    }

    /// A user message with one data part.
    pub fn data(self, id: &str, data: Value) -> Value {
        match self {
            B::V03 => json!({"kind": "message", "messageId": id, "role": "user",
                             "parts": [{"kind": "data", "data": data}]}),
            B::V10 => json!({"messageId": id, "role": "ROLE_USER", "parts": [{"data": data}]}),
        }
    }

    /// A state as this binding spells it (`completed` → `TASK_STATE_COMPLETED`).
    pub fn state(self, state: &str) -> String {
        match self {
            B::V03 => state.to_string(),
            B::V10 => format!("TASK_STATE_{}", state.replace('-', "_").to_uppercase()),
        }
    }

    /// `configuration` asking for a non-blocking send.
    pub fn non_blocking(self) -> Value {
        match self {
            B::V03 => json!({"blocking": false}),
            B::V10 => json!({"returnImmediately": true}),
        }
    }

    /// The task a send answered with.
    pub fn sent_task(self, response: &Value) -> Value {
        let result = &response["result"];
        match self {
            B::V03 => result.clone(),
            B::V10 => result["task"].clone(),
        }
    }
}

/// A JSON-RPC client for one endpoint URL.
#[derive(Clone)]
pub struct Rpc {
    pub http: HttpClient,
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl Rpc {
    pub fn tcp(url: &str) -> Rpc {
        Rpc {
            http: HttpClient::tcp(),
            url: url.to_string(),
            headers: Vec::new(),
        }
    }

    pub fn memory(http: HttpClient, url: &str) -> Rpc {
        Rpc {
            http,
            url: url.to_string(),
            headers: Vec::new(),
        }
    }

    /// The same client, sending `name: value` on every call.
    pub fn with_header(&self, name: &str, value: &str) -> Rpc {
        let mut rpc = self.clone();
        rpc.headers.push((name.into(), value.into()));
        rpc
    }

    /// One call in `binding` (A2A-Version: 1.0 for the 1.0 binding, none for 0.3): the whole
    /// JSON-RPC response.
    pub fn call(&self, binding: B, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = ClientRequest::post_json(&self.url, body.to_string().into_bytes(), T);
        if binding == B::V10 {
            request = request.header("A2A-Version", "1.0");
        }
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let response = self.http.send(request).expect("the server answers");
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        let value: Value = serde_json::from_slice(&response.body).expect("a JSON-RPC response");
        assert_eq!(value["id"], 7, "{value}");
        value
    }

    /// A call that must succeed: its `result`.
    pub fn ok(&self, binding: B, method: &str, params: Value) -> Value {
        let response = self.call(binding, method, params);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// A call that must fail: its `error`.
    pub fn err(&self, binding: B, method: &str, params: Value) -> Value {
        let response = self.call(binding, method, params);
        assert!(response.get("result").is_none(), "{method}: {response}");
        response["error"].clone()
    }

    /// Send `message` (blocking) and return the task.
    pub fn send(&self, binding: B, message: Value) -> Value {
        let response = self.call(binding, binding.send(), json!({ "message": message }));
        assert!(response.get("error").is_none(), "{response}");
        binding.sent_task(&response)
    }

    /// `GetTask` / `tasks/get`.
    pub fn get(&self, binding: B, id: &str) -> Value {
        self.ok(binding, binding.get(), json!({ "id": id }))
    }

    /// Poll `GetTask` until the task's state is `state` (as the binding spells it), within a
    /// generous deadline.
    pub fn wait_for(&self, binding: B, id: &str, state: &str) -> Value {
        let want = binding.state(state);
        let until = Instant::now() + T;
        loop {
            let task = self.get(binding, id);
            if task["status"]["state"] == want.as_str() {
                return task;
            }
            assert!(
                Instant::now() < until,
                "task {id} never reached {want}: {task}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The A2A 1.0 ErrorInfo `reason` of an error, if it carries one.
pub fn error_reason(error: &Value) -> Option<&str> {
    error["data"]
        .as_array()?
        .iter()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")?["reason"]
        .as_str()
}

/// The texts of a message's parts.
pub fn texts(message: &Value) -> Vec<String> {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
