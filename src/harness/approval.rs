//! A data steward's decision on a run the profile referred for approval.
//!
//! A run whose agent's action class is in the profile's `actions_requiring_approval` is stored
//! `referred` to `data_steward` (`policy_requires_approval`), and its agent is not run. A
//! caller whose bearer token has the role `steward` may then decide it, once:
//!
//! - **approve**: the agent runs on the referred run's stored input, for the principal the
//!   referred run acted for, as a new run (new id, same conversation) that the policy gate lets
//!   through for this approval alone;
//! - **decline**: nothing runs.
//!
//! The referred run stays as it was written. The decision is a [`Decision`] record, written
//! whole, once, at `<runs>/.ddwire/decisions/<referred id>.json`: a second decision on the
//! same run (an approval replayed, an approval after a decline) finds it there and is refused.
//! An approved run keeps the same record beside its envelope (`approval.json`), and its root
//! `invoke_agent` span carries an `approved` event naming the referred run, the steward and the
//! time. The contract's envelope has no field for any of this, so it stays in the run store
//! beside the envelope, as `turns.json` does for a suspended run.
//!
//! An approval is bound to what the steward saw. It is refused when:
//! - the run was not referred by the policy gate (an agent that referred its own run would only
//!   refer it again);
//! - its approval window has passed: `serve --approval-for` seconds after the referral
//!   ([`APPROVE_FOR`] by default);
//! - the harness's profile is no longer the one that referred it (`policy_digest`);
//! - the agent is gone or answers with another version;
//! - the stored input no longer hashes to the referred trace's `dd.input_hash`.
//!
//! A decline is refused only when the run is not referred, or already decided. An approval
//! whose new run could not even start (the agent unknown, the store read-only) is taken back,
//! so the steward may try again; once its run is stored, whatever the outcome, it is spent.

use super::HarnessError;
use super::store::RunReader;
use crate::contract::{OutcomeStatus, Principal, ReasonCode};
use crate::trace::attr;
use serde_json::{Value, json};
use std::fmt;
use std::path::{Path, PathBuf};

/// How long after its referral a run may be approved, by default: one day.
pub(crate) const APPROVE_FOR: std::time::Duration = std::time::Duration::from_secs(86_400);
/// The decision's record beside an approved run's envelope.
pub(crate) const APPROVAL_FILE: &str = "approval.json";
/// Where decisions are kept, under the store's own folder.
const DECISIONS_DIR: &str = "decisions";

/// What a steward decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Approved,
    Declined,
}

impl Verdict {
    /// `approved` or `declined`, as the record spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::Declined => "declined",
        }
    }
}

/// Why a decision on a referred run was refused.
#[derive(Debug)]
pub(crate) enum ApprovalError {
    /// The caller's token does not have the role `steward` (or the harness takes no tokens).
    NotSteward(String),
    /// No stored run has that id (or the caller may not see it).
    NoSuchRun(String),
    /// The run was not referred by the policy gate; the text says what it is.
    NotApprovable(String),
    /// The run was decided already; the record of that decision.
    AlreadyDecided(Box<Value>),
    /// The approval window closed at this time.
    Expired(String),
    /// What the steward would approve is no longer what was referred; the text says what moved.
    Changed(String),
    /// The new run could not be made, or the decision not written.
    Failed(String),
}

impl ApprovalError {
    /// The HTTP status this refusal is answered with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            ApprovalError::NotSteward(_) => 403,
            ApprovalError::NoSuchRun(_) => 404,
            ApprovalError::Expired(_) => 410,
            ApprovalError::NotApprovable(_)
            | ApprovalError::AlreadyDecided(_)
            | ApprovalError::Changed(_) => 409,
            ApprovalError::Failed(_) => 500,
        }
    }
}

impl fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalError::NotSteward(why) => {
                write!(f, "only a data steward may decide a referred run: {why}")
            }
            ApprovalError::NoSuchRun(id) => write!(f, "no run {id}"),
            ApprovalError::NotApprovable(why) => f.write_str(why),
            ApprovalError::AlreadyDecided(record) => {
                let s = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or("?");
                write!(
                    f,
                    "run {} was already {} by {} at {}",
                    s("referred_invocation_id"),
                    s("decision"),
                    record
                        .pointer("/decided_by/principal_id")
                        .and_then(Value::as_str)
                        .unwrap_or("?"),
                    s("decided_at"),
                )?;
                if let Some(run) = record.get("invocation_id").and_then(Value::as_str) {
                    write!(f, " (run {run})")?;
                }
                f.write_str("; a decision is made once")
            }
            ApprovalError::Expired(until) => write!(
                f,
                "the approval window closed at {until}; send the request again to have it referred anew"
            ),
            ApprovalError::Changed(what) => write!(
                f,
                "{what}, so this is no longer the run that was referred; send the request again to have it judged anew"
            ),
            ApprovalError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ApprovalError {}

/// A referred run checked as decidable: what a decision on it is bound to.
#[derive(Debug)]
pub(crate) struct Referral {
    pub(crate) invocation_id: String,
    pub(crate) request: Value,
    pub(crate) acting_for: Principal,
    pub(crate) agent_id: String,
    pub(crate) agent_version: String,
    pub(crate) input_hash: String,
    pub(crate) policy_digest: String,
    pub(crate) approvable_until: String,
    /// The referred run's root span: the approved run's root links to it.
    pub(crate) root: crate::trace::SpanContext,
}

/// Read the stored run `id` and check that a steward may decide it now: referred by the policy
/// gate, not decided, and within `approve_for` of its referral.
pub(crate) fn referral(
    reader: &RunReader,
    id: &str,
    approve_for: std::time::Duration,
) -> Result<Referral, ApprovalError> {
    let failed = |e: HarnessError| ApprovalError::Failed(e.to_string());
    let envelope = reader
        .envelope(id)
        .map_err(failed)?
        .ok_or_else(|| ApprovalError::NoSuchRun(id.to_string()))?;
    let outcome = &envelope["outcome"];
    let status = outcome["status"].as_str().unwrap_or("?");
    if status != OutcomeStatus::Referred.as_str() {
        return Err(ApprovalError::NotApprovable(format!(
            "run {id} is {status}, not referred: only a referred run waits for a steward"
        )));
    }
    let reason = outcome["reason_code"].as_str().unwrap_or("?");
    if reason != ReasonCode::PolicyRequiresApproval.as_str() {
        return Err(ApprovalError::NotApprovable(format!(
            "run {id} was referred by its agent ({reason}), not by the profile: approving it \
             would only run the agent to refer it again"
        )));
    }
    if let Some(record) = decision(reader.root(), id).map_err(failed)? {
        return Err(ApprovalError::AlreadyDecided(Box::new(record)));
    }
    let referred_at = envelope["completed_at"]
        .as_str()
        .and_then(crate::time::parse_rfc3339)
        .ok_or_else(|| {
            ApprovalError::Failed(format!("run {id}'s envelope has no readable completed_at"))
        })?;
    let until = referred_at.saturating_add(approve_for.as_nanos() as i128);
    let approvable_until = crate::time::rfc3339(until);
    if (crate::time::now_ns() as i128) > until {
        return Err(ApprovalError::Expired(approvable_until));
    }
    let request = reader
        .request(id)
        .map_err(failed)?
        .ok_or_else(|| ApprovalError::Failed(format!("run {id} keeps no request.json")))?;
    let acting_for = <Principal as serde::Deserialize>::deserialize(&envelope["acting_for"])
        .map_err(|e| ApprovalError::Failed(format!("run {id}'s acting_for: {e}")))?;
    let (root, recorded_hash) = reader
        .spans(id)
        .map_err(failed)?
        .and_then(|lines| root_input_hash(&lines))
        .ok_or_else(|| {
            ApprovalError::Failed(format!(
                "run {id}'s trace records no {} on its root span",
                attr::INPUT_HASH
            ))
        })?;
    let input_hash = crate::contract::canonical::input_hash(&request["input"]);
    if input_hash != recorded_hash {
        return Err(ApprovalError::Changed(format!(
            "the stored input of run {id} hashes to {input_hash}, but its trace recorded {recorded_hash}"
        )));
    }
    let text = |k: &str| envelope[k].as_str().unwrap_or("").to_string();
    if request["agent_id"].as_str() != Some(text("agent_id").as_str()) {
        return Err(ApprovalError::Changed(format!(
            "run {id}'s request.json names agent {}, its envelope {}",
            request["agent_id"],
            text("agent_id")
        )));
    }
    Ok(Referral {
        invocation_id: id.to_string(),
        request,
        acting_for,
        agent_id: text("agent_id"),
        agent_version: text("agent_version"),
        input_hash,
        policy_digest: text("policy_digest"),
        approvable_until,
        root,
    })
}

/// The run's root `invoke_agent` span, and the `dd.input_hash` it recorded.
fn root_input_hash(lines: &str) -> Option<(crate::trace::SpanContext, String)> {
    lines
        .lines()
        .filter_map(|l| crate::trace::from_json(l).ok())
        .filter(|s| s.is(crate::trace::SpanName::InvokeAgent) && s.parent_id.is_none())
        .find_map(|root| match root.attributes.get(attr::INPUT_HASH) {
            Some(crate::trace::AttrValue::String(h)) => Some((root.context(), h.clone())),
            _ => None,
        })
}

/// The record of `verdict` on `referral` by `steward`, now; `run` is the approved run's id.
pub(crate) fn record(
    referral: &Referral,
    verdict: Verdict,
    steward: &Principal,
    reason: Option<&str>,
    run: Option<&str>,
) -> Value {
    let mut record = json!({
        "decision": verdict.as_str(),
        "referred_invocation_id": referral.invocation_id,
        "decided_by": {"principal_id": steward.principal_id, "name": steward.name},
        "decided_at": crate::time::now_rfc3339(),
        "agent_id": referral.agent_id,
        "agent_version": referral.agent_version,
        "input_hash": referral.input_hash,
        "policy_digest": referral.policy_digest,
        "approvable_until": referral.approvable_until,
    });
    if let Some(reason) = reason {
        record["reason"] = Value::String(reason.to_string());
    }
    if let Some(run) = run {
        record["invocation_id"] = Value::String(run.to_string());
    }
    record
}

/// Where the decisions on referred runs are kept: `<runs>/.ddwire/decisions/`.
fn decisions_dir(root: &Path) -> PathBuf {
    root.join(super::store::CONTROL_DIR).join(DECISIONS_DIR)
}

/// The decision recorded on the referred run `id`, if any; a record that cannot be read is an
/// error, never taken for no decision.
pub(crate) fn decision(root: &Path, id: &str) -> crate::harness::Result<Option<Value>> {
    if !crate::ids::is_uuid7(id) {
        return Ok(None);
    }
    let path = decisions_dir(root).join(format!("{id}.json"));
    let unreadable = |reason: String| super::store::StoreError::Unreadable {
        file: format!(".ddwire/{DECISIONS_DIR}/{id}.json in the run store"),
        reason,
    };
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| unreadable(format!("is not JSON: {e}")).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(e.to_string()).into()),
    }
}

/// Write `record` as the one decision on the run it names: whole (written aside and synced),
/// and only if none is there yet. `link(2)` refuses an existing name, so of two decisions at
/// once exactly one is written; the other gets [`ApprovalError::AlreadyDecided`].
pub(crate) fn claim(root: &Path, record: &Value) -> Result<(), ApprovalError> {
    use std::io::Write;
    let id = record["referred_invocation_id"].as_str().unwrap_or("");
    let failed = |e: std::io::Error| {
        ApprovalError::Failed(format!("the decision on run {id} was not written: {e}"))
    };
    let dir = decisions_dir(root);
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let aside = dir.join(format!("{id}.{}.new", crate::ids::new_uuid7()));
    let written = (|| {
        let mut file = std::fs::File::create(&aside)?;
        file.write_all(record.to_string().as_bytes())?;
        file.sync_all()
    })();
    let linked = written.and_then(|()| std::fs::hard_link(&aside, dir.join(format!("{id}.json"))));
    let _ = std::fs::remove_file(&aside);
    match linked {
        Ok(()) => {
            // The name is durable once the directory is.
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let earlier = decision(root, id)
                .ok()
                .flatten()
                .unwrap_or_else(|| json!({"referred_invocation_id": id}));
            Err(ApprovalError::AlreadyDecided(Box::new(earlier)))
        }
        Err(e) => Err(failed(e)),
    }
}

/// The steward's decision a stored run takes part in: the record beside a run that carried out
/// an approval, else the decision on a referred run; `None` if there is neither.
pub(crate) fn of_run(reader: &RunReader, id: &str) -> crate::harness::Result<Option<Value>> {
    match reader.beside(id, APPROVAL_FILE)? {
        Some(record) => Ok(Some(record)),
        None => decision(reader.root(), id),
    }
}

/// Take back a claimed approval whose run was never made, so the steward may decide again.
pub(crate) fn release(root: &Path, id: &str) {
    if crate::ids::is_uuid7(id) {
        let _ = std::fs::remove_file(decisions_dir(root).join(format!("{id}.json")));
    }
}
