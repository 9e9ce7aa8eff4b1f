//! A JSON Schema validator for the Draft 7 subset the contract and agent class schemas use.
//!
//! The reference validates documents with Python `jsonschema.Draft7Validator` and checks each
//! class schema on an agent card with `Draft7Validator.check_schema`. [`Schema::compile`] is
//! that check, and [`Schema::validate`] reports errors as the reference words and sorts them.
//!
//! **Fail closed.** A schema is compiled only if every keyword in it is one this module
//! evaluates or an annotation. A keyword that asserts something we do not implement
//! (`patternProperties`, `if`, `dependencies`, `multipleOf`, ...) is refused with its
//! JSON-pointer location: accepting the schema and ignoring the keyword would admit instances
//! the schema forbids. Keywords no draft defines are ignored, as JSON Schema Core draft-07
//! §6.5 asks and the reference does (the contract's own schemas carry LinkML's `version` and
//! `metamodel_version`).
//!
//! Evaluated (JSON Schema Validation draft-07 §6): `type`, `enum`, `const` (§6.1);
//! `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum` (§6.2, numeric forms);
//! `maxLength`, `minLength`, `pattern` (§6.3); `items` (schema or array), `additionalItems`,
//! `maxItems`, `minItems`, `uniqueItems` (§6.4); `required`, `properties`,
//! `additionalProperties` (§6.5); `allOf`, `anyOf`, `oneOf`, `not` (§6.7); boolean schemas
//! and local `$ref` (Core draft-07 §4.3.2, §8.3).
//!
//! Ignored annotations: `$schema`, `$id` (root only), `$comment`, `title`, `description`,
//! `default`, `examples`, `readOnly`, `writeOnly`, `deprecated`, `contentMediaType`,
//! `contentEncoding`, and `format`: Draft 7 makes `format` assertion optional (§7.2) and the
//! reference's `Draft7Validator` is built without a format checker, so `"format":
//! "date-time"` checks nothing there either. `definitions` and `$defs` hold schemas that are
//! compiled (so checked) but apply only through `$ref`.
//!
//! Draft 7 details kept from the reference:
//! - an `integer` is any number with no fractional part, so `1.0` is one (protobuf turns
//!   every number into a double); `true` is not `1`, and `1` equals `1.0` in `enum`,
//!   `const` and `uniqueItems`; numbers are compared exactly, as Python compares int and float;
//! - the siblings of `$ref` are ignored (Core draft-07 §8.3), though still compiled;
//! - lengths count code points; `pattern` is searched, not anchored (see
//!   [`crate::contract::pattern`]);
//! - the error for a `false` property or item schema carries the parent's path (jsonschema
//!   4.x's `descend` returns it before adding the step);
//! - values in messages are Python reprs, but objects print their keys in `serde_json`'s
//!   (sorted) order, not the document's order Python's dicts keep.
//!
//! Work is bounded: a `$ref`/`allOf`/`anyOf`/`oneOf`/`not` cycle that never descends into
//! the instance, reachable from the root, is refused at compile time (the reference would
//! recurse until `RecursionError`); nesting of schema applications is capped at
//! [`MAX_DEPTH`]; and one validation takes at most [`VALIDATION_BUDGET`] steps (each schema
//! application and each regex step counts). Giving up is reported as an error, never as
//! success. Instances are expected from [`crate::json::parse`], so at most 64 levels deep:
//! equality keys and reprs recurse over the instance.

use crate::contract::pattern::{self, Regex};
use crate::json::python::{float_repr, is_float_literal, py_repr, str_repr, write_str};
use crate::json::{Seg, location, type_name};
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// Deepest nesting of schema applications during one validation (each `$ref`, `allOf`
/// branch, property or item is one level). Instances from [`crate::json::parse`] nest at most
/// 64 deep; this leaves room for a few applicators per level and keeps the stack small.
pub(crate) const MAX_DEPTH: usize = 256;
/// Most steps one [`Schema::validate`] may take, schema applications and regex steps together.
pub(crate) const VALIDATION_BUDGET: usize = 20_000_000;
/// Deepest nesting of subschemas accepted at compile time.
const MAX_SCHEMA_DEPTH: usize = 128;

/// Keywords of some JSON Schema draft that assert or apply subschemas and are not evaluated
/// here. A schema using one is refused.
const REFUSED: &[&str] = &[
    "multipleOf",
    "maxProperties",
    "minProperties",
    "patternProperties",
    "dependencies",
    "propertyNames",
    "contains",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "minContains",
    "maxContains",
    "$recursiveRef",
    "$dynamicRef",
    "extends",
    "disallow",
    "divisibleBy",
];

/// Why a schema was refused at compile time: where in the schema, and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// The JSON pointer of the offending keyword or subschema (`#/properties/n/type`).
    pub(crate) at: String,
    /// What is wrong there.
    pub(crate) reason: String,
}

impl SchemaError {
    fn new(at: &str, reason: impl Into<String>) -> SchemaError {
        SchemaError {
            at: at.to_owned(),
            reason: reason.into(),
        }
    }

    /// A keyword whose value has the wrong shape.
    fn must_be(at: &str, key: &str, what: &str) -> SchemaError {
        SchemaError::new(at, format!("'{key}' must be {what}"))
    }
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.reason)
    }
}

impl std::error::Error for SchemaError {}

/// A compiled schema. Compile once with [`Schema::compile`]; validate many times.
#[derive(Clone, Debug)]
pub(crate) struct Schema {
    /// Every subschema; the root is `nodes[0]`, and keywords refer to others by index.
    nodes: Vec<Node>,
}

#[derive(Clone, Debug)]
enum Node {
    /// Reserved by a `$ref` (or being compiled); none remains after compilation.
    Pending,
    Bool(bool),
    Keywords(Vec<Keyword>),
}

/// One evaluated keyword, with its value prepared (subschemas as node indexes, equality keys
/// and Python reprs computed once).
#[derive(Clone, Debug)]
enum Keyword {
    Type(Vec<&'static str>),
    Enum {
        keys: Vec<String>,
        repr: String,
    },
    Const {
        key: String,
        repr: String,
    },
    Properties(Vec<(String, usize)>),
    Required(Vec<String>),
    AdditionalProperties {
        declared: HashSet<String>,
        rule: Extra,
    },
    Items(usize),
    TupleItems(Vec<usize>),
    AdditionalItems {
        after: usize,
        rule: Extra,
    },
    Ref(usize),
    AllOf(Vec<usize>),
    AnyOf(Vec<usize>),
    /// Each branch with its Python repr, for "is valid under each of ...".
    OneOf(Vec<(usize, String)>),
    Not(usize, String),
    /// `minLength` / `minItems`.
    Min(Size, u64),
    /// `maxLength` / `maxItems`.
    Max(Size, u64),
    Pattern(Regex),
    /// A numeric bound, its value and the value's repr.
    Bound(Bound, Number, String),
    UniqueItems,
}

/// What `minLength`/`maxLength` (code points) or `minItems`/`maxItems` measure.
#[derive(Clone, Copy, Debug)]
enum Size {
    Length,
    Items,
}

impl Size {
    fn of(self, instance: &Value) -> Option<u64> {
        match (self, instance) {
            (Size::Length, Value::String(s)) => Some(s.chars().count() as u64),
            (Size::Items, Value::Array(items)) => Some(items.len() as u64),
            _ => None,
        }
    }
}

/// The numeric bounds of §6.2, in their Draft 6+ numeric forms.
#[derive(Clone, Copy, Debug)]
enum Bound {
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
}

impl Bound {
    /// Whether an instance ordered `o` against the bound passes.
    fn admits(self, o: Ordering) -> bool {
        match self {
            Bound::Minimum => o != Ordering::Less,
            Bound::Maximum => o != Ordering::Greater,
            Bound::ExclusiveMinimum => o == Ordering::Greater,
            Bound::ExclusiveMaximum => o == Ordering::Less,
        }
    }

    /// The reference's words between the instance and the bound.
    fn words(self) -> &'static str {
        match self {
            Bound::Minimum => "is less than the minimum of",
            Bound::Maximum => "is greater than the maximum of",
            Bound::ExclusiveMinimum => "is less than or equal to the minimum of",
            Bound::ExclusiveMaximum => "is greater than or equal to the maximum of",
        }
    }
}

/// `additionalProperties` / `additionalItems`: `false`, or a schema (`true` adds no keyword).
#[derive(Clone, Copy, Debug)]
enum Extra {
    Forbidden,
    Schema(usize),
}

impl Schema {
    /// Check `root` and compile it: the reference's `Draft7Validator.check_schema`, stricter.
    ///
    /// Refuses, naming the JSON pointer of the offending keyword: a schema that is not an
    /// object or a boolean; a malformed keyword value; a `$ref` that is not local or does not
    /// resolve; a `pattern` the engine cannot read; a `$id` below the root (it would move the
    /// base of the `$ref`s under it); a `$ref` cycle that never descends into the instance;
    /// and any keyword in the refused list.
    pub(crate) fn compile(root: &Value) -> Result<Schema, SchemaError> {
        let mut compiler = Compiler {
            root,
            nodes: Vec::new(),
            pointers: Vec::new(),
            by_pointer: HashMap::new(),
            pending: Vec::new(),
        };
        compiler.schema(root, &mut Vec::new())?;
        // Refs into places the walk does not reach as schemas (rare: inside an unknown keyword).
        while let Some((index, tokens)) = compiler.pending.pop() {
            if matches!(compiler.nodes[index], Node::Pending) {
                let target = lookup(root, &tokens).unwrap_or(&Value::Null);
                compiler.schema(target, &mut tokens.clone())?;
            }
        }
        compiler.refuse_cycles()?;
        Ok(Schema {
            nodes: compiler.nodes,
        })
    }

    /// Every way `instance` violates the schema, as `"<path>: <message>"`, sorted.
    ///
    /// `<path>` is the instance location, keys and indexes joined with `/`, or `<root>`;
    /// messages are Python `jsonschema`'s, with values as Python `repr`s. Only top-level
    /// errors are reported: a failed `anyOf` is one error, not one per branch. If validation
    /// runs out of budget or depth, an error says so.
    pub(crate) fn validate(&self, instance: &Value) -> Vec<String> {
        let mut run = Run::new(&self.nodes, true);
        run.apply(0, instance, &mut Vec::new(), 0);
        let mut errors = run.errors;
        errors.extend(run.gave_up);
        errors.sort();
        errors
    }

    /// Whether `instance` is valid: [`Schema::validate`] is empty, found without formatting
    /// any message and stopping at the first error.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        let mut run = Run::new(&self.nodes, false);
        run.apply(0, instance, &mut Vec::new(), 0) && run.gave_up.is_none()
    }
}

/// Builds the node table from the schema document.
struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// The JSON pointer of each node, for error messages.
    pointers: Vec<String>,
    by_pointer: HashMap<String, usize>,
    /// Nodes reserved by a `$ref`, with the pointer tokens of their target.
    pending: Vec<(usize, Vec<String>)>,
}

impl Compiler<'_> {
    /// The node for the schema at `path` (reserving one if needed).
    fn slot(&mut self, at: &str) -> (usize, bool) {
        if let Some(&index) = self.by_pointer.get(at) {
            return (index, false);
        }
        self.nodes.push(Node::Pending);
        self.pointers.push(at.to_owned());
        self.by_pointer.insert(at.to_owned(), self.nodes.len() - 1);
        (self.nodes.len() - 1, true)
    }

    /// Compile the subschema `value` found at `path` (JSON pointer tokens).
    fn schema(&mut self, value: &Value, path: &mut Vec<String>) -> Result<usize, SchemaError> {
        let at = pointer(path);
        let (index, _) = self.slot(&at);
        if !matches!(self.nodes[index], Node::Pending) {
            return Ok(index); // already compiled through another route
        }
        if path.len() > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::new(
                &at,
                format!("schema nested deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let node = match value {
            Value::Bool(b) => Node::Bool(*b),
            Value::Object(map) => Node::Keywords(self.keywords(map, path)?),
            other => {
                return Err(SchemaError::new(
                    &at,
                    format!(
                        "a schema must be an object or a boolean, not {}",
                        type_name(other)
                    ),
                ));
            }
        };
        self.nodes[index] = node;
        Ok(index)
    }

    /// Compile the subschema under `key` (a property name or an index) of the current path.
    fn child(
        &mut self,
        value: &Value,
        path: &mut Vec<String>,
        key: &str,
    ) -> Result<usize, SchemaError> {
        path.push(key.to_owned());
        let result = self.schema(value, path);
        path.pop();
        result
    }

    /// A non-empty array of schemas (`allOf`, `anyOf`, `oneOf`, array `items`).
    fn schema_array(
        &mut self,
        value: &Value,
        path: &mut Vec<String>,
        at: &str,
        name: &str,
    ) -> Result<Vec<usize>, SchemaError> {
        match value {
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.child(item, path, &i.to_string()))
                .collect(),
            _ => Err(SchemaError::must_be(
                at,
                name,
                "a non-empty array of schemas",
            )),
        }
    }

    /// An object whose values are schemas (`properties`, `definitions`, `$defs`).
    fn schema_map(
        &mut self,
        value: &Value,
        path: &mut Vec<String>,
        at: &str,
        name: &str,
    ) -> Result<Vec<(String, usize)>, SchemaError> {
        let Value::Object(map) = value else {
            return Err(SchemaError::must_be(at, name, "an object of schemas"));
        };
        map.iter()
            .map(|(key, sub)| Ok((key.clone(), self.child(sub, path, key)?)))
            .collect()
    }

    /// The keywords of one schema object at `path`. Siblings of `$ref` are compiled, so
    /// checked, then dropped: Draft 7 ignores them (Core draft-07 §8.3).
    fn keywords(
        &mut self,
        map: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Keyword>, SchemaError> {
        let mut out = Vec::new();
        for (key, value) in map {
            path.push(key.clone());
            let at = pointer(path);
            let keyword = self.keyword(map, key, value, path, &at);
            path.pop();
            out.extend(keyword?);
        }
        if map.contains_key("$ref") {
            out.retain(|k| matches!(k, Keyword::Ref(_)));
        }
        Ok(out)
    }

    /// One keyword, `path` ending with its name; `None` for annotations, containers and
    /// keywords with no effect.
    fn keyword(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        value: &Value,
        path: &mut Vec<String>,
        at: &str,
    ) -> Result<Option<Keyword>, SchemaError> {
        let must_be = |what: &str| SchemaError::must_be(at, key, what);
        let count = || count(value).ok_or_else(|| must_be("a non-negative integer"));
        let number = |bound| match value {
            Value::Number(n) => Ok(Keyword::Bound(bound, n.clone(), py_repr(value))),
            _ => Err(must_be("a number")),
        };
        Ok(Some(match key {
            // §6.1 any instance type
            "type" => Keyword::Type(types(value).ok_or_else(|| {
                let names = TYPES.join(", ");
                must_be(&format!(
                    "one of {names} or a non-empty array of distinct ones"
                ))
            })?),
            "enum" => match value {
                Value::Array(items) => Keyword::Enum {
                    keys: items.iter().map(equality_key).collect(),
                    repr: py_repr(value),
                },
                _ => return Err(must_be("an array")),
            },
            "const" => Keyword::Const {
                key: equality_key(value),
                repr: py_repr(value),
            },
            // §6.2 numbers
            "maximum" => number(Bound::Maximum)?,
            "exclusiveMaximum" => number(Bound::ExclusiveMaximum)?,
            "minimum" => number(Bound::Minimum)?,
            "exclusiveMinimum" => number(Bound::ExclusiveMinimum)?,
            // §6.3 strings
            "maxLength" => Keyword::Max(Size::Length, count()?),
            "minLength" => Keyword::Min(Size::Length, count()?),
            "pattern" => match value {
                Value::String(p) => Keyword::Pattern(
                    Regex::new(p).map_err(|e| SchemaError::new(at, e.to_string()))?,
                ),
                _ => return Err(must_be("a string")),
            },
            // §6.4 arrays
            "items" => match value {
                Value::Array(_) => Keyword::TupleItems(self.schema_array(value, path, at, key)?),
                _ => Keyword::Items(self.schema(value, path)?),
            },
            "additionalItems" => return self.additional_items(map, value, path),
            "maxItems" => Keyword::Max(Size::Items, count()?),
            "minItems" => Keyword::Min(Size::Items, count()?),
            "uniqueItems" => match value {
                Value::Bool(true) => Keyword::UniqueItems,
                Value::Bool(false) => return Ok(None),
                _ => return Err(must_be("a boolean")),
            },
            // §6.5 objects
            "required" => Keyword::Required(
                unique_strings(value).ok_or_else(|| must_be("an array of distinct strings"))?,
            ),
            "properties" => Keyword::Properties(self.schema_map(value, path, at, key)?),
            "additionalProperties" => return self.additional_properties(map, value, path),
            // §6.7 boolean logic
            "allOf" => Keyword::AllOf(self.schema_array(value, path, at, key)?),
            "anyOf" => Keyword::AnyOf(self.schema_array(value, path, at, key)?),
            "oneOf" => {
                let nodes = self.schema_array(value, path, at, key)?;
                let reprs = value.as_array().into_iter().flatten().map(py_repr);
                Keyword::OneOf(nodes.into_iter().zip(reprs).collect())
            }
            "not" => Keyword::Not(self.schema(value, path)?, py_repr(value)),
            // Core §8.3
            "$ref" => match value {
                Value::String(r) => Keyword::Ref(self.reference(r, at)?),
                _ => return Err(must_be("a string")),
            },
            // §9 containers: compiled so they are checked, applied only through $ref.
            "definitions" | "$defs" => {
                self.schema_map(value, path, at, key)?;
                return Ok(None);
            }
            _ => return without_effect(key, value, path, at),
        }))
    }

    /// `additionalItems`, which Draft 7 applies only after an array-form `items` (§6.4.2).
    fn additional_items(
        &mut self,
        map: &Map<String, Value>,
        value: &Value,
        path: &mut Vec<String>,
    ) -> Result<Option<Keyword>, SchemaError> {
        let rule = self.extra(value, path)?;
        Ok(match (rule, map.get("items")) {
            (Some(rule), Some(Value::Array(items))) => Some(Keyword::AdditionalItems {
                after: items.len(),
                rule,
            }),
            _ => None,
        })
    }

    /// `additionalProperties`, applied to the names its sibling `properties` does not declare.
    fn additional_properties(
        &mut self,
        map: &Map<String, Value>,
        value: &Value,
        path: &mut Vec<String>,
    ) -> Result<Option<Keyword>, SchemaError> {
        let Some(rule) = self.extra(value, path)? else {
            return Ok(None);
        };
        let declared = match map.get("properties") {
            Some(Value::Object(props)) => props.keys().cloned().collect(),
            _ => HashSet::new(),
        };
        Ok(Some(Keyword::AdditionalProperties { declared, rule }))
    }

    /// `additionalProperties` / `additionalItems`: `None` for `true` (no constraint).
    fn extra(
        &mut self,
        value: &Value,
        path: &mut Vec<String>,
    ) -> Result<Option<Extra>, SchemaError> {
        let index = self.schema(value, path)?;
        Ok(match value {
            Value::Bool(true) => None,
            Value::Bool(false) => Some(Extra::Forbidden),
            _ => Some(Extra::Schema(index)),
        })
    }

    /// Resolve a `$ref` at compile time: `#` or a `#/…` JSON pointer into this document.
    fn reference(&mut self, reference: &str, at: &str) -> Result<usize, SchemaError> {
        let refuse = |why: &str| {
            Err(SchemaError::new(
                at,
                format!("'$ref' {}: {why}", str_repr(reference)),
            ))
        };
        let Some(fragment) = reference.strip_prefix('#') else {
            return refuse("only local references ('#' or '#/…') are supported");
        };
        let Some(fragment) = crate::text::percent_decode(fragment, false) else {
            return refuse("malformed percent-encoding");
        };
        let tokens: Vec<String> = if fragment.is_empty() {
            Vec::new()
        } else if let Some(rest) = fragment.strip_prefix('/') {
            // RFC 6901 §4: `~1` before `~0`.
            rest.split('/')
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect()
        } else {
            return refuse("plain-name fragments are not supported");
        };
        match lookup(self.root, &tokens) {
            Some(Value::Object(_) | Value::Bool(_)) => {}
            Some(_) => return refuse("it does not point to a schema"),
            None => return refuse("it does not resolve in this document"),
        }
        let (index, new) = self.slot(&pointer(&tokens));
        if new {
            self.pending.push((index, tokens));
        }
        Ok(index)
    }

    /// Refuse a cycle of `$ref`/`allOf`/`anyOf`/`oneOf`/`not` that never moves into a
    /// property or item and that the root can reach: it would recurse forever on any
    /// instance that gets there. (An unused definition that loops is harmless.)
    fn refuse_cycles(&self) -> Result<(), SchemaError> {
        let edges: Vec<Vec<(usize, bool)>> = self.nodes.iter().map(edges).collect();
        let mut reachable = vec![false; self.nodes.len()];
        reachable[0] = true;
        let mut todo = vec![0];
        while let Some(node) = todo.pop() {
            for &(to, _) in &edges[node] {
                if !reachable[to] {
                    reachable[to] = true;
                    todo.push(to);
                }
            }
        }
        let same: Vec<Vec<usize>> = edges
            .iter()
            .map(|e| {
                e.iter()
                    .filter(|(_, same)| *same)
                    .map(|(to, _)| *to)
                    .collect()
            })
            .collect();
        // Iterative depth-first search; 1 = on the current path, 2 = done.
        let mut state = vec![0u8; self.nodes.len()];
        for start in (0..self.nodes.len()).filter(|&n| reachable[n]) {
            if state[start] != 0 {
                continue;
            }
            state[start] = 1;
            let mut stack = vec![(start, 0usize)];
            while let Some(top) = stack.last_mut() {
                let (node, next) = *top;
                top.1 += 1;
                match same[node].get(next) {
                    Some(&to) if state[to] == 1 => {
                        return Err(SchemaError::new(
                            &self.pointers[to],
                            "a '$ref' cycle never descends into the instance, so it would \
                             recurse forever",
                        ));
                    }
                    Some(&to) if state[to] == 0 => {
                        state[to] = 1;
                        stack.push((to, 0));
                    }
                    Some(_) => {}
                    None => {
                        state[node] = 2;
                        stack.pop();
                    }
                }
            }
        }
        Ok(())
    }
}

/// The subschemas `node` applies, each with whether it applies to the same instance (`true`)
/// or to a property or item of it.
fn edges(node: &Node) -> Vec<(usize, bool)> {
    let Node::Keywords(keywords) = node else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for keyword in keywords {
        match keyword {
            Keyword::Ref(n) | Keyword::Not(n, _) => out.push((*n, true)),
            Keyword::AllOf(ns) | Keyword::AnyOf(ns) => out.extend(ns.iter().map(|n| (*n, true))),
            Keyword::OneOf(ns) => out.extend(ns.iter().map(|(n, _)| (*n, true))),
            Keyword::Properties(ps) => out.extend(ps.iter().map(|(_, n)| (*n, false))),
            Keyword::TupleItems(ns) => out.extend(ns.iter().map(|n| (*n, false))),
            Keyword::Items(n)
            | Keyword::AdditionalProperties {
                rule: Extra::Schema(n),
                ..
            }
            | Keyword::AdditionalItems {
                rule: Extra::Schema(n),
                ..
            } => out.push((*n, false)),
            _ => {}
        }
    }
    out
}

/// A key that changes no validation: an annotation (§7, §10, Core §8-9), checked for shape
/// and then ignored; a keyword this module refuses (fail closed); or no draft's keyword,
/// ignored as Core draft-07 §6.5 asks. `path` ends with `key`.
fn without_effect(
    key: &str,
    value: &Value,
    path: &[String],
    at: &str,
) -> Result<Option<Keyword>, SchemaError> {
    let must_be = |shaped: bool, what| {
        shaped
            .then_some(None)
            .ok_or_else(|| SchemaError::must_be(at, key, what))
    };
    match key {
        "$id" if path.len() > 1 => Err(SchemaError::new(
            at,
            "'$id' below the root would change the base of the '$ref's under it, \
             which is not supported",
        )),
        "$id" | "$schema" | "$comment" | "title" | "description" | "format"
        | "contentMediaType" | "contentEncoding" => must_be(value.is_string(), "a string"),
        "readOnly" | "writeOnly" => must_be(value.is_boolean(), "a boolean"),
        "examples" => must_be(value.is_array(), "an array"),
        k if REFUSED.contains(&k) => Err(SchemaError::new(
            at,
            format!(
                "keyword '{k}' is not supported; the schema is refused rather than \
                 checked without it"
            ),
        )),
        // "default", "deprecated" and keys of no draft.
        _ => Ok(None),
    }
}

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// `type`: one name or a non-empty array of distinct names.
fn types(value: &Value) -> Option<Vec<&'static str>> {
    let name = |v: &Value| TYPES.iter().copied().find(|t| v.as_str() == Some(*t));
    match value {
        Value::String(_) => Some(vec![name(value)?]),
        Value::Array(items) if !items.is_empty() => distinct(items.iter().map(name).collect()),
        _ => None,
    }
}

fn unique_strings(value: &Value) -> Option<Vec<String>> {
    let names = value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned));
    distinct(names.collect())
}

/// The items, if none is missing and no two are equal.
fn distinct<T: std::hash::Hash + Eq>(items: Option<Vec<T>>) -> Option<Vec<T>> {
    let items = items?;
    let seen: HashSet<&T> = items.iter().collect();
    (seen.len() == items.len()).then_some(items)
}

/// A non-negative integer keyword value (`3` or `3.0`); huge values saturate.
fn count(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else { return None };
    let digits = exact_integer(n)?;
    if digits.starts_with('-') {
        return None;
    }
    Some(digits.parse().unwrap_or(u64::MAX))
}

/// A JSON pointer as a URI fragment, the form error messages use: `#/properties/a~1b`.
fn pointer(tokens: &[String]) -> String {
    let mut out = String::from("#");
    for token in tokens {
        out.push('/');
        out.push_str(&token.replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// Follow JSON pointer `tokens` (already unescaped) from `root`.
fn lookup<'v>(root: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens.iter().try_fold(root, |value, token| match value {
        Value::Object(map) => map.get(token),
        Value::Array(items) => {
            let canonical = token == "0" || (!token.starts_with('0') && !token.is_empty());
            if !canonical || !token.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            items.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    })
}

/// The state of one validation.
struct Run<'s> {
    nodes: &'s [Node],
    /// Record messages (for `validate`) or only find validity (for `is_valid` and inside
    /// `anyOf`, `oneOf`, `not`, whose branch errors the reference does not report either).
    collect: bool,
    errors: Vec<String>,
    budget: usize,
    /// Why validation stopped early, if it did; always reported as an error.
    gave_up: Option<String>,
}

impl<'s> Run<'s> {
    fn new(nodes: &'s [Node], collect: bool) -> Self {
        Run {
            nodes,
            collect,
            errors: Vec::new(),
            budget: VALIDATION_BUDGET,
            gave_up: None,
        }
    }

    /// Record a failure at `path` (formatting the message only if it will be kept).
    fn fail(&mut self, path: &[Seg<'_>], message: impl FnOnce() -> String) -> bool {
        if self.collect {
            self.errors
                .push(format!("{}: {}", location(path), message()));
        }
        false
    }

    fn give_up(&mut self, path: &[Seg<'_>], why: String) -> bool {
        if self.gave_up.is_none() {
            self.gave_up = Some(format!("{}: {why}", location(path)));
        }
        false
    }

    /// Whether `instance` is valid under `node`, without recording anything.
    fn check<'v>(
        &mut self,
        node: usize,
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let collect = std::mem::replace(&mut self.collect, false);
        let valid = self.apply(node, instance, path, depth);
        self.collect = collect;
        valid
    }

    /// Apply schema `node` to `instance` at `path`. Returns validity; when collecting, every
    /// error is recorded, otherwise the first ends the evaluation.
    fn apply<'v>(
        &mut self,
        node: usize,
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        if self.gave_up.is_some() {
            return false;
        }
        if self.budget == 0 {
            return self.give_up(
                path,
                format!("validation gave up after {VALIDATION_BUDGET} steps"),
            );
        }
        self.budget -= 1;
        if depth > MAX_DEPTH {
            return self.give_up(
                path,
                format!("schema applications nested deeper than {MAX_DEPTH} levels"),
            );
        }
        let nodes = self.nodes;
        match &nodes[node] {
            Node::Bool(true) | Node::Pending => true,
            Node::Bool(false) => self.fail(path, || {
                format!("False schema does not allow {}", py_repr(instance))
            }),
            Node::Keywords(keywords) => {
                let mut valid = true;
                for keyword in keywords {
                    valid &= self.keyword(keyword, instance, path, depth);
                    if !valid && !self.collect {
                        return false;
                    }
                }
                valid
            }
        }
    }

    fn keyword<'v>(
        &mut self,
        keyword: &Keyword,
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let repr = || py_repr(instance);
        let (object, array) = match instance {
            Value::Object(map) => (Some(map), None),
            Value::Array(items) => (None, Some(items.as_slice())),
            _ => (None, None),
        };
        match keyword {
            Keyword::Type(types) => {
                types.iter().any(|t| is_type(instance, t))
                    || self.fail(path, || {
                        let names: Vec<String> = types.iter().map(|t| str_repr(t)).collect();
                        format!("{} is not of type {}", repr(), names.join(", "))
                    })
            }
            Keyword::Enum {
                keys,
                repr: allowed,
            } => {
                keys.contains(&equality_key(instance))
                    || self.fail(path, || format!("{} is not one of {allowed}", repr()))
            }
            Keyword::Const {
                key,
                repr: expected,
            } => {
                *key == equality_key(instance)
                    || self.fail(path, || format!("{expected} was expected"))
            }
            Keyword::Properties(properties) => {
                let Some(map) = object else { return true };
                let present = properties.iter().filter_map(|(name, node)| {
                    let (key, value) = map.get_key_value(name)?;
                    Some((*node, Some(Seg::Key(key)), value))
                });
                self.all(present, path, depth)
            }
            Keyword::Required(names) => {
                let Some(map) = object else { return true };
                self.required(names, map, path)
            }
            Keyword::AdditionalProperties { declared, rule } => {
                let Some(map) = object else { return true };
                self.additional_properties(declared, rule, map, path, depth)
            }
            Keyword::Items(node) => {
                let Some(items) = array else { return true };
                self.items(items, 0, std::iter::repeat(*node), path, depth)
            }
            Keyword::TupleItems(nodes) => {
                let Some(items) = array else { return true };
                self.items(items, 0, nodes.iter().copied(), path, depth)
            }
            Keyword::AdditionalItems { after, rule } => {
                let Some(rest) = array.and_then(|items| items.get(*after..)) else {
                    return true;
                };
                self.additional_items(*after, rule, rest, path, depth)
            }
            Keyword::Ref(node) => self.apply(*node, instance, path, depth + 1),
            Keyword::AllOf(nodes) => self.all(
                nodes.iter().map(|node| (*node, None, instance)),
                path,
                depth,
            ),
            Keyword::AnyOf(nodes) => self.any_of(nodes, instance, path, depth),
            Keyword::OneOf(branches) => self.one_of(branches, instance, path, depth),
            Keyword::Not(node, shown) => self.not(*node, shown, instance, path, depth),
            Keyword::Min(size, min) => {
                size.of(instance).is_none_or(|n| n >= *min)
                    || self.fail(path, || format!("{} {}", repr(), too_short(*min)))
            }
            Keyword::Max(size, max) => {
                size.of(instance).is_none_or(|n| n <= *max)
                    || self.fail(path, || format!("{} {}", repr(), too_long(*max)))
            }
            Keyword::Pattern(regex) => self.pattern(regex, instance, path),
            Keyword::Bound(bound, value, shown) => {
                let Value::Number(n) = instance else {
                    return true;
                };
                // No ordering only for NaN, which JSON cannot spell.
                compare_numbers(n, value).is_none_or(|o| bound.admits(o))
                    || self.fail(path, || format!("{} {} {shown}", repr(), bound.words()))
            }
            Keyword::UniqueItems => {
                let Some(items) = array else { return true };
                let mut seen = HashSet::with_capacity(items.len());
                items.iter().all(|item| seen.insert(equality_key(item)))
                    || self.fail(path, || format!("{} has non-unique elements", repr()))
            }
        }
    }

    /// `required`: every missing name is an error.
    fn required(&mut self, names: &[String], map: &Map<String, Value>, path: &[Seg<'_>]) -> bool {
        let mut valid = true;
        for name in names.iter().filter(|n| !map.contains_key(*n)) {
            valid = self.fail(path, || {
                format!("{} is a required property", str_repr(name))
            });
            if !self.collect {
                break;
            }
        }
        valid
    }

    /// `additionalProperties` over the properties of `map` not `declared` by `properties`.
    fn additional_properties<'v>(
        &mut self,
        declared: &HashSet<String>,
        rule: &Extra,
        map: &'v Map<String, Value>,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let extras = map.iter().filter(|(k, _)| !declared.contains(*k));
        match rule {
            Extra::Schema(node) => {
                let extras = extras.map(|(k, v)| (*node, Some(Seg::Key(k)), v));
                self.all(extras, path, depth)
            }
            Extra::Forbidden => {
                // Sorted by code point, as the reference sorts them.
                let mut names: Vec<&String> = extras.map(|(k, _)| k).collect();
                names.sort();
                names.is_empty()
                    || self.fail(path, || {
                        let reprs = names.iter().map(|k| str_repr(k)).collect();
                        format!(
                            "Additional properties are not allowed ({})",
                            unexpected(reprs)
                        )
                    })
            }
        }
    }

    /// `additionalItems` over `rest`, the items from index `after` on.
    fn additional_items<'v>(
        &mut self,
        after: usize,
        rule: &Extra,
        rest: &'v [Value],
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        match rule {
            Extra::Schema(node) => self.items(rest, after, std::iter::repeat(*node), path, depth),
            Extra::Forbidden => {
                rest.is_empty()
                    || self.fail(path, || {
                        let reprs = rest.iter().map(py_repr).collect();
                        format!("Additional items are not allowed ({})", unexpected(reprs))
                    })
            }
        }
    }

    /// `not`: the subschema `node` (written `shown`) invalid, checked without recording its
    /// errors.
    fn not<'v>(
        &mut self,
        node: usize,
        shown: &str,
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        !self.check(node, instance, path, depth + 1)
            || self.fail(path, || {
                format!("{} should not be valid under {shown}", py_repr(instance))
            })
    }

    /// Apply `nodes` to `items`, pairwise, `first` being the index of the first item.
    fn items<'v>(
        &mut self,
        items: &'v [Value],
        first: usize,
        nodes: impl Iterator<Item = usize>,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let each = items.iter().zip(nodes).enumerate();
        let each = each.map(|(i, (v, node))| (node, Some(Seg::Index(first + i)), v));
        self.all(each, path, depth)
    }

    /// `anyOf`: some branch valid, each checked without recording its errors.
    fn any_of<'v>(
        &mut self,
        nodes: &[usize],
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        nodes
            .iter()
            .any(|node| self.check(*node, instance, path, depth + 1))
            || self.fail(path, || none_valid(instance))
    }

    /// `oneOf`: exactly one branch valid, each branch checked without recording its errors.
    fn one_of<'v>(
        &mut self,
        branches: &[(usize, String)],
        instance: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let valid: Vec<&str> = branches
            .iter()
            .filter(|(node, _)| self.check(*node, instance, path, depth + 1))
            .map(|(_, shown)| shown.as_str())
            .collect();
        match valid.as_slice() {
            [_] => true,
            [] => self.fail(path, || none_valid(instance)),
            // The reference lists the later valid branches, then the first.
            [first, more @ ..] => self.fail(path, || {
                let shown: Vec<&str> = more.iter().chain([first]).copied().collect();
                format!(
                    "{} is valid under each of {}",
                    py_repr(instance),
                    shown.join(", ")
                )
            }),
        }
    }

    /// `pattern`, searched in a string instance.
    fn pattern(&mut self, regex: &Regex, instance: &Value, path: &[Seg<'_>]) -> bool {
        let Value::String(s) = instance else {
            return true;
        };
        // The regex draws on the validation budget, at most its own budget per call.
        let mut steps = self.budget.min(pattern::STEP_BUDGET);
        let before = steps;
        let found = regex.match_within(s, &mut steps);
        self.budget -= before - steps;
        match found {
            Ok(true) => true,
            Ok(false) => self.fail(path, || {
                format!(
                    "{} does not match {}",
                    py_repr(instance),
                    str_repr(regex.as_str())
                )
            }),
            Err(why) => self.give_up(path, why.to_string()),
        }
    }

    /// Apply each `(node, step, value)`: a subschema to a property or item (`step`), or to
    /// the instance itself (`None`). All must pass; without collecting, the first failure
    /// ends it.
    fn all<'v>(
        &mut self,
        parts: impl IntoIterator<Item = (usize, Option<Seg<'v>>, &'v Value)>,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> bool {
        let mut valid = true;
        for (node, step, value) in parts {
            // The reference's `descend` returns a `false` subschema's error before adding the
            // step to the path, so it is reported at the parent's location; mirror that.
            let step = step.filter(|_| !matches!(self.nodes[node], Node::Bool(false)));
            path.extend(step);
            valid &= self.apply(node, value, path, depth + 1);
            if step.is_some() {
                path.pop();
            }
            if !valid && !self.collect {
                return false;
            }
        }
        valid
    }
}

/// The reference's words for a string or array shorter than `minLength` or `minItems`.
fn too_short(min: u64) -> &'static str {
    if min == 1 {
        "should be non-empty"
    } else {
        "is too short"
    }
}

/// The reference's words for a string or array longer than `maxLength` or `maxItems`.
fn too_long(max: u64) -> &'static str {
    if max == 0 {
        "is expected to be empty"
    } else {
        "is too long"
    }
}

/// The reference's words for an `anyOf` or `oneOf` no branch of which is valid.
fn none_valid(instance: &Value) -> String {
    format!(
        "{} is not valid under any of the given schemas",
        py_repr(instance)
    )
}

/// The reference's `extras_msg`: `'a', 'b' were unexpected`.
fn unexpected(reprs: Vec<String>) -> String {
    let verb = if reprs.len() == 1 { "was" } else { "were" };
    format!("{} {verb} unexpected", reprs.join(", "))
}

/// JSON Schema's types, with Draft 6+'s `integer`: any number with no fractional part.
fn is_type(value: &Value, name: &str) -> bool {
    match (name, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_)) => true,
        ("integer", Value::Number(n)) => exact_integer(n).is_some(),
        _ => false,
    }
}

/// The number as Python's `json.loads` reads it, as an `f64` (`1e400` is infinity).
fn as_f64(n: &Number) -> f64 {
    n.to_string().parse().unwrap_or(f64::NAN)
}

/// The exact integer a number denotes, in canonical decimal (`-0` is `0`), if it denotes one:
/// an integer literal of any size, or a float literal with no fractional part.
fn exact_integer(n: &Number) -> Option<String> {
    let text = n.to_string();
    if !is_float_literal(&text) {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, text.as_str()),
        };
        let digits = digits.trim_start_matches('0');
        return Some(match (digits.is_empty(), negative) {
            (true, _) => "0".into(),
            (false, true) => format!("-{digits}"),
            (false, false) => digits.into(),
        });
    }
    let x = as_f64(n);
    // `{:.0}` prints an integral f64 exactly (1e300 as all its digits).
    (x.is_finite() && x.fract() == 0.0).then(|| {
        if x == 0.0 {
            "0".into()
        } else {
            format!("{x:.0}")
        }
    })
}

/// Order two JSON numbers as Python orders the int or float `json.loads` makes of them:
/// exactly, even between a huge int and a float.
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    let (ia, ib) = (exact_integer(a), exact_integer(b));
    if let (Some(x), Some(y)) = (&ia, &ib) {
        let magnitude = |x: &str, y: &str| x.len().cmp(&y.len()).then_with(|| x.cmp(y));
        return Some(match (x.strip_prefix('-'), y.strip_prefix('-')) {
            (Some(x), Some(y)) => magnitude(y, x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => magnitude(x, y),
        });
    }
    // One side is a non-integral float (|x| < 2^52) or infinite: f64 keeps the order, except
    // that an integer too long for f64 reads as infinite, yet is below a float infinity.
    let (x, y) = (as_f64(a), as_f64(b));
    match (ia, ib) {
        (Some(_), None) if y.is_infinite() => Some(if y > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        }),
        (None, Some(_)) if x.is_infinite() => Some(if x > 0.0 {
            Ordering::Greater
        } else {
            Ordering::Less
        }),
        _ => x.partial_cmp(&y),
    }
}

/// A string equal for two values exactly when the reference's `jsonschema._utils.equal`
/// says they are equal: `1` and `1.0` share a key, `true` and `1` do not, objects compare
/// regardless of key order.
fn equality_key(value: &Value) -> String {
    let mut out = String::new();
    write_key(value, &mut out);
    out
}

fn write_key(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push('n'),
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Number(n) => match exact_integer(n) {
            Some(i) => {
                out.push('i');
                out.push_str(&i);
            }
            None => {
                out.push('d');
                out.push_str(&float_repr(as_f64(n)));
            }
        },
        Value::String(s) => write_str(out, s, false),
        // Each item and member ends with a comma, so the key still reads back one way.
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_key(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (k, v) in entries {
                write_str(out, k, false);
                out.push(':');
                write_key(v, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;
    use serde_json::json;

    fn compile(schema: &Value) -> Schema {
        Schema::compile(schema).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Errors of `instance` (JSON text, so number literals keep their spelling).
    fn errors(schema: Value, instance: &str) -> Vec<String> {
        let instance = parse_str(instance).unwrap_or_else(|e| panic!("{e}"));
        let schema = compile(&schema);
        let errors = schema.validate(&instance);
        assert_eq!(
            schema.is_valid(&instance),
            errors.is_empty(),
            "is_valid agrees"
        );
        errors
    }

    fn refused(schema: Value) -> String {
        Schema::compile(&schema)
            .err()
            .unwrap_or_else(|| panic!("{schema} was accepted"))
            .to_string()
    }

    const UUID7: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

    #[test]
    fn type_accepts_its_json_type_and_names_the_one_expected() {
        for (ty, good, bad) in [
            ("null", "null", "0"),
            ("boolean", "false", "0"),
            ("object", "{}", "[]"),
            ("array", "[]", "{}"),
            ("number", "1.5", "\"1\""),
            ("integer", "-7", "7.5"),
            ("string", "\"\"", "null"),
        ] {
            assert!(errors(json!({"type": ty}), good).is_empty(), "{ty} {good}");
            let want = format!(
                "<root>: {} is not of type '{ty}'",
                py_repr(&parse_str(bad).unwrap())
            );
            assert_eq!(errors(json!({"type": ty}), bad), [want]);
        }
        assert_eq!(
            errors(json!({"type": "string"}), "5"),
            ["<root>: 5 is not of type 'string'"]
        );
        assert_eq!(
            errors(json!({"type": "number"}), "true"),
            ["<root>: True is not of type 'number'"]
        );
    }

    #[test]
    fn an_integer_may_be_spelled_as_a_float_with_no_fraction() {
        let integer = json!({"type": "integer"});
        for ok in [
            "1",
            "1.0",
            "-0.0",
            "1e2",
            "3.0e0",
            "123456789012345678901234567890",
            "1e300",
        ] {
            assert!(errors(integer.clone(), ok).is_empty(), "{ok}");
        }
        assert_eq!(
            errors(integer.clone(), "1.5"),
            ["<root>: 1.5 is not of type 'integer'"]
        );
        assert_eq!(
            errors(integer.clone(), "true"),
            ["<root>: True is not of type 'integer'"]
        );
        assert_eq!(
            errors(integer, "1e400"),
            ["<root>: inf is not of type 'integer'"]
        );
    }

    #[test]
    fn nullable_unions_accept_either_type_and_name_both_otherwise() {
        let schema = json!({"type": ["string", "null"]});
        assert!(errors(schema.clone(), "null").is_empty());
        assert!(errors(schema.clone(), "\"x\"").is_empty());
        assert_eq!(
            errors(schema, "3"),
            ["<root>: 3 is not of type 'string', 'null'"]
        );
    }

    #[test]
    fn enum_compares_as_python_does_so_one_equals_one_point_zero_but_not_true() {
        let schema = json!({"enum": [1, "a", null, [1, {"k": 2}]]});
        for ok in ["1", "1.0", "\"a\"", "null", "[1.0, {\"k\": 2.0}]"] {
            assert!(errors(schema.clone(), ok).is_empty(), "{ok}");
        }
        assert_eq!(
            errors(schema.clone(), "true"),
            ["<root>: True is not one of [1, 'a', None, [1, {'k': 2}]]"]
        );
        assert_eq!(errors(schema, "\"A\"").len(), 1);
        assert_eq!(
            errors(json!({"enum": ["Message"]}), "\"foo\""),
            ["<root>: 'foo' is not one of ['Message']"]
        );
    }

    #[test]
    fn const_requires_json_equality_and_reports_the_expected_value() {
        assert!(errors(json!({"const": true}), "true").is_empty());
        assert_eq!(
            errors(json!({"const": true}), "1"),
            ["<root>: True was expected"]
        );
        assert!(errors(json!({"const": {"a": [1, 2]}}), "{\"a\": [1.0, 2e0]}").is_empty());
        assert_eq!(
            errors(json!({"const": "x"}), "\"y\""),
            ["<root>: 'x' was expected"]
        );
    }

    #[test]
    fn required_names_each_missing_property_and_ignores_non_objects() {
        let schema = json!({"required": ["x", "y", "z"]});
        assert_eq!(
            errors(schema.clone(), "{\"y\": 1}"),
            [
                "<root>: 'x' is a required property",
                "<root>: 'z' is a required property"
            ]
        );
        assert!(errors(schema, "[1]").is_empty());
    }

    #[test]
    fn properties_apply_to_present_keys_and_the_path_names_the_key() {
        let schema = json!({"properties": {"a": {"type": "string"}, "b": {"minimum": 0}}});
        assert!(errors(schema.clone(), "{\"c\": 1}").is_empty());
        assert_eq!(
            errors(schema, "{\"a\": 1, \"b\": -1}"),
            [
                "a: 1 is not of type 'string'",
                "b: -1 is less than the minimum of 0"
            ]
        );
    }

    #[test]
    fn additional_properties_false_lists_the_unexpected_keys_sorted() {
        let schema = json!({"properties": {"a": true}, "additionalProperties": false});
        assert!(errors(schema.clone(), "{\"a\": 1}").is_empty());
        assert_eq!(
            errors(schema.clone(), "{\"a\": 1, \"acting_for\": {}}"),
            ["<root>: Additional properties are not allowed ('acting_for' was unexpected)"]
        );
        assert_eq!(
            errors(schema, "{\"z\": 1, \"b\": 2, \"é\": 3}"),
            ["<root>: Additional properties are not allowed ('b', 'z', 'é' were unexpected)"]
        );
    }

    #[test]
    fn additional_properties_as_a_schema_applies_to_undeclared_keys_only() {
        let schema =
            json!({"properties": {"a": true}, "additionalProperties": {"type": "integer"}});
        assert_eq!(
            errors(schema, "{\"a\": \"s\", \"b\": 1, \"c\": \"s\"}"),
            ["c: 's' is not of type 'integer'"]
        );
    }

    #[test]
    fn items_apply_to_every_element_with_its_index_in_the_path() {
        let schema = json!({"properties": {"h": {"items": {"type": "integer"}}}});
        assert_eq!(
            errors(schema, "{\"h\": [1, \"x\", 2, null]}"),
            [
                "h/1: 'x' is not of type 'integer'",
                "h/3: None is not of type 'integer'"
            ]
        );
    }

    #[test]
    fn tuple_items_and_additional_items_follow_draft_7() {
        let closed =
            json!({"items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false});
        assert!(errors(closed.clone(), "[\"a\"]").is_empty());
        assert_eq!(
            errors(closed.clone(), "[1, 2]"),
            ["0: 1 is not of type 'string'"]
        );
        assert_eq!(
            errors(closed, "[\"a\", 1, true, null]"),
            ["<root>: Additional items are not allowed (True, None were unexpected)"]
        );
        let typed = json!({"items": [{"type": "string"}], "additionalItems": {"type": "boolean"}});
        assert_eq!(
            errors(typed, "[\"a\", true, 3]"),
            ["2: 3 is not of type 'boolean'"]
        );
        // After a schema-form `items`, `additionalItems` has no effect.
        assert!(errors(json!({"items": {}, "additionalItems": false}), "[1, 2]").is_empty());
    }

    #[test]
    fn string_lengths_count_code_points_and_use_pythons_wording() {
        let schema = json!({"minLength": 2, "maxLength": 3});
        assert!(
            errors(schema.clone(), "\"é😀\"").is_empty(),
            "two code points, six bytes"
        );
        assert_eq!(
            errors(schema.clone(), "\"a\""),
            ["<root>: 'a' is too short"]
        );
        assert_eq!(errors(schema, "\"abcd\""), ["<root>: 'abcd' is too long"]);
        assert_eq!(
            errors(json!({"minLength": 1}), "\"\""),
            ["<root>: '' should be non-empty"]
        );
        assert_eq!(
            errors(json!({"maxLength": 0}), "\"a\""),
            ["<root>: 'a' is expected to be empty"]
        );
        assert!(
            errors(json!({"minLength": 5}), "5").is_empty(),
            "only strings have a length"
        );
    }

    #[test]
    fn pattern_is_searched_not_anchored_and_the_error_quotes_it_as_python_repr() {
        assert!(errors(json!({"pattern": "b"}), "\"abc\"").is_empty());
        assert_eq!(
            errors(json!({"pattern": "^[0-9a-f]{64}$"}), "\"abc\""),
            ["<root>: 'abc' does not match '^[0-9a-f]{64}$'"]
        );
        assert_eq!(
            errors(json!({"pattern": "\\S"}), "\" \""),
            ["<root>: ' ' does not match '\\\\S'"]
        );
        assert!(
            errors(json!({"pattern": "^a$"}), "7").is_empty(),
            "only strings are matched"
        );
    }

    #[test]
    fn numeric_bounds_use_the_draft_7_exclusive_forms() {
        let schema = json!({"minimum": 1, "maximum": 3.5});
        for ok in ["1", "1.0", "3.5", "2"] {
            assert!(errors(schema.clone(), ok).is_empty(), "{ok}");
        }
        assert_eq!(
            errors(schema.clone(), "0.5"),
            ["<root>: 0.5 is less than the minimum of 1"]
        );
        assert_eq!(
            errors(schema, "4"),
            ["<root>: 4 is greater than the maximum of 3.5"]
        );
        let exclusive = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10});
        assert!(errors(exclusive.clone(), "5").is_empty());
        assert_eq!(
            errors(exclusive.clone(), "0.0"),
            ["<root>: 0.0 is less than or equal to the minimum of 0"]
        );
        assert_eq!(
            errors(exclusive, "10"),
            ["<root>: 10 is greater than or equal to the maximum of 10"]
        );
        assert!(
            errors(json!({"minimum": 5}), "\"1\"").is_empty(),
            "only numbers are bounded"
        );
    }

    #[test]
    fn numbers_compare_exactly_even_beyond_f64_precision() {
        let max = json!({"maximum": 9007199254740992_u64});
        assert_eq!(
            errors(max.clone(), "9007199254740993"),
            ["<root>: 9007199254740993 is greater than the maximum of 9007199254740992"]
        );
        assert!(errors(max, "9007199254740992.0").is_empty());
        let huge = "1".to_owned() + &"0".repeat(400);
        assert!(errors(json!({"exclusiveMaximum": 1e308}), &huge).len() == 1);
        let below_infinity = parse_str("{\"exclusiveMaximum\": 1e400}").unwrap();
        assert!(
            compile(&below_infinity)
                .validate(&parse_str(&huge).unwrap())
                .is_empty()
        );
    }

    #[test]
    fn array_sizes_use_pythons_wording() {
        let schema = json!({"minItems": 2, "maxItems": 3});
        assert!(errors(schema.clone(), "[1, 2]").is_empty());
        assert_eq!(errors(schema.clone(), "[1]"), ["<root>: [1] is too short"]);
        assert_eq!(
            errors(schema, "[1, 2, 3, 4]"),
            ["<root>: [1, 2, 3, 4] is too long"]
        );
        assert_eq!(
            errors(json!({"minItems": 1}), "[]"),
            ["<root>: [] should be non-empty"]
        );
        assert_eq!(
            errors(json!({"maxItems": 0}), "[1]"),
            ["<root>: [1] is expected to be empty"]
        );
    }

    #[test]
    fn unique_items_treats_one_and_one_point_zero_as_equal_and_true_as_distinct() {
        let schema = json!({"uniqueItems": true});
        assert!(errors(schema.clone(), "[1, true, \"1\", [1], {\"a\": 1}]").is_empty());
        assert_eq!(
            errors(schema.clone(), "[1, 1.0]"),
            ["<root>: [1, 1.0] has non-unique elements"]
        );
        assert_eq!(
            errors(
                schema.clone(),
                "[{\"a\": 1, \"b\": 2}, {\"b\": 2, \"a\": 1}]"
            )
            .len(),
            1
        );
        assert!(errors(json!({"uniqueItems": false}), "[1, 1]").is_empty());
    }

    #[test]
    fn all_of_reports_every_failing_branchs_errors() {
        let schema = json!({"allOf": [{"required": ["x"]}, {"required": ["x", "y"]}]});
        assert_eq!(
            errors(schema, "{}"),
            [
                "<root>: 'x' is a required property",
                "<root>: 'x' is a required property",
                "<root>: 'y' is a required property"
            ]
        );
    }

    #[test]
    fn any_of_reports_one_error_not_one_per_branch() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]});
        assert!(errors(schema.clone(), "\"s\"").is_empty());
        assert!(errors(schema.clone(), "7").is_empty());
        assert_eq!(
            errors(schema, "3"),
            ["<root>: 3 is not valid under any of the given schemas"]
        );
    }

    #[test]
    fn one_of_refuses_no_valid_branch_and_more_than_one() {
        let schema = json!({"oneOf": [
            {"type": "integer"},
            {"type": "number", "minimum": 2},
            {"type": "string"}
        ]});
        assert!(errors(schema.clone(), "1").is_empty());
        assert!(errors(schema.clone(), "2.5").is_empty());
        assert_eq!(
            errors(schema.clone(), "null"),
            ["<root>: None is not valid under any of the given schemas"]
        );
        assert_eq!(
            errors(schema, "3"),
            [
                "<root>: 3 is valid under each of {'minimum': 2, 'type': 'number'}, {'type': 'integer'}"
            ]
        );
    }

    #[test]
    fn not_refuses_what_its_schema_accepts() {
        assert!(errors(json!({"not": {"type": "string"}}), "1").is_empty());
        assert_eq!(
            errors(json!({"not": {"type": "string"}}), "\"s\""),
            ["<root>: 's' should not be valid under {'type': 'string'}"]
        );
        assert_eq!(
            errors(json!({"not": true}), "1"),
            ["<root>: 1 should not be valid under True"]
        );
    }

    #[test]
    fn boolean_schemas_accept_everything_or_nothing() {
        assert!(errors(json!(true), "{\"any\": [1]}").is_empty());
        assert_eq!(
            errors(json!(false), "1"),
            ["<root>: False schema does not allow 1"]
        );
        // The reference reports a `false` property or item schema at the parent's path.
        let schema = json!({"properties": {"gone": false, "free": true, "deep": {"items": false}}});
        assert_eq!(
            errors(schema, "{\"gone\": \"x\", \"free\": 1, \"deep\": [1]}"),
            [
                "<root>: False schema does not allow 'x'",
                "deep: False schema does not allow 1"
            ]
        );
    }

    #[test]
    fn refs_resolve_into_defs_definitions_and_the_root() {
        let schema = json!({
            "$defs": {"Role": {"enum": ["user", "agent"]}},
            "definitions": {"Id": {"type": "string"}},
            "properties": {
                "role": {"$ref": "#/$defs/Role"},
                "id": {"$ref": "#/definitions/Id"},
                "child": {"$ref": "#"}
            }
        });
        assert!(
            errors(
                schema.clone(),
                "{\"role\": \"user\", \"child\": {\"id\": \"x\"}}"
            )
            .is_empty()
        );
        assert_eq!(
            errors(
                schema,
                "{\"role\": \"system\", \"child\": {\"id\": 1, \"child\": {\"role\": 1}}}"
            ),
            [
                "child/child/role: 1 is not one of ['user', 'agent']",
                "child/id: 1 is not of type 'string'",
                "role: 'system' is not one of ['user', 'agent']"
            ]
        );
    }

    #[test]
    fn ref_pointers_unescape_tilde_sequences_and_percent_encoding() {
        let schema = json!({
            "$defs": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}, "e f": {"type": "null"}},
            "properties": {
                "x": {"$ref": "#/$defs/a~1b"},
                "y": {"$ref": "#/$defs/c~0d"},
                "z": {"$ref": "#/$defs/e%20f"},
                "w": {"$ref": "#/properties/x"}
            }
        });
        assert!(
            errors(
                schema.clone(),
                "{\"x\": \"s\", \"y\": 1, \"z\": null, \"w\": \"t\"}"
            )
            .is_empty()
        );
        assert_eq!(errors(schema, "{\"w\": 1, \"y\": \"s\"}").len(), 2);
    }

    #[test]
    fn the_siblings_of_ref_are_ignored_as_in_draft_7() {
        let schema = json!({
            "definitions": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}
        });
        assert!(errors(schema, "{\"a\": \"long\"}").is_empty());
    }

    #[test]
    fn a_self_referential_schema_validates_a_deep_instance_without_overflow() {
        let schema = json!({"type": "array", "items": {"$ref": "#"}});
        let deep = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(errors(schema.clone(), &deep).is_empty());
        // Built in code, deeper than the parser allows: refused with a reason, not a crash.
        let mut value = json!([]);
        for _ in 0..400 {
            value = json!([value]);
        }
        let errs = compile(&schema).validate(&value);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("nested deeper than 256 levels"),
            "{errs:?}"
        );
        assert!(!compile(&schema).is_valid(&value));
    }

    #[test]
    fn a_ref_cycle_that_never_descends_into_the_instance_is_refused() {
        assert!(refused(json!({"$ref": "#"})).contains("cycle"));
        let err = refused(json!({
            "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
            "properties": {"x": {"$ref": "#/$defs/a"}}
        }));
        assert!(
            err.contains("cycle") && err.starts_with("#/$defs/"),
            "{err}"
        );
        // An unused definition that loops cannot run, so it does not stop the schema.
        assert!(Schema::compile(&json!({"$defs": {"loop": {"$ref": "#/$defs/loop"}}})).is_ok());
    }

    #[test]
    fn an_unsupported_keyword_is_refused_at_compile_with_its_path() {
        let err =
            refused(json!({"$defs": {"T": {"properties": {"x": {"patternProperties": {}}}}}}));
        assert_eq!(
            err,
            "#/$defs/T/properties/x/patternProperties: keyword 'patternProperties' is not \
             supported; the schema is refused rather than checked without it"
        );
        for keyword in [
            "if",
            "dependencies",
            "propertyNames",
            "contains",
            "multipleOf",
            "minProperties",
            "unevaluatedProperties",
            "prefixItems",
            "$dynamicRef",
        ] {
            let err = refused(json!({"properties": {"a": {keyword: {}}}}));
            assert!(
                err.starts_with(&format!("#/properties/a/{keyword}: keyword '{keyword}'")),
                "{err}"
            );
        }
    }

    #[test]
    fn an_unresolvable_remote_or_anchor_ref_is_refused_at_compile() {
        assert_eq!(
            refused(json!({"properties": {"h": {"$ref": "#/$defs/Missing"}}})),
            "#/properties/h/$ref: '$ref' '#/$defs/Missing': it does not resolve in this document"
        );
        assert!(
            refused(json!({"$ref": "https://example.org/s.json#/a"}))
                .contains("only local references")
        );
        assert!(refused(json!({"$ref": "other.json"})).contains("only local references"));
        assert!(refused(json!({"$ref": "#anchor"})).contains("plain-name fragments"));
        assert!(
            refused(json!({"$ref": "#/required", "required": ["a"]}))
                .contains("does not point to a schema")
        );
    }

    #[test]
    fn malformed_keyword_values_are_refused_at_compile() {
        for (schema, path) in [
            (json!(5), "#: a schema must be an object or a boolean"),
            (json!({"required": "x"}), "#/required:"),
            (json!({"required": ["a", "a"]}), "#/required:"),
            (json!({"type": "strin"}), "#/type:"),
            (json!({"type": []}), "#/type:"),
            (json!({"type": ["string", "string"]}), "#/type:"),
            (json!({"enum": 1}), "#/enum:"),
            (json!({"minLength": -1}), "#/minLength:"),
            (json!({"minLength": 1.5}), "#/minLength:"),
            (json!({"maxItems": "3"}), "#/maxItems:"),
            (json!({"minimum": "0"}), "#/minimum:"),
            (json!({"exclusiveMinimum": true}), "#/exclusiveMinimum:"),
            (json!({"uniqueItems": 1}), "#/uniqueItems:"),
            (json!({"allOf": []}), "#/allOf:"),
            (json!({"items": []}), "#/items:"),
            (
                json!({"properties": {"a": 1}}),
                "#/properties/a: a schema must be",
            ),
            (json!({"definitions": {"a": "x"}}), "#/definitions/a:"),
            (json!({"$ref": 1}), "#/$ref:"),
            (json!({"title": 1}), "#/title:"),
            (json!({"format": 3}), "#/format:"),
            (
                json!({"properties": {"a": {"$id": "https://x/a"}}}),
                "#/properties/a/$id:",
            ),
        ] {
            let err = refused(schema.clone());
            assert!(err.starts_with(path), "{schema}: {err}");
        }
        assert!(
            Schema::compile(&json!({"minLength": 1.0})).is_ok(),
            "1.0 is an integer"
        );
        assert!(
            Schema::compile(&json!({"enum": []})).is_ok(),
            "Draft 7 allows an empty enum"
        );
    }

    #[test]
    fn an_invalid_pattern_is_refused_at_compile_naming_the_construct() {
        let err = refused(json!({"properties": {"id": {"pattern": "^(?=x)"}}}));
        assert!(
            err.starts_with("#/properties/id/pattern: pattern '^(?=x)': lookahead"),
            "{err}"
        );
        assert!(refused(json!({"pattern": "("})).starts_with("#/pattern: pattern '(':"));
    }

    #[test]
    fn annotations_format_and_unknown_keywords_are_ignored() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "$id": "https://w3id.org/data-director/schema/workbench",
            "$comment": "generated", "title": "t", "description": "d", "default": 1,
            "examples": [1], "readOnly": false, "writeOnly": false, "deprecated": true,
            "version": "0.7.0", "metamodel_version": "1.11.0",
            "properties": {"at": {"type": "string", "format": "date-time"}, "u": {"format": "uri"}}
        });
        // Draft7Validator without a format checker does not assert `format`.
        assert!(errors(schema, "{\"at\": \"not a date\", \"u\": \"not a uri\"}").is_empty());
    }

    #[test]
    fn errors_carry_the_instance_path_and_come_sorted_as_strings() {
        let schema = json!({
            "properties": {
                "b": {"items": {"properties": {"k": {"type": "string"}}}},
                "a": {"type": "integer"}
            },
            "required": ["z"]
        });
        assert_eq!(
            errors(
                schema,
                "{\"a\": \"x\", \"b\": [{\"k\": 1}, {}, {\"k\": 2}]}"
            ),
            [
                "<root>: 'z' is a required property",
                "a: 'x' is not of type 'integer'",
                "b/0/k: 1 is not of type 'string'",
                "b/2/k: 2 is not of type 'string'"
            ]
        );
    }

    /// A class schema shaped like the ones Data Director agents carry on their cards.
    fn message_class() -> Value {
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "https://w3id.org/data-director/schema/workbench/Message",
            "title": "Message",
            "type": "object",
            "additionalProperties": false,
            "required": ["schema_class", "message_text"],
            "properties": {
                "schema_class": {"type": "string", "enum": ["Message"]},
                "message_text": {"type": "string"},
                "history": {"anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/ConversationTurn"}},
                    {"type": "null"}
                ]}
            },
            "$defs": {
                "ConversationTurn": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["role", "turn_text"],
                    "properties": {
                        "role": {"$ref": "#/$defs/Role"},
                        "turn_text": {"type": "string"},
                        "turn_agent_id": {"type": ["string", "null"]},
                        "turn_agent_version": {"type": ["string", "null"]},
                        "turn_invocation_id": {"type": ["string", "null"], "pattern": UUID7}
                    }
                },
                "Role": {"type": "string", "enum": ["user", "agent"]}
            }
        })
    }

    #[test]
    fn a_message_class_schema_accepts_good_input() {
        for good in [
            r#"{"schema_class": "Message", "message_text": "hi"}"#,
            r#"{"schema_class": "Message", "message_text": "hi", "history": null}"#,
            r#"{"schema_class": "Message", "message_text": "hi", "history": [
                {"role": "user", "turn_text": "q", "turn_invocation_id": "01890a5d-ac96-774b-bcce-b302099a8057"},
                {"role": "agent", "turn_text": "a", "turn_agent_id": null, "turn_agent_version": "1.0",
                 "turn_invocation_id": null}]}"#,
        ] {
            assert_eq!(
                errors(message_class(), good),
                Vec::<String>::new(),
                "{good}"
            );
        }
    }

    #[test]
    fn a_message_class_schema_names_every_fault_of_bad_input() {
        assert_eq!(
            errors(
                message_class(),
                r#"{"schema_class": "Reply", "message_text": 5, "acting_for": {}}"#
            ),
            [
                "<root>: Additional properties are not allowed ('acting_for' was unexpected)",
                "message_text: 5 is not of type 'string'",
                "schema_class: 'Reply' is not one of ['Message']"
            ]
        );
        assert_eq!(
            errors(message_class(), "{}").len(),
            2,
            "both required properties"
        );
        // A bad turn fails the whole `anyOf`: one error at `history`, as the reference says it.
        let bad_turn = r#"{"schema_class": "Message", "message_text": "hi",
            "history": [{"role": "user", "turn_text": "q",
                         "turn_invocation_id": "9c5b94b1-35ad-49bb-b118-8e8fc24abf80"}]}"#;
        assert_eq!(
            errors(message_class(), bad_turn),
            [
                "history: [{'role': 'user', 'turn_invocation_id': '9c5b94b1-35ad-49bb-b118-8e8fc24abf80', \
              'turn_text': 'q'}] is not valid under any of the given schemas"
            ]
        );
        let turn = compile(&message_class());
        let turn_schema = compile(
            &json!({"$ref": "#/$defs/ConversationTurn", "$defs": message_class()["$defs"]}),
        );
        let turn_value = parse_str(
            r#"{"role": "system", "turn_text": 1, "x": 1,
            "turn_invocation_id": "9c5b94b1-35ad-49bb-b118-8e8fc24abf80"}"#,
        )
        .unwrap();
        assert_eq!(
            turn_schema.validate(&turn_value),
            [
                "<root>: Additional properties are not allowed ('x' was unexpected)",
                "role: 'system' is not one of ['user', 'agent']",
                "turn_invocation_id: '9c5b94b1-35ad-49bb-b118-8e8fc24abf80' does not match \
                 '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'",
                "turn_text: 1 is not of type 'string'"
            ]
        );
        assert!(!turn.is_valid(&parse_str(bad_turn).unwrap()));
    }

    #[test]
    fn a_principal_needs_an_absolute_iri_and_a_name() {
        let principal = json!({
            "type": "object", "additionalProperties": false,
            "required": ["principal_id", "name", "principal_kind", "assurance"],
            "properties": {
                "principal_id": {"type": "string", "format": "uri", "pattern": "^[a-z][a-z0-9+.-]*:\\S+$"},
                "name": {"type": "string", "pattern": "\\S"},
                "principal_kind": {"enum": ["person", "accountable_role"]},
                "assurance": {"enum": ["asserted"]}
            }
        });
        let doc = |id: &str, name: &str| {
            format!(
                r#"{{"principal_id": "{id}", "name": "{name}", "principal_kind": "person", "assurance": "asserted"}}"#
            )
        };
        assert!(
            errors(
                principal.clone(),
                &doc("https://orcid.org/0000-0002-1825-0097", "Josiah Carberry")
            )
            .is_empty()
        );
        assert_eq!(
            errors(principal.clone(), &doc("0000-0002-1825-0097", "J")).len(),
            1,
            "bare ORCID"
        );
        assert_eq!(
            errors(principal.clone(), &doc("https://x.org/a b", "J")).len(),
            1,
            "space"
        );
        assert_eq!(
            errors(principal, &doc("https://x.org/a", " ")),
            ["name: ' ' does not match '\\\\S'"]
        );
    }

    #[test]
    fn a_pattern_that_exhausts_its_budget_is_reported_never_taken_as_a_pass() {
        let text = format!("\"{}b\"", "a".repeat(40));
        let errs = errors(json!({"pattern": "^(a+)+$"}), &text);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("<root>: gave up matching pattern '^(a+)+$'"),
            "{errs:?}"
        );
        // Under `not`, an undecided match must not turn into acceptance.
        let errs = errors(
            json!({"properties": {"s": {"not": {"pattern": "^(a+)+$"}}}}),
            &format!("{{\"s\": {text}}}"),
        );
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("s: gave up matching pattern"),
            "{errs:?}"
        );
    }

    #[test]
    fn the_validation_budget_bounds_the_work_of_a_whole_instance() {
        // Each search for `b|c` in 200,000 `a`s fits the regex budget (three steps per
        // character) and fails honestly; 40 of them exceed the validation budget.
        let schema = compile(&json!({"items": {"pattern": "b|c"}}));
        let instance = Value::Array(vec![Value::String("a".repeat(200_000)); 40]);
        let errs = schema.validate(&instance);
        let gave_up: Vec<_> = errs.iter().filter(|e| e.contains("gave up")).collect();
        assert_eq!(gave_up.len(), 1, "{gave_up:?}");
        let index: usize = gave_up[0]
            .split(':')
            .next()
            .and_then(|i| i.parse().ok())
            .unwrap();
        assert!(
            index > 20,
            "the early items were checked in full: {}",
            gave_up[0]
        );
        assert_eq!(
            errs.len(),
            index + 1,
            "each checked item reported once, then the stop"
        );
        assert!(!schema.is_valid(&instance));
    }
}
