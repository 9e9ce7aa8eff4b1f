//! `GET /viewer`: the harness's runs in a browser, one self-contained page.
//!
//! The page (`viewer.html`, compiled into the binary) holds its HTML, CSS and JavaScript
//! inline: no external asset, no build step, so it works air-gapped. It reads the JSON routes
//! (`GET /runs` with its filters and `Link` paging, `/runs/{id}/waterfall`,
//! `/runs/{id}/grounding`, `/runs/{id}/spans` as stored, `/agents`) and starts an invocation
//! over `POST /agui`, following its events live. It derives nothing: a run's waterfall (span
//! order, depth, offsets, the withheld marks, the delegated runs) is [`waterfall::to_json`],
//! computed here once, the view `ddwire show --json` prints. It is served with a Content-Security-Policy that allows exactly its own
//! inline script and style (by SHA-256, CSP Level 3 §7.1) and requests to this origin, so
//! nothing a run holds can load or run anything else.

use super::identity::Access;
use super::store::RunReader;
use super::view::NO_SUCH_RUN;
use crate::harness::Result;
use crate::text::{Base64, base64};
use crate::trace::waterfall::{self, RunView};
use crate::wire::http::Response;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The page.
const PAGE: &str = include_str!("viewer.html");

/// `GET /viewer`.
pub(crate) fn page() -> Response {
    static POLICY: OnceLock<String> = OnceLock::new();
    let policy = POLICY.get_or_init(|| {
        let hash = |open: &str, close: &str| {
            let body = PAGE
                .split_once(open)
                .and_then(|(_, rest)| rest.split_once(close))
                .map_or("", |(body, _)| body);
            format!("'sha256-{}'", base64(&Sha256::digest(body.as_bytes()), Base64::Standard))
        };
        format!(
            "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            hash("<script>", "</script>"),
            hash("<style>", "</style>")
        )
    });
    Response::bytes(200, "text/html; charset=utf-8", PAGE.as_bytes().to_vec())
        .with_header("Content-Security-Policy", policy)
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Cache-Control", "no-cache")
}

/// `GET /runs/{id}/waterfall`: the stored run `id` with its delegated runs as
/// [`waterfall::to_json`] gives it (`ddwire show --json`), or `None` if the store holds no
/// such run. A delegated run `access` may not read is left out and listed as missing with the
/// words of a run the store does not hold, as the run routes answer it (404, never 403).
pub(crate) fn waterfall_json(
    store: &RunReader,
    id: &str,
    access: &Access,
) -> Result<Option<Response>> {
    let Some(mut view) = super::view::load(store, id)? else {
        return Ok(None);
    };
    if *access != Access::All {
        hide_unseen(&mut view, access);
    }
    Ok(Some(Response::json(200, &waterfall::to_json(&view))))
}

/// Move every delegated run below `view` that `access` may not see into `missing`.
fn hide_unseen(view: &mut RunView, access: &Access) {
    let (mut seen, hidden): (Vec<RunView>, Vec<RunView>) = std::mem::take(&mut view.children)
        .into_iter()
        .partition(|child| access.sees_envelope(&child.envelope));
    for child in hidden {
        view.missing
            .push((child.invocation_id().to_string(), NO_SUCH_RUN.to_string()));
    }
    for child in &mut seen {
        hide_unseen(child, access);
    }
    view.children = seen;
}

/// `GET /runs/{id}/grounding`: the run's grounding summary (`grounding.txt`) as data:
/// `{"invocation_id", "summary", "passed", "mode", "violations", "retrieval_count",
/// "chat_count"}`, the counts `null` where the summary does not give them (a failed one), and
/// `passed` `null` when the linter did not run (the agent never ran).
pub(crate) fn grounding_json(invocation_id: &str, summary: &str) -> Value {
    let parsed = parse_summary(summary).unwrap_or_default();
    json!({
        "invocation_id": invocation_id,
        "summary": summary,
        "passed": parsed.passed,
        "mode": parsed.mode,
        "violations": parsed.violations,
        "retrieval_count": parsed.counts.map(|c| c.0),
        "chat_count": parsed.counts.map(|c| c.1),
    })
}

/// What a summary says, read back; nothing for a summary that does not read.
#[derive(Default)]
struct Summary {
    /// `None` when the linter did not run.
    passed: Option<bool>,
    mode: Option<String>,
    violations: Vec<String>,
    counts: Option<(usize, usize)>,
}

/// Read [`super::grounding::GroundingReport::summary`]'s text back: `grounding: passed [<mode>] (<n> retrieval,
/// <m> chat spans)`, or `grounding: FAILED [<mode>]` and one `  - <violation>` line each.
fn parse_summary(text: &str) -> Option<Summary> {
    let mut lines = text.lines();
    let first = lines.next()?.strip_prefix("grounding: ")?;
    let (verdict, rest) = first.split_once(" [")?;
    let (mode, tail) = rest.split_once(']')?;
    let mode = (mode != "unknown mode").then(|| mode.to_string());
    let passed = match verdict {
        "passed" => true,
        "FAILED" => false,
        // The agent never ran: there was nothing to lint, which is neither verdict.
        "not run" => {
            return Some(Summary {
                mode,
                ..Summary::default()
            });
        }
        _ => return None,
    };
    let counts = tail
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(" chat spans)"))
        .and_then(|t| t.split_once(" retrieval, "))
        .and_then(|(r, c)| Some((r.parse().ok()?, c.parse().ok()?)));
    let violations = lines
        .filter_map(|l| l.strip_prefix("  - "))
        .map(str::to_string)
        .collect();
    Some(Summary {
        passed: Some(passed),
        mode,
        violations,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::grounding::GroundingReport;

    #[test]
    fn a_grounding_summary_reads_back_as_the_report_that_wrote_it() {
        let passed = GroundingReport {
            passed: true,
            not_run: None,
            mode: Some("retrieval".into()),
            violations: vec![],
            retrieval_count: 2,
            chat_count: 1,
        };
        let doc = grounding_json("r1", &passed.summary());
        assert_eq!(doc["passed"], true);
        assert_eq!(doc["mode"], "retrieval");
        assert_eq!(
            (doc["retrieval_count"].clone(), doc["chat_count"].clone()),
            (json!(2), json!(1))
        );
        let failed = GroundingReport {
            passed: false,
            not_run: None,
            mode: Some("input_only".into()),
            violations: vec!["R2: payload cites 'src:x'".into(), "R3: no evidence".into()],
            retrieval_count: 0,
            chat_count: 0,
        };
        let doc = grounding_json("r2", &failed.summary());
        assert_eq!(doc["passed"], false);
        assert_eq!(
            doc["violations"],
            json!(["R2: payload cites 'src:x'", "R3: no evidence"])
        );
        assert_eq!(
            doc["retrieval_count"],
            Value::Null,
            "a failed summary gives no counts"
        );
        let not_run = grounding_json(
            "r4",
            "grounding: not run [none] (the agent was not run: the profile does not enable it)",
        );
        assert_eq!(not_run["passed"], Value::Null, "neither verdict");
        assert_eq!(not_run["mode"], "none");
        let odd = grounding_json("r3", "something else");
        assert_eq!(odd["passed"], Value::Null);
        assert_eq!(odd["summary"], "something else");
    }

    /// A reader who sees only its own runs is told of another principal's delegated run (its
    /// id is in the parent, which the reader may read) only that the store holds no such run,
    /// and nothing below it.
    #[test]
    fn a_delegated_run_the_reader_may_not_see_is_missing_from_its_waterfall() {
        let run = |id: &str, principal: &str, children: Vec<RunView>| RunView {
            envelope: json!({"invocation_id": id, "acting_for": {"principal_id": principal}}),
            children,
            ..RunView::default()
        };
        let theirs = run("c2", "urn:bob", vec![run("g1", "urn:alice", vec![])]);
        let mut view = run(
            "p",
            "urn:alice",
            vec![
                run("c1", "urn:alice", vec![run("g2", "urn:bob", vec![])]),
                theirs,
            ],
        );
        let all = view.clone();
        hide_unseen(&mut view, &Access::Own("urn:alice".into()));
        let ids = |v: &RunView| -> Vec<String> {
            v.children
                .iter()
                .map(|c| c.invocation_id().to_string())
                .collect()
        };
        assert_eq!(ids(&view), ["c1"]);
        assert_eq!(view.missing, [("c2".to_string(), NO_SUCH_RUN.to_string())]);
        assert!(
            ids(&view.children[0]).is_empty(),
            "a grandchild is hidden too"
        );
        assert_eq!(view.children[0].missing[0].0, "g2");
        let json = waterfall::to_json(&view).to_string();
        assert!(!json.contains("urn:bob") && !json.contains("g1"), "{json}");
        let mut auditor = all.clone();
        hide_unseen(&mut auditor, &Access::All);
        assert_eq!(ids(&auditor), ["c1", "c2"]);
    }

    #[test]
    fn the_page_may_run_only_its_own_script_and_style() {
        let response = page();
        let policy = response
            .headers
            .iter()
            .find(|(k, _)| k == "Content-Security-Policy")
            .map(|(_, v)| v.clone())
            .unwrap();
        let script = PAGE
            .split_once("<script>")
            .unwrap()
            .1
            .split_once("</script>")
            .unwrap()
            .0;
        let digest = base64(&Sha256::digest(script.as_bytes()), Base64::Standard);
        assert!(
            policy.contains(&format!("script-src 'sha256-{digest}'")),
            "{policy}"
        );
        assert!(policy.starts_with("default-src 'none'"));
        assert!(policy.contains("connect-src 'self'"));
        // One script and one style block: the hashes cover the whole page's code.
        assert_eq!(PAGE.matches("<script").count(), 1);
        assert_eq!(PAGE.matches("<style").count(), 1);
        // The only absolute URL is the SVG namespace, which names and loads nothing.
        let urls: Vec<&str> = PAGE
            .match_indices("http")
            .map(|(i, _)| PAGE[i..].split(['"', ' ', ')']).next().unwrap_or(""))
            .filter(|u| u.starts_with("http:") || u.starts_with("https:"))
            .collect();
        assert_eq!(urls, ["http://www.w3.org/2000/svg"], "no external asset");
    }
}
