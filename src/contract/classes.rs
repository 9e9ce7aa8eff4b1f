//! The classes ddwire ships: the core `Message` input and `Reply` payload of the contract, and
//! the `Echo`/`EchoReply` pair the benchmark agent uses. Each is a Draft 7 JSON Schema,
//! closed, that designates its class in `schema_class`.

use super::spec::ClassSchema;
use serde_json::Value;

const MESSAGE: &str = include_str!("schemas/Message.schema.json");
const REPLY: &str = include_str!("schemas/Reply.schema.json");
const ECHO: &str = include_str!("schemas/Echo.schema.json");
const ECHO_REPLY: &str = include_str!("schemas/EchoReply.schema.json");

fn load(name: &str, text: &str) -> ClassSchema {
    let json: Value = serde_json::from_str(text).expect("a shipped class schema is JSON");
    ClassSchema::new(name, json).expect("a shipped class schema is valid")
}

/// `Message`: one conversational turn and the conversation so far.
pub fn message() -> ClassSchema {
    load("Message", MESSAGE)
}

/// `Reply`: a conversational agent's payload.
pub fn reply() -> ClassSchema {
    load("Reply", REPLY)
}

/// `Echo`: any value, to be returned unchanged.
pub(crate) fn echo() -> ClassSchema {
    load("Echo", ECHO)
}

/// `EchoReply`: an echoed value, grounded on its input.
pub(crate) fn echo_reply() -> ClassSchema {
    load("EchoReply", ECHO_REPLY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_class_is_closed_and_designates_itself() {
        for c in [message(), reply(), echo(), echo_reply()] {
            assert_eq!(
                c.json_schema["additionalProperties"],
                Value::Bool(false),
                "{}",
                c.name
            );
            assert_eq!(
                c.json_schema["properties"]["schema_class"]["enum"][0],
                c.name.as_str()
            );
        }
        assert!(reply().grounded() && echo_reply().grounded() && !message().grounded());
    }

    #[test]
    fn a_message_validates_and_a_bad_turn_is_refused_with_its_path() {
        let ok = serde_json::json!({"schema_class": "Message", "message_text": "hi", "history": [{"role": "user", "turn_text": "a"}]});
        assert!(message().errors(&ok).is_empty());
        let bad = serde_json::json!({"schema_class": "Message", "message_text": "hi", "history": [{"role": "bot", "turn_text": "a"}]});
        let errors = message().errors(&bad);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("history/0/role: "), "{errors:?}");
    }
}
