//! What a card says, as the probes read it: which generations it parses as (A2A 0.3 §5.5,
//! A2A 1.0 §4.4.1), where each binding is served (0.3 §5.6, 1.0 §8.3), every URL it
//! advertises, its Data Director description, and the message a check sends when the user
//! gives none.

use super::CheckError;
use crate::contract::spec::AgentSpec;
use crate::wire::a2a::card::{
    EXTENSION_URI, MANIFEST_EXTENSION_URI, extension_params, jsonrpc_interfaces,
};
use crate::wire::a2a::model::{Message, Part, Role};
use crate::wire::a2a::{Binding, codec::decode_message};
use serde_json::{Map, Value, json};

/// The card as fetched.
#[derive(Clone, Debug)]
pub(crate) struct Card {
    pub(crate) value: Value,
    /// The URL it was read from.
    pub(crate) url: String,
    /// Read from the pre-0.3 `agent.json` because `agent-card.json` was not there.
    pub(crate) legacy_path: bool,
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Where the card serves JSON-RPC in `binding`, if it declares that binding at all: the first
/// such interface by the one rule clients follow ([`jsonrpc_interfaces`]: 1.0 §8.3, else 0.3
/// §5.6).
pub(crate) fn jsonrpc_url(card: &Value, binding: Binding) -> Option<String> {
    jsonrpc_interfaces(card)
        .into_iter()
        .find_map(|(b, url)| (b == binding).then_some(url))
}

/// Every URL the card advertises for an interface, with where it says so.
pub(crate) fn interface_urls(card: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(url) = text(card, "url") {
        out.push(("url".to_string(), url.to_string()));
    }
    for key in ["supportedInterfaces", "additionalInterfaces"] {
        let list = card
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (i, entry) in list.enumerate() {
            if let Some(url) = text(entry, "url") {
                out.push((format!("{key}[{i}].url"), url.to_string()));
            }
        }
    }
    out
}

/// Why a URL a card advertises names no host.
#[derive(Debug, PartialEq)]
pub(crate) enum NoHost {
    NotAbsolute,
    UnclosedIpv6,
    Empty,
}

impl std::fmt::Display for NoHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoHost::NotAbsolute => "not an absolute URL",
            NoHost::UnclosedIpv6 => "an unclosed IPv6 literal",
            NoHost::Empty => "no host",
        })
    }
}

/// The host of an absolute URL (brackets of an IPv6 literal removed).
pub(crate) fn host_of(url: &str) -> Result<&str, NoHost> {
    let (_, rest) = url.split_once("://").ok_or(NoHost::NotAbsolute)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split_once(']')
            .map(|(h, _)| h)
            .ok_or(NoHost::UnclosedIpv6)?
    } else {
        hostport.split(':').next().unwrap_or("")
    };
    if host.is_empty() {
        Err(NoHost::Empty)
    } else {
        Ok(host)
    }
}

/// Whether a host is an address that means "every interface" (`0.0.0.0`, `::`): a server
/// binds it, but no client can reach it.
pub(crate) fn is_bind_all(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
}

/// The problems that keep a card from reading as `generation`, or `None` when the card does
/// not claim that generation at all.
pub(crate) fn generation_problems(card: &Value, binding: Binding) -> Option<Vec<String>> {
    let (claim, keys): (&str, &[&str]) = match binding {
        Binding::V03 => ("url", &["name", "description", "version", "url"]),
        Binding::V10 => ("supportedInterfaces", &["name", "description", "version"]),
    };
    card.get(claim)?;
    let mut problems = Vec::new();
    need_text(&mut problems, card, "", keys);
    if binding == Binding::V10 {
        match card.get(claim).and_then(Value::as_array) {
            Some(list) if !list.is_empty() => {
                for (i, entry) in list.iter().enumerate() {
                    let keys = ["url", "protocolBinding", "protocolVersion"];
                    need_text(&mut problems, entry, &format!("{claim}[{i}]."), &keys);
                }
            }
            _ => problems.push("supportedInterfaces must be a non-empty list".into()),
        }
    }
    if !card.get("capabilities").is_some_and(Value::is_object) {
        problems.push("capabilities must be an object".into());
    }
    for key in ["defaultInputModes", "defaultOutputModes"] {
        if !is_text_list(card.get(key)) {
            problems.push(format!("{key} must be a list of strings"));
        }
    }
    match card.get("skills").and_then(Value::as_array) {
        None => problems.push("skills must be a list".into()),
        Some(skills) => {
            for (i, skill) in skills.iter().enumerate() {
                let keys = ["id", "name", "description"];
                need_text(&mut problems, skill, &format!("skills[{i}]."), &keys);
                if !is_text_list(skill.get("tags")) {
                    problems.push(format!("skills[{i}].tags must be a list of strings"));
                }
            }
        }
    }
    if let Some(ext) = card.get("capabilities").and_then(|c| c.get("extensions")) {
        match ext.as_array() {
            Some(list) => {
                for (i, e) in list.iter().enumerate() {
                    let at = format!("capabilities.extensions[{i}].");
                    need_text(&mut problems, e, &at, &["uri"]);
                }
            }
            None => problems.push("capabilities.extensions must be a list".into()),
        }
    }
    Some(problems)
}

/// A problem for each of `keys` that is not a string in `v`, named under `at`.
fn need_text(problems: &mut Vec<String>, v: &Value, at: &str, keys: &[&str]) {
    for key in keys.iter().filter(|k| text(v, k).is_none()) {
        problems.push(format!("{at}{key} must be a string"));
    }
}

fn is_text_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array)
        .is_some_and(|l| l.iter().all(Value::is_string))
}

/// The entries of the card's `capabilities.extensions`.
fn extensions(card: &Value) -> impl Iterator<Item = &Value> {
    card.get("capabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn required(extension: &Value) -> bool {
    extension.get("required").and_then(Value::as_bool) == Some(true)
}

/// Whether the card marks the extension `uri` `required: true` (its first entry for `uri`).
pub(crate) fn requires(card: &Value, uri: &str) -> bool {
    extensions(card)
        .find(|e| text(e, "uri") == Some(uri))
        .is_some_and(required)
}

/// The URIs of the extensions the card marks `required: true`.
pub(crate) fn required_extensions(card: &Value) -> Vec<String> {
    extensions(card)
        .filter(|e| required(e))
        .filter_map(|e| text(e, "uri").map(str::to_string))
        .collect()
}

/// What the card says Data Director is behind it.
#[derive(Debug)]
pub(crate) enum Described {
    /// An agent: the spec extension's description.
    Agent(Value),
    /// A harness: the manifest extension's descriptions.
    Harness(Vec<Value>),
    /// Neither extension is declared.
    Neither,
}

/// The Data Director extension a card declares.
pub(crate) fn described(card: &Value) -> Described {
    if let Some(params) = extension_params(card, EXTENSION_URI) {
        return Described::Agent(params.clone());
    }
    match extension_params(card, MANIFEST_EXTENSION_URI) {
        Some(params) => Described::Harness(
            params
                .get("agents")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        ),
        None => Described::Neither,
    }
}

/// The message a check sends when the user gives none, and what to say about it.
///
/// A Data Director agent or harness gets one data part holding an InvocationRequest for the
/// agent its card describes (the first of a harness's manifest), with an input of the
/// agent's first accepted class built from that class's JSON Schema. Any other agent gets
/// one text part, or a data part when its card accepts JSON and not text.
pub(crate) fn builtin_message(card: &Value) -> (Message, Option<String>) {
    let description = match described(card) {
        Described::Agent(d) => Some(d),
        Described::Harness(list) => list.into_iter().next(),
        Described::Neither => None,
    };
    if let Some(description) = description
        && let Some((request, note)) = invocation_request(&description)
    {
        return (Message::new(Role::User, vec![Part::data(request)]), note);
    }
    let modes: Vec<&str> = card
        .get("defaultInputModes")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let takes_text = modes.is_empty() || modes.iter().any(|m| m.starts_with("text"));
    let takes_json = modes.iter().any(|m| m.contains("json"));
    let part = if takes_json && !takes_text {
        Part::data(json!({"text": "Hello from ddwire check."}))
    } else {
        Part::text("Hello from ddwire check.")
    };
    (Message::new(Role::User, vec![part]), None)
}

/// `{"agent_id": …, "input": …}` for a Data Director description, and a note when the input
/// built from the schema does not satisfy it.
fn invocation_request(description: &Value) -> Option<(Value, Option<String>)> {
    let agent_id = text(description, "agent_id")?;
    let class = description
        .get("accepts")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)?;
    let schema = description
        .get("schemas")
        .and_then(|s| s.get(class))
        .and_then(|s| s.get("json_schema"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut input = example(&schema, &schema, 0);
    if let Value::Object(m) = &mut input {
        m.insert("schema_class".into(), Value::String(class.to_string()));
    } else {
        input = json!({ "schema_class": class });
    }
    let spec = AgentSpec::from_description(description).ok();
    let errors = spec.and_then(|spec| Some(spec.schema(class)?.errors(&input)));
    let note = errors.filter(|e| !e.is_empty()).map(|errors| {
        format!(
            "the built-in {class} input does not satisfy its schema ({}); give one with --message",
            errors.join("; ")
        )
    });
    Some((json!({ "agent_id": agent_id, "input": input }), note))
}

/// The smallest document a JSON Schema (draft 7 subset) admits, as far as can be told
/// without a solver: `const`, `enum`, `default`, `examples`, then by type, with every
/// required property and the minimum count of items. Local `$ref`s are followed.
pub(crate) fn example(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(reference) = text(schema, "$ref") {
        let target = reference
            .strip_prefix("#/")
            .and_then(|path| path.split('/').try_fold(root, |node, key| node.get(key)))
            .unwrap_or(&Value::Null);
        return example(target, root, depth + 1);
    }
    let first = |key| schema.get(key).and_then(Value::as_array)?.first();
    if let Some(v) = schema
        .get("const")
        .or_else(|| first("enum"))
        .or_else(|| schema.get("default"))
        .or_else(|| first("examples"))
    {
        return v.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            let required = schema.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let property = schema.get("properties").and_then(|p| p.get(name));
                let value = example(property.unwrap_or(&Value::Null), root, depth + 1);
                out.insert(name.to_string(), value);
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(
                (0..n.min(8))
                    .map(|_| example(items, root, depth + 1))
                    .collect(),
            )
        }
        "integer" | "number" => {
            let int = |key| schema.get(key).and_then(Value::as_i64);
            let min = int("minimum").or_else(|| int("exclusiveMinimum").map(|m| m + 1));
            json!(min.unwrap_or(0))
        }
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        _ => match text(schema, "format") {
            Some("date-time") => Value::String(crate::time::now_rfc3339()),
            Some("uri" | "iri") => Value::String("https://example.org/ddwire-check".into()),
            _ => {
                let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                let hello = "Hello from ddwire check.";
                let dots = (min.min(4096) as usize).saturating_sub(hello.len());
                Value::String(format!("{hello}{}", ".".repeat(dots)))
            }
        },
    }
}

/// Read a user's message file: an A2A Message in either binding's JSON (an object with
/// `parts`), or any other JSON document, sent as one data part.
pub(crate) fn user_message(document: Value) -> Result<Message, CheckError> {
    if document.get("parts").is_some() {
        return decode_message(Binding::V03, document.clone(), "message")
            .or_else(|e03| {
                decode_message(Binding::V10, document, "message").map_err(|e10| (e03, e10))
            })
            .map_err(|(e03, e10)| CheckError::BadMessage {
                reason: format!(
                    "it is neither an A2A 0.3 message ({e03}) nor an A2A 1.0 message ({e10})"
                ),
            });
    }
    Ok(Message::new(Role::User, vec![Part::data(document)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Agent;
    use crate::agent::builtin::{Echo, Hello};
    use crate::wire::a2a::card::{agent_card, pick_binding};

    #[test]
    fn bind_all_hosts_are_told_from_reachable_ones() {
        for (url, host) in [
            ("http://0.0.0.0:8101/a2a", "0.0.0.0"),
            ("http://[::]:80/", "::"),
            ("https://user@agent.example:443/a2a?x=1", "agent.example"),
            ("http://127.0.0.1", "127.0.0.1"),
            ("grpc://[::1]:50051", "::1"),
        ] {
            assert_eq!(host_of(url), Ok(host), "{url}");
        }
        assert!(is_bind_all("0.0.0.0") && is_bind_all("::") && is_bind_all("0:0:0:0:0:0:0:0"));
        assert!(!is_bind_all("127.0.0.1") && !is_bind_all("localhost") && !is_bind_all("::1"));
        assert!(host_of("/a2a").is_err() && host_of("http://:80/").is_err());
        assert!(host_of("http://[::1/").is_err());
    }

    #[test]
    fn a_ddwire_card_declares_both_bindings_and_prefers_1_0() {
        let card = agent_card(Hello::new().spec(), "http://127.0.0.1:8101");
        assert_eq!(pick_binding(&card).ok().map(|(b, _)| b), Some(Binding::V10));
        for b in [Binding::V03, Binding::V10] {
            assert_eq!(
                jsonrpc_url(&card, b).as_deref(),
                Some("http://127.0.0.1:8101/a2a")
            );
            assert_eq!(generation_problems(&card, b), Some(vec![]));
        }
    }

    #[test]
    fn a_v0_3_card_serves_v0_3_at_its_url_and_a_1_0_card_declares_no_v0_3() {
        let v03 = json!({"url": "http://h/", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"});
        assert_eq!(pick_binding(&v03).ok().map(|(b, _)| b), Some(Binding::V03));
        assert_eq!(jsonrpc_url(&v03, Binding::V10), None);
        let v10 = json!({"supportedInterfaces": [
            {"url": "http://h/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        assert_eq!(
            jsonrpc_url(&v10, Binding::V10).as_deref(),
            Some("http://h/rpc")
        );
        assert_eq!(jsonrpc_url(&v10, Binding::V03), None);
        assert_eq!(generation_problems(&v10, Binding::V03), None);
        let problems = generation_problems(&v10, Binding::V10).unwrap();
        assert!(
            problems.contains(&"name must be a string".to_string()),
            "{problems:?}"
        );
    }

    #[test]
    fn the_builtin_message_of_a_ddwire_agent_is_a_valid_invocation_request() {
        for agent in [Hello::new().spec().clone(), Echo::new().spec().clone()] {
            let card = agent_card(&agent, "http://127.0.0.1:1");
            let (message, note) = builtin_message(&card);
            assert_eq!(note, None);
            let data = message.data_parts()[0].clone();
            assert_eq!(data["agent_id"], agent.agent_id.as_str());
            let class = &agent.accepts[0];
            assert!(
                agent
                    .schema(class)
                    .unwrap()
                    .errors(&data["input"])
                    .is_empty()
            );
            crate::contract::InvocationRequest::from_value(&data).unwrap();
        }
    }

    #[test]
    fn an_agent_that_takes_only_json_gets_a_data_part_and_others_text() {
        let (m, _) = builtin_message(&json!({"defaultInputModes": ["application/json"]}));
        assert!(matches!(m.parts[0], Part::Data { .. }));
        let (m, _) =
            builtin_message(&json!({"defaultInputModes": ["text/plain", "application/json"]}));
        assert!(matches!(m.parts[0], Part::Text { .. }));
    }

    #[test]
    fn a_user_message_is_an_a2a_message_in_either_binding_or_a_data_part() {
        let v03 = json!({"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}]});
        assert_eq!(user_message(v03).unwrap().parts, vec![Part::text("hi")]);
        let v10 = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        assert_eq!(user_message(v10).unwrap().parts, vec![Part::text("hi")]);
        let data = json!({"q": 1});
        assert_eq!(
            user_message(data.clone()).unwrap().parts,
            vec![Part::data(data)]
        );
        let err = user_message(json!({"parts": 3})).unwrap_err().to_string();
        assert!(err.contains("neither an A2A 0.3 message"), "{err}");
    }
}
