//! The policy gate: the deployment's institutional profile decides which agents may run.
//!
//! The profile belongs to the deployment: the operator names one file (`--profile` or
//! `DD_PROFILE`) and a request cannot name another. The profile, not the agent, states each
//! enabled agent's action class; the class a card declares is checked against it, never
//! trusted on its own. A profile key nothing enforces is refused, so no steward is told a rule
//! is in force when it is not.

use crate::contract::problem::ProblemType;
use crate::contract::{ProblemDetails, canonical::sha256_hex};
use crate::harness::{HarnessError, Result};
use crate::json::python::str_repr;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The whole vocabulary of a profile.
pub(crate) const PROFILE_KEYS: [&str; 5] = [
    "actions_requiring_approval",
    "agents",
    "description",
    "profile_id",
    "version",
];

/// The profile ddwire ships for the demo and a first run: every built-in agent enabled with the
/// class it declares, nothing requiring approval, except `echo.wire`, a benchmarking tool the
/// demo shows being refused.
pub(crate) const DEFAULT_PROFILE: &str = r#"{
  "profile_id": "ddwire-default",
  "version": 1,
  "description": "Permissive profile for the ddwire demo: the built-in agents run, nothing needs approval. echo.wire, a benchmarking tool, is deliberately not enabled.",
  "agents": {
    "hello.world": "converse",
    "stub.abstain": "advise",
    "director.route": "converse",
    "demo.ungrounded": "converse",
    "demo.failing": "advise"
  },
  "actions_requiring_approval": []
}
"#;

/// An institutional profile, as loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The profile's id (`profile:<id>@v<version>` in envelopes).
    pub(crate) profile_id: String,
    /// The profile's version.
    pub(crate) version: u64,
    /// What the profile is for, for a person.
    pub(crate) description: String,
    /// Agent id → the action class the steward assigns it.
    pub(crate) agents: BTreeMap<String, String>,
    /// Action classes a run of which is referred to a data steward rather than run.
    pub(crate) actions_requiring_approval: BTreeSet<String>,
    /// SHA-256 of the file's bytes: what an envelope records as `policy_digest`.
    pub(crate) digest: String,
    /// Where it was read from.
    pub(crate) source: String,
}

impl Profile {
    /// Load the deployment's profile from a JSON file.
    pub(crate) fn load(path: &Path) -> Result<Profile> {
        let bytes = std::fs::read(path).map_err(|e| {
            HarnessError::config(
                path.display().to_string(),
                format!("profile not found at {}: {e}", path.display()),
            )
        })?;
        Profile::from_bytes(&bytes, &path.display().to_string())
    }

    /// The shipped default profile.
    pub(crate) fn default_profile() -> Profile {
        Profile::from_bytes(DEFAULT_PROFILE.as_bytes(), "<built-in default profile>")
            .expect("the shipped profile is valid")
    }

    /// Read a profile from its bytes; `source` names it in messages.
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Profile> {
        let src = str_repr(source);
        let doc = crate::json::parse(bytes, crate::json::Limits::DEFAULT)
            .map_err(|e| HarnessError::config(source, format!("profile {src} is not JSON: {e}")))?;
        let Value::Object(map) = doc else {
            return Err(HarnessError::config(
                source,
                format!("profile {src} is not a mapping"),
            ));
        };
        let unknown: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| !PROFILE_KEYS.contains(k))
            .collect();
        if !unknown.is_empty() {
            return Err(HarnessError::config(
                source,
                format!(
                    "profile {src} has keys nothing enforces: {}; the vocabulary is {}",
                    unknown.join(", "),
                    PROFILE_KEYS.join(", ")
                ),
            ));
        }
        let malformed =
            |why: &str| HarnessError::config(source, format!("profile {src} is malformed: {why}"));
        let profile_id = match map.get("profile_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(malformed("profile_id must be a non-empty string")),
        };
        let ref_ok =
            crate::contract::formats::is_policy_bundle_ref(&format!("profile:{profile_id}@v1"));
        if !ref_ok {
            return Err(malformed(
                "profile_id must be lower-case letters, digits, '.' and '-'",
            ));
        }
        let version = match map.get("version") {
            None => Some(1),
            Some(Value::Number(n)) => {
                crate::json::lenient::integer(n).and_then(|v| v.try_into().ok())
            }
            Some(_) => None,
        }
        .ok_or_else(|| malformed("version must be a non-negative integer"))?;
        let agents = match map.get("agents") {
            None | Some(Value::Null) => Some(BTreeMap::new()),
            Some(Value::Object(a)) => a
                .iter()
                .map(|(k, v)| v.as_str().map(|c| (k.clone(), c.to_string())))
                .collect(),
            Some(_) => None,
        }
        .ok_or_else(|| malformed("agents must map each agent_id to an action class"))?;
        let actions_requiring_approval = match map.get("actions_requiring_approval") {
            None | Some(Value::Null) => Some(BTreeSet::new()),
            Some(Value::Array(a)) => a.iter().map(|v| v.as_str().map(str::to_string)).collect(),
            Some(_) => None,
        }
        .ok_or_else(|| malformed("actions_requiring_approval must be a list of action classes"))?;
        Ok(Profile {
            profile_id,
            version,
            description: map
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            agents,
            actions_requiring_approval,
            digest: sha256_hex(bytes),
            source: source.to_string(),
        })
    }

    /// What an envelope records as `policy_bundle_ref`: `profile:<id>@v<version>`.
    pub(crate) fn bundle_ref(&self) -> String {
        format!("profile:{}@v{}", self.profile_id, self.version)
    }
}

/// The gate's decision about one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Run it.
    Permitted,
    /// Do not run it: refer to a data steward (`reason` says why).
    RequiresApproval { reason: String },
    /// The profile does not enable it.
    NotEnabled { reason: String },
    /// It declares another class than the profile assigns it.
    ClassMismatch { reason: String, assigned: String },
}

impl Decision {
    /// A short name for the decision, as the trace records it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Decision::Permitted => "permitted",
            Decision::RequiresApproval { .. } => "requires_approval",
            Decision::NotEnabled { .. } => "not_enabled",
            Decision::ClassMismatch { .. } => "class_mismatch",
        }
    }
}

/// May `agent_id`, which declares `declared`, run under `profile`?
pub(crate) fn gate(profile: &Profile, agent_id: &str, declared: &str) -> Decision {
    let id = str_repr(agent_id);
    let Some(assigned) = profile.agents.get(agent_id) else {
        return Decision::NotEnabled {
            reason: format!("agent {id} not enabled"),
        };
    };
    if declared != assigned {
        return Decision::ClassMismatch {
            reason: format!(
                "agent {id} declares action class {}; profile {} assigns it {}",
                str_repr(declared),
                str_repr(&profile.profile_id),
                str_repr(assigned)
            ),
            assigned: assigned.clone(),
        };
    }
    if profile.actions_requiring_approval.contains(assigned) {
        return Decision::RequiresApproval {
            reason: format!(
                "action class {} requires approval under {}",
                str_repr(assigned),
                str_repr(&profile.profile_id)
            ),
        };
    }
    Decision::Permitted
}

/// The problem details of a refusal (`agent-not-permitted` or `action-class-mismatch`).
pub(crate) fn refusal_problem(
    profile: &Profile,
    agent_id: &str,
    declared: &str,
    decision: &Decision,
) -> Option<ProblemDetails> {
    match decision {
        Decision::NotEnabled { .. } => Some(ProblemType::AgentNotPermitted.with_detail(format!(
            "Agent '{agent_id}' is not listed in agents of profile '{}'.",
            profile.profile_id
        ))),
        Decision::ClassMismatch { assigned, .. } => Some(ProblemType::ActionClassMismatch.with_detail(format!(
            "Agent '{agent_id}' declares '{declared}'; profile '{}' assigns it '{assigned}'. The steward must update the profile before this agent runs.",
            profile.profile_id
        ))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(json: &str) -> Result<Profile> {
        Profile::from_bytes(json.as_bytes(), "test.json")
    }

    #[test]
    fn gate_matches_the_class_the_profile_assigns_not_the_one_the_agent_declares() {
        let p = profile(r#"{"profile_id": "t", "agents": {"a": "advise"}}"#).unwrap();
        assert_eq!(gate(&p, "a", "advise"), Decision::Permitted);
        assert!(matches!(
            gate(&p, "a", "publish"),
            Decision::ClassMismatch { .. }
        ));
        assert!(matches!(
            gate(&p, "b", "advise"),
            Decision::NotEnabled { .. }
        ));
    }

    #[test]
    fn action_requiring_approval_is_referred() {
        let p = profile(r#"{"profile_id": "t", "agents": {"a": "publish"}, "actions_requiring_approval": ["publish"]}"#).unwrap();
        assert_eq!(
            gate(&p, "a", "publish"),
            Decision::RequiresApproval {
                reason: "action class 'publish' requires approval under 't'".into()
            }
        );
    }

    #[test]
    fn a_profile_key_nothing_enforces_is_refused() {
        let err = profile(r#"{"profile_id": "t", "max_tokens": 5}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("keys nothing enforces: max_tokens"), "{err}");
    }

    #[test]
    fn missing_profile_is_a_configuration_error() {
        let err = Profile::load(Path::new("/nonexistent/profile.json")).unwrap_err();
        assert!(
            matches!(err, HarnessError::Config { .. })
                && err.to_string().contains("profile not found"),
            "{err}"
        );
    }

    #[test]
    fn the_envelope_records_the_profile_by_ref_and_file_digest() {
        let text = r#"{"profile_id": "test-restrictive", "version": 2, "agents": {}}"#;
        let p = profile(text).unwrap();
        assert_eq!(p.bundle_ref(), "profile:test-restrictive@v2");
        assert_eq!(p.digest, sha256_hex(text.as_bytes()));
    }

    #[test]
    fn the_shipped_default_profile_loads() {
        let p = Profile::default_profile();
        assert_eq!(p.bundle_ref(), "profile:ddwire-default@v1");
        assert!(!p.agents.contains_key("echo.wire"));
    }
}
