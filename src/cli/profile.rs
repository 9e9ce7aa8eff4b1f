//! `ddwire profile`: check an institutional profile, or explain its keys.

use super::args::{Flag, Parsed};
use super::{Command, setup};
use crate::harness::policy::Profile;
use std::path::Path;

pub(crate) static COMMAND: Command = Command {
    name: "profile",
    summary: "Check an institutional profile and say what it permits, or explain its keys",
    usage: "profile [FILE] [--explain]",
    details: "Reads FILE (default: --profile's DD_PROFILE, else the shipped profile) as the harness\n\
              would, and prints what every run under it records (policy_bundle_ref and\n\
              policy_digest) and what it lets each agent do. A key nothing enforces, or a\n\
              malformed value, is an error naming it. --explain prints what each key means.\n\
              examples/profile.json uses every key.",
    flags: &[Flag::switch(
        "explain",
        "Explain every key a profile may hold",
    )],
    run,
};

/// What each key means, in the order a profile is usually written.
const KEYS: &str = "\
A profile is a JSON object with these keys and no others (the harness refuses a key it would
not enforce, so nobody believes a rule is in force when it is not):

  profile_id   required. Lower-case letters, digits, '.' and '-'. Every envelope records
               policy_bundle_ref = \"profile:<profile_id>@v<version>\".
  version      optional, default 1. A non-negative integer; raise it when the rules change.
  description  optional. What the profile is for, for a person.
  agents       optional, default {}. Maps each agent_id the institution enables to the action
               class the data steward assigns it (\"converse\", \"advise\", ...). An agent not
               listed is refused (agent-not-permitted, 403); an agent whose card declares
               another class is refused (action-class-mismatch, 403). The agent never runs.
  actions_requiring_approval
               optional, default []. Action classes whose runs are referred to a data steward
               (outcome referred, reason policy_requires_approval) instead of run.

Every envelope also records policy_digest, the SHA-256 of the profile file's bytes, so an
auditor can tell exactly which file was in force. The operator names the file (--profile or
DD_PROFILE); a request cannot name another.
";

fn run(args: &Parsed) -> Result<i32, String> {
    if args.switch("explain") {
        out!("{KEYS}");
        return Ok(0);
    }
    let profile = match args.positionals.as_slice() {
        [] => setup::profile(args)?,
        [path] => Profile::load(Path::new(path)).map_err(|e| e.to_string())?,
        _ => return Err("expects at most one FILE; see `ddwire profile --help`".into()),
    };
    outln!("profile            {}", profile.source);
    outln!("policy_bundle_ref  {}", profile.bundle_ref());
    outln!("policy_digest      {}", profile.digest);
    if !profile.description.is_empty() {
        outln!("description        {}", profile.description);
    }
    if profile.agents.is_empty() {
        outln!("agents             none: every run is refused");
    }
    for (agent, class) in &profile.agents {
        let verdict = if profile.actions_requiring_approval.contains(class) {
            "referred to a data steward"
        } else {
            "runs"
        };
        outln!("  {agent:<24} {class:<10} {verdict}");
    }
    let unused: Vec<&str> = profile
        .actions_requiring_approval
        .iter()
        .filter(|c| !profile.agents.values().any(|a| a == *c))
        .map(String::as_str)
        .collect();
    if !unused.is_empty() {
        outln!(
            "requiring approval {} (no enabled agent has this class yet)",
            unused.join(", ")
        );
    }
    Ok(0)
}
