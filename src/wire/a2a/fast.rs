//! The typed reader of a send's params in their plain shape, in both bindings (v0.3
//! `message/send`, 1.0 `SendMessage`): read straight from the request's text by
//! [`jsonrpc::parse_typed`](crate::wire::jsonrpc::parse_typed), no tree built for the
//! envelope, the message or its parts.
//!
//! It takes a message of text and data parts, and optional `configuration` and `metadata`,
//! spelled as the two bindings' own writers spell them (camelCase member names). Every member
//! it does not list (a file part, `referenceTaskIds`, `extensions`, a proto-named member such as
//! `message_id`, anything unknown), a wrong type, or an escape in a string it only reads makes
//! the typed read fail, and the request then takes the general reader
//! ([`super::codec::decode_send_params`]), which alone reports errors. Each object is read as an
//! [`Obj`], so no array stands for one. What this accepts, [`SendFast::into_params`] turns
//! into exactly what the general reader gives for it in that binding.

use super::Binding;
use super::model::{Message, Part, Role, SendParams};
use crate::json::Obj;
use crate::wire::jsonrpc::present;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

/// A send's params, as both bindings may carry them.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendFast<'a> {
    #[serde(borrow)]
    message: Obj<MessageFast<'a, PartFast<'a>>>,
    // Kept when `null`: v0.3's reader keeps it, 1.0's reads it as absent.
    #[serde(default, deserialize_with = "present")]
    configuration: Option<Value>,
    // `null` and absent are both `None`, as `Fields::metadata` reads them; a non-object fails.
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// A message of either binding, its parts read as `P`: the send's parts here, the reply's in
/// [`super::reply`], whose readers differ on purpose over a 1.0 part's `null` member.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MessageFast<'a, P> {
    // Read, never kept: the general reader ignores it in both bindings.
    #[serde(default, rename = "kind")]
    _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    role: &'a str,
    #[serde(rename = "messageId")]
    message_id: String,
    // `null` fails here (v0.3 refuses it, 1.0 reads it as empty): the general reader decides.
    // `Vec::new`, not `default`: that would ask `P: Default`.
    #[serde(default = "Vec::new")]
    parts: Vec<Obj<P>>,
    // `null` is `None` here and in `opt_str`; another non-string fails here (`opt_str` would
    // read it as `None`), which only sends the request the general way.
    #[serde(rename = "contextId", default)]
    context_id: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PartFast<'a> {
    // v0.3's discriminator; 1.0 has none and ignores the member.
    #[serde(default, borrow)]
    kind: Option<&'a str>,
    // `Some(None)`: present as `null`, which a 1.0 part counts as present (one of its oneof).
    #[serde(default, deserialize_with = "present")]
    text: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Option<Map<String, Value>>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    // 1.0 writes it on a data part and reads it only on a file part; v0.3 ignores it.
    #[serde(default, rename = "mediaType")]
    _media_type: Option<IgnoredAny>,
}

impl SendFast<'_> {
    /// The params the general reader ([`super::codec::decode_send_params`]) reads from the
    /// same text in `binding`, or `None` where the shape needs its judgement: a role not
    /// spelled as the binding spells it, a part that is not exactly one text or one data object
    /// (a v0.3 part without its `kind`, a 1.0 part with a `null` member), an empty
    /// `messageId` in 1.0 (which it reads as absent).
    pub(crate) fn into_params(self, binding: Binding) -> Option<SendParams> {
        let message = self
            .message
            .0
            .into_message(binding, |p| p.into_part(binding))?;
        Some(SendParams {
            message,
            configuration: self
                .configuration
                .filter(|c| !(binding == Binding::V10 && c.is_null())),
            metadata: self.metadata,
        })
    }
}

impl<P> MessageFast<'_, P> {
    /// The message, each part read by `part`; `None` where a part is declined, for a role not
    /// spelled as `binding` spells it, or for an empty `messageId` in 1.0 (which the general
    /// reader reads as absent).
    pub(super) fn into_message(
        self,
        binding: Binding,
        mut part: impl FnMut(P) -> Option<Part>,
    ) -> Option<Message> {
        let v10 = binding == Binding::V10;
        if v10 && self.message_id.is_empty() {
            return None;
        }
        // 1.0 reads an empty string as absent (ProtoJSON: proto3 strings have no presence).
        let id = |s: Option<String>| s.filter(|s| !(v10 && s.is_empty()));
        Some(Message {
            role: [Role::User, Role::Agent]
                .into_iter()
                .find(|r| binding.role_name(*r) == self.role)?,
            parts: (self.parts.into_iter())
                .map(|Obj(p)| part(p))
                .collect::<Option<_>>()?,
            message_id: self.message_id,
            context_id: id(self.context_id),
            task_id: id(self.task_id),
            reference_task_ids: Vec::new(),
            extensions: Vec::new(),
            metadata: self.metadata,
        })
    }
}

impl PartFast<'_> {
    /// The part, if it is one text or one data object as `binding` tells them.
    fn into_part(self, binding: Binding) -> Option<Part> {
        let told = match binding {
            // v0.3's `kind` decides, and the other member may be absent or `null`.
            Binding::V03 => Some(self.kind?),
            // 1.0's oneof counts a `null` member as present: the general reader judges it.
            Binding::V10 if self.text == Some(None) || self.data == Some(None) => return None,
            Binding::V10 => None,
        };
        let metadata = self.metadata;
        match (told, self.text.flatten(), self.data.flatten()) {
            (Some("text") | None, Some(text), None) => Some(Part::Text { text, metadata }),
            (Some("data") | None, None, Some(data)) => Some(Part::Data {
                data: Value::Object(data),
                metadata,
            }),
            _ => None,
        }
    }
}
