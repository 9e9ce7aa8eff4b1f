//! Whom an invocation acts for (the reference's `test_identity.py`, less its CLI tests): the
//! operator's configured principal, bearer tokens, and the refusal of a malformed principal.
//! Spec invariant 15.

use super::common;

use common::*;
use ddwire::agent::builtin::Stub;
use ddwire::contract::{Assurance, ContractError, InvocationRequest, PrincipalKind};
use ddwire::harness::HarnessError;
use ddwire::harness::identity::{Authenticator, configured_principal, token_digest};
use ddwire::harness::testkit::{TestHarness, test_principal};
use ddwire::wire::a2a::model::TaskState;
use serde_json::json;
use std::sync::Arc;

fn steward() -> ddwire::contract::Principal {
    configured_principal(
        Some("urn:example:role:data-steward"),
        Some("Data steward"),
        Some("accountable_role"),
    )
    .expect("a valid principal")
}

/// The operator assertion names the configured principal whoever calls: a `Bearer` header
/// naming someone else changes nothing, directly or over either transport.
#[test]
fn the_operator_assertion_names_the_configured_principal_whoever_calls() {
    let named = steward();
    assert_eq!(named.principal_kind, PrincipalKind::AccountableRole);
    assert_eq!(named.assurance, Assurance::Asserted);
    let auth = Authenticator::Operator(named.clone());
    assert!(!auth.requires_credentials());
    let someone_else = vec![(
        "authorization".to_string(),
        "Bearer someone-else".to_string(),
    )];
    assert_eq!(auth.principal_for(Some(&someone_else)).unwrap(), named);
    assert_eq!(auth.principal_for(None).unwrap(), named);

    // Over the wire: the test harness asserts the test principal, whatever the caller sends.
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let task = send_to(
        &th,
        &th.target(),
        a2a_message(vec![request("stub.abstain", message("hi"))], None),
        &[("Authorization", "Bearer someone-else")],
    );
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(envelope_of(&task)["acting_for"], principal_doc());
    let (_, _, stream) = post_agui(
        &th,
        &agui_body(&request("stub.abstain", message("hi")), "t1"),
        &[("Authorization", "Bearer someone-else")],
    );
    let events = events(&stream);
    assert_eq!(
        events.last().unwrap()["result"]["acting_for"],
        principal_doc()
    );
    assert_eq!(
        serde_json::to_value(test_principal()).unwrap()["assurance"],
        "asserted"
    );
}

/// A malformed principal (an id that is not an absolute IRI, an unknown kind, an empty name)
/// is a configuration error, whether configured for the operator or in a tokens file.
#[test]
fn a_malformed_principal_is_a_configuration_error() {
    for (id, name, kind) in [
        ("0000-0002-1825-0097", "J. Carberry", "person"),
        ("https://orcid.org/0000-0002-1825-0097", "J", "robot"),
        ("https://orcid.org/0000-0002-1825-0097", "   ", "person"),
        ("https://orcid.org/0000 0002", "J", "person"),
    ] {
        let err = configured_principal(Some(id), Some(name), Some(kind)).unwrap_err();
        assert!(
            matches!(err, HarnessError::Config { .. }) && err.to_string().contains("malformed"),
            "{id} {name} {kind}: {err}"
        );
    }
    let dir = TempDir::new("identity-tokens");
    let path = dir.path().join("tokens.json");
    std::fs::write(
        &path,
        json!({ token_digest("t"): {"principal_id": "not an iri", "name": "X"} }).to_string(),
    )
    .unwrap();
    let err = Authenticator::bearer_from_file(&path).unwrap_err();
    assert!(err.to_string().contains("malformed"), "{err}");
    // A tokens file keyed by the tokens themselves is refused: only digests are kept.
    std::fs::write(
        &path,
        json!({"s3cret": {"principal_id": "urn:x:y", "name": "X"}}).to_string(),
    )
    .unwrap();
    let err = Authenticator::bearer_from_file(&path).unwrap_err();
    assert!(
        err.to_string().contains("not a SHA-256 hex digest"),
        "{err}"
    );
}

/// A tokens file maps each token's digest to a principal; a caller presenting the token acts
/// for that principal, over A2A, and the stored run says so.
#[test]
fn a_bearer_token_names_the_principal_its_caller_acts_for() {
    let dir = TempDir::new("identity-bearer");
    let path = dir.path().join("tokens.json");
    std::fs::write(
        &path,
        json!({
            token_digest("s3cret"): {"principal_id": "urn:example:role:data-steward", "name": "Data steward", "principal_kind": "accountable_role"},
            token_digest("other"): {"principal_id": "https://orcid.org/0000-0002-1825-0097", "name": "Josiah Carberry"},
        })
        .to_string(),
    )
    .unwrap();
    let auth = Authenticator::bearer_from_file(&path).unwrap();
    assert!(auth.requires_credentials());
    let agents: Vec<Arc<dyn ddwire::agent::Agent>> = vec![Arc::new(Stub::new())];
    let profile = permissive_profile(&agents);
    let th = harness_with(agents, &profile, Some(auth));
    for (token, who) in [("s3cret", steward()), ("other", test_principal())] {
        let task = send_to(
            &th,
            &th.target(),
            a2a_message(vec![request("stub.abstain", message("hi"))], None),
            &[("Authorization", &format!("Bearer {token}"))],
        );
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        let env = envelope_of(&task);
        let id = env["invocation_id"].as_str().unwrap();
        assert_eq!(
            stored_envelope(&th.runs, id)["acting_for"],
            serde_json::to_value(&who).unwrap()
        );
    }
}

/// Spec invariant 15 at the contract: a request document cannot name whom it acts for; the
/// refusal names the key.
#[test]
fn a_request_cannot_say_whom_it_acts_for() {
    let mut doc = request("stub.abstain", message("hi"));
    doc["acting_for"] = principal_doc();
    let err = InvocationRequest::from_value(&doc).unwrap_err();
    assert!(
        matches!(err, ContractError::Violation { .. }) && err.to_string().contains("acting_for"),
        "{err}"
    );
}

/// A tokens file of the wrong shape is refused at start, naming the field that is wrong and
/// the shape expected; an auditor entry is read with its role.
#[test]
fn a_tokens_file_of_the_wrong_shape_names_the_field_and_the_shape_expected() {
    let dir = TempDir::new("identity-shape");
    let path = dir.path().join("tokens.json");
    let digest = token_digest("t");
    for (doc, field) in [
        (
            json!([{"principal_id": "urn:x:y", "name": "X"}]),
            "top level is an array",
        ),
        (json!({ &digest: "urn:x:y" }), "the entry is a string"),
        (
            json!({ &digest: {"name": "X"} }),
            "\"principal_id\" is missing",
        ),
        (
            json!({ &digest: {"principal_id": 7, "name": "X"} }),
            "\"principal_id\" is a number",
        ),
        (
            // "admin" is a role of the shared tokens file (the relay's), so not this case.
            json!({ &digest: {"principal_id": "urn:x:y", "name": "X", "role": "superuser"} }),
            "\"role\"",
        ),
        (
            json!({ &digest: {"principal_id": "urn:x:y", "name": "X", "roles": ["auditor"]} }),
            "\"roles\" is not a known field",
        ),
    ] {
        std::fs::write(&path, doc.to_string()).unwrap();
        let err = Authenticator::bearer_from_file(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{doc}: {err}");
        assert!(
            err.contains("expected {\"<sha256 hex of a token>\""),
            "{doc}: {err}"
        );
    }
    std::fs::write(
        &path,
        json!({ &digest: {"principal_id": "urn:x:auditor", "name": "Audit", "principal_kind": "accountable_role", "role": "auditor"} })
            .to_string(),
    )
    .unwrap();
    let Authenticator::Bearer(tokens) = Authenticator::bearer_from_file(&path).unwrap() else {
        panic!("a bearer authenticator");
    };
    assert_eq!(tokens[0].role, ddwire::harness::identity::Role::Auditor);
    assert_eq!(tokens[0].principal.principal_id, "urn:x:auditor");
    std::fs::write(
        &path,
        json!({ &digest: {"principal_id": "urn:x:steward", "name": "Steward", "role": "steward"} })
            .to_string(),
    )
    .unwrap();
    let Authenticator::Bearer(tokens) = Authenticator::bearer_from_file(&path).unwrap() else {
        panic!("a bearer authenticator");
    };
    assert_eq!(tokens[0].role, ddwire::harness::identity::Role::Steward);
    // A steward reads every run, as it judges other principals' referred runs.
    assert_eq!(
        Authenticator::Bearer(tokens)
            .access_for(Some(&[("Authorization".into(), "Bearer t".into())]))
            .unwrap(),
        ddwire::harness::identity::Access::All
    );
}
