//! Reading a JSON object's members as both bindings name them: v0.3 by their JSON names, 1.0
//! by their JSON or proto names with `null` read as absent. Every refusal is a [`DecodeError`]
//! naming the member's path, or an [`A2aError`] for a count parameter.

use super::Binding;
use super::error::{A2aError, DecodeError};
use serde_json::{Map, Value};

/// An object being read in `binding`, whose errors name the path `at` (`params.message`). Each
/// member is taken out of it as it is read.
pub(crate) struct Fields<'a> {
    pub(crate) binding: Binding,
    pub(crate) obj: Map<String, Value>,
    pub(crate) at: &'a str,
}

impl<'a> Fields<'a> {
    /// `v`, which must be an object.
    pub(crate) fn of(binding: Binding, v: Value, at: &'a str) -> Result<Fields<'a>, DecodeError> {
        match v {
            Value::Object(obj) => Ok(Fields { binding, obj, at }),
            _ => Err(DecodeError::new(at, "must be an object")),
        }
    }

    /// Why the member `name` is refused.
    pub(crate) fn error(&self, name: &str, reason: impl Into<String>) -> DecodeError {
        DecodeError::new(format!("{}.{name}", self.at), reason)
    }

    /// The member `name`; 1.0 also reads it by its proto name `proto`, and reads `null` as
    /// absent.
    pub(crate) fn take(&mut self, name: &str, proto: &str) -> Option<Value> {
        match self.binding {
            Binding::V03 => self.obj.remove(name),
            Binding::V10 => self
                .obj
                .remove(name)
                .or_else(|| self.obj.remove(proto))
                .filter(|v| !v.is_null()),
        }
    }

    /// An optional string; anything but a string is absent, and so is an empty one in 1.0.
    pub(crate) fn opt_str(&mut self, name: &str, proto: &str) -> Option<String> {
        match self.take(name, proto) {
            Some(Value::String(s)) if self.binding == Binding::V03 || !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// A required string. 1.0 reads an empty one as absent; v0.3 refuses one of another type
    /// (`null` included) as no string.
    pub(crate) fn req_str(&mut self, name: &str, proto: &str) -> Result<String, DecodeError> {
        match self.take(name, proto) {
            Some(Value::String(s)) if self.binding == Binding::V03 || !s.is_empty() => Ok(s),
            Some(_) if self.binding == Binding::V03 => Err(self.error(name, "must be a string")),
            _ => Err(self.error(name, "is required")),
        }
    }

    /// The `metadata` object, if any.
    pub(crate) fn metadata(&mut self) -> Result<Option<Map<String, Value>>, DecodeError> {
        match self.take("metadata", "metadata") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.error("metadata", "must be an object")),
        }
    }

    /// The strings of a list (anything else in it, or a member that is no list, is none).
    pub(crate) fn strings(&mut self, name: &str, proto: &str) -> Vec<String> {
        match self.take(name, proto) {
            Some(Value::Array(a)) => a
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The items of a list, each read by `read` at `at.name[i]`; absent is empty. v0.3 refuses
    /// a member that is no list; 1.0 reads it as empty.
    pub(crate) fn items<T>(
        &mut self,
        (name, proto): (&str, &str),
        read: impl Fn(Binding, Value, &str) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let values = match self.take(name, proto) {
            Some(Value::Array(a)) => a,
            Some(_) if self.binding == Binding::V03 => {
                return Err(self.error(name, "must be a list"));
            }
            _ => Vec::new(),
        };
        let at = self.at;
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| read(self.binding, v, &format!("{at}.{name}[{i}]")))
            .collect()
    }

    /// A required member, read by `read`; `path` is its own path (`at.name`, written out by
    /// the caller so that reading allocates none).
    pub(crate) fn required<T>(
        &mut self,
        name: &str,
        path: &str,
        read: impl FnOnce(Binding, Value, &str) -> Result<T, DecodeError>,
    ) -> Result<T, DecodeError> {
        match self.take(name, name) {
            Some(v) => read(self.binding, v, path),
            None => Err(self.error(name, "is required")),
        }
    }

    /// An enum (a role, a state) in this binding's spelling; `expected` says what it may be,
    /// for the error.
    pub(crate) fn enumerated<T>(
        &mut self,
        name: &str,
        spelled: impl Fn(&Value) -> Option<T>,
        expected: impl FnOnce() -> String,
    ) -> Result<T, DecodeError> {
        let v = match self.binding {
            // A v0.3 enum is a string.
            Binding::V03 => Value::String(self.req_str(name, name)?),
            Binding::V10 => self
                .take(name, name)
                .ok_or_else(|| self.error(name, "is required"))?,
        };
        spelled(&v).ok_or_else(|| {
            let shown = match (&v, self.binding) {
                (Value::String(s), Binding::V03) => format!("{s:?}"),
                _ => v.to_string(),
            };
            self.error(name, format!("{shown} is not {}", expected()))
        })
    }

    /// An optional flag; v0.3 refuses anything but true, false or `null`, and 1.0 a value that
    /// is not true or false.
    pub(crate) fn flag(&mut self, name: &str, proto: &str) -> Result<bool, DecodeError> {
        match self.take(name, proto) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(self.error(name, "must be true or false")),
        }
    }
}

/// The member `name` of `obj`, `null` read as absent; 1.0 also reads it by its proto name.
pub(crate) fn get<'v>(
    binding: Binding,
    obj: &'v Map<String, Value>,
    name: &str,
    proto: &str,
) -> Option<&'v Value> {
    let found = match binding {
        Binding::V03 => obj.get(name),
        Binding::V10 => obj.get(name).or_else(|| obj.get(proto)),
    };
    found.filter(|v| !v.is_null())
}

/// A count parameter (`historyLength`, `pageSize`): absent, or a non-negative integer that an
/// `int32` holds (ProtoJSON also writes integers as strings). Anything else is refused.
pub(crate) fn count_param(v: Option<&Value>, field: &str) -> Result<Option<usize>, A2aError> {
    let n = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64().or_else(|| {
            // 5.0 is an integer to a protobuf parser; 5.5 is not.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        }),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match n {
        Some(n) if n < 0 => Err(A2aError::invalid(
            field,
            format!("must be a non-negative integer, got {n}"),
        )),
        Some(n) if n <= i64::from(i32::MAX) => Ok(Some(n as usize)),
        _ => Err(A2aError::invalid(
            field,
            format!(
                "must be a non-negative integer, got {}",
                v.map(|v| v.to_string()).unwrap_or_default()
            ),
        )),
    }
}
