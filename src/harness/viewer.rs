//! `GET /viewer`: the harness's runs in a browser, one self-contained page.
//!
//! The page (`viewer.html`, compiled into the binary) holds its HTML, CSS and JavaScript
//! inline: no external asset, no build step, so it works air-gapped. It reads the JSON routes
//! (`GET /runs` with its filters and `Link` paging, `/runs/{id}`, `/runs/{id}/spans`,
//! `/runs/{id}/grounding`, `/agents`) and starts an invocation over `POST /agui`, following
//! its events live. It is served with a Content-Security-Policy that allows exactly its own
//! inline script and style (by SHA-256, CSP Level 3 §7.1) and requests to this origin, so
//! nothing a run holds can load or run anything else.

use crate::wire::http::Response;
use crate::wire::wirelog::base64;
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
            format!("'sha256-{}'", base64(&Sha256::digest(body.as_bytes())))
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

/// `GET /runs/{id}/grounding`: the run's grounding summary (`grounding.txt`) as data:
/// `{"invocation_id", "summary", "passed", "mode", "violations", "retrieval_count",
/// "chat_count"}`, the counts `null` where the summary does not give them (a failed one), and
/// `passed` `null` when the linter did not run (the agent never ran).
pub(crate) fn grounding_json(invocation_id: &str, summary: &str) -> Value {
    let parsed = parse_summary(summary);
    json!({
        "invocation_id": invocation_id,
        "summary": summary,
        "passed": parsed.as_ref().and_then(|p| p.passed),
        "mode": parsed.as_ref().and_then(|p| p.mode.clone()),
        "violations": parsed.as_ref().map(|p| p.violations.clone()).unwrap_or_default(),
        "retrieval_count": parsed.as_ref().and_then(|p| p.counts.map(|c| c.0)),
        "chat_count": parsed.as_ref().and_then(|p| p.counts.map(|c| c.1)),
    })
}

/// What a summary says, read back.
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
    let passed = match verdict {
        "passed" => true,
        "FAILED" => false,
        // The agent never ran: there was nothing to lint, which is neither verdict.
        "not run" => {
            return Some(Summary {
                passed: None,
                mode: (mode != "unknown mode").then(|| mode.to_string()),
                violations: Vec::new(),
                counts: None,
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
        mode: (mode != "unknown mode").then(|| mode.to_string()),
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
        let digest = base64(&Sha256::digest(script.as_bytes()));
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
