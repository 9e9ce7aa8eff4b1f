//! Canonical JSON and content hashes against fixtures made by CPython's `json` module
//! (`fixtures/canonical/generate.py`): every case must give byte-identical canonical text
//! and the same SHA-256.

use ddwire::contract::Canonicalisation;
use ddwire::json::{self, Limits};
use serde_json::Value;

fn lines(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Python's `json.loads` accepts `NaN` and `Infinity`, which RFC 8259 does not; ddwire's
/// parser refuses them (documented in vendor-notes/canonical-json.md).
const NON_STANDARD_LITERALS: [&str; 2] = [
    "nonfinite_literals",
    "fairsharing_list_nonfinite_and_duplicates",
];

/// `json-sorted-utf8-v1` stringifies list members with Python's `str()`; for a member that is
/// itself an object, Python prints its keys in document order, which a `serde_json::Value`
/// does not keep, so ddwire prints them sorted. FAIRsharing labels are strings, so real
/// records never meet this (documented in vendor-notes/canonical-json.md).
const OBJECT_IN_A_LABEL_LIST: &str = "fairsharing_mixed_list_values";

#[test]
fn every_canonicalisation_is_byte_identical_to_python_json_dumps() {
    let cases = lines("fixtures/canonical/cases.jsonl");
    assert!(cases.len() >= 50, "too few cases: {}", cases.len());
    let mut checked = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        if NON_STANDARD_LITERALS.contains(&name) || name == OBJECT_IN_A_LABEL_LIST {
            continue;
        }
        let input = case["input"].as_str().unwrap();
        let doc = json::parse(
            input.as_bytes(),
            Limits {
                max_bytes: 1 << 20,
                max_depth: 64,
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = Canonicalisation::from_name(case["canonicalisation"].as_str().unwrap()).unwrap();
        let bytes = c
            .canonical_bytes(&doc)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            case["canonical"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            c.content_hash(&doc).unwrap(),
            case["sha256"].as_str().unwrap(),
            "{name}"
        );
        checked += 1;
    }
    assert_eq!(checked, cases.len() - NON_STANDARD_LITERALS.len() - 1);
}

#[test]
fn an_object_inside_a_label_list_is_stringified_with_sorted_keys() {
    let case = lines("fixtures/canonical/cases.jsonl")
        .into_iter()
        .find(|c| c["name"] == OBJECT_IN_A_LABEL_LIST)
        .expect("the fixture holds the case");
    let doc = json::parse_str(case["input"].as_str().unwrap()).unwrap();
    let ours = String::from_utf8(
        Canonicalisation::FairsharingRecord
            .canonical_bytes(&doc)
            .unwrap(),
    )
    .unwrap();
    let python = case["canonical"].as_str().unwrap();
    // The one difference is the key order inside the stringified object.
    assert_eq!(
        ours.replace("{'a': 'x', 'b': 1}", "{'b': 1, 'a': 'x'}"),
        python
    );
}

#[test]
fn non_standard_nan_and_infinity_literals_are_refused_where_python_accepts_them() {
    for case in lines("fixtures/canonical/cases.jsonl") {
        if NON_STANDARD_LITERALS.contains(&case["name"].as_str().unwrap()) {
            assert!(
                json::parse_str(case["input"].as_str().unwrap()).is_err(),
                "{}",
                case["name"]
            );
        }
    }
}

#[test]
fn what_python_refuses_to_hash_is_refused_too() {
    for case in lines("fixtures/canonical/errors.jsonl") {
        let name = case["name"].as_str().unwrap();
        let input = case["input"].as_str().unwrap();
        let canonicalisation = case["canonicalisation"].as_str().unwrap();
        let outcome = json::parse_str(input)
            .map_err(ddwire::Error::from)
            .and_then(|doc| Ok(Canonicalisation::from_name(canonicalisation)?.content_hash(&doc)?));
        let err = outcome.expect_err(name).to_string();
        if case["stage"] == "project" && case["error_type"] == "ValueError" {
            // An unknown canonicalisation carries the reference's exact message.
            assert_eq!(err, case["message"].as_str().unwrap(), "{name}");
        }
    }
}
