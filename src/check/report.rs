//! A check's results, and the three ways to print them: a readable report, JSON, and JUnit
//! XML (the schema Jenkins, GitLab and GitHub Actions' test reporters read: `testsuites` /
//! `testsuite` / `testcase` with `failure`, `skipped` and `system-out`).

use super::probes::Level;
use crate::wire::a2a::Binding;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;

/// How one probe ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The endpoint did what the probe checks.
    Pass,
    /// It broke a SHOULD or a strictness rule the mainstream SDKs break too.
    Warn,
    /// It broke a MUST (or a SHOULD, under `--strict`).
    Fail,
    /// The probe did not apply, or could not run because an earlier one failed.
    Skip,
}

impl Status {
    /// `PASS`, `WARN`, `FAIL`, `SKIP`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// The result of one probe.
#[derive(Clone, Debug)]
pub struct ProbeResult {
    /// The probe's id, e.g. `jsonrpc.parse-error`.
    pub(crate) id: &'static str,
    /// The binding it ran in, for the probes that run once per binding.
    pub(crate) binding: Option<Binding>,
    /// MUST (a violation fails) or SHOULD (a violation warns).
    pub(crate) level: Level,
    /// The section of A2A 0.3 / 1.0 or JSON-RPC 2.0 it checks.
    pub(crate) spec: &'static str,
    /// What it checks, in one line.
    pub(crate) title: &'static str,
    /// How it ended.
    pub status: Status,
    /// What came back when it did not pass, why it was skipped, or a note on a pass.
    pub(crate) detail: Option<String>,
    /// The time the probe took, requests included.
    pub(crate) latency: Duration,
}

impl ProbeResult {
    /// The id with its binding: `jsonrpc.parse-error [1.0]`.
    pub(crate) fn name(&self) -> String {
        match self.binding {
            Some(b) => format!("{} [{}]", self.id, b.version()),
            None => self.id.to_string(),
        }
    }
}

/// Everything a check found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The URL checked.
    pub(crate) url: String,
    /// Where the card was read, if it was.
    pub(crate) card_url: Option<String>,
    /// The bindings the binding probes ran in.
    pub(crate) bindings: Vec<Binding>,
    /// What the check could not probe, and why (a binding the card does not declare).
    pub(crate) notes: Vec<String>,
    /// Whether warnings count as failures.
    pub(crate) strict: bool,
    /// TLS certificates were not verified (`--insecure`): every format says so.
    pub(crate) insecure: bool,
    /// Every probe's result, in the order they ran.
    pub results: Vec<ProbeResult>,
    /// The whole check's wall time.
    pub(crate) elapsed: Duration,
}

/// Counts of each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Probes that passed.
    pub(crate) passed: usize,
    /// Probes that warned.
    pub(crate) warned: usize,
    /// Probes that failed.
    pub(crate) failed: usize,
    /// Probes that were skipped.
    pub(crate) skipped: usize,
}

/// What every format says of a check run with `--insecure`.
pub(crate) const INSECURE: &str = "--insecure: TLS certificates were not verified (any CA, any host); this run proves nothing about the server's identity";

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl Report {
    /// How many probes ended each way.
    pub(crate) fn tally(&self) -> Tally {
        let count = |status| self.results.iter().filter(|r| r.status == status).count();
        Tally {
            passed: count(Status::Pass),
            warned: count(Status::Warn),
            failed: count(Status::Fail),
            skipped: count(Status::Skip),
        }
    }

    /// Whether the endpoint passed: no failure (warnings are failures under `--strict`,
    /// where the probes already report them as such).
    pub(crate) fn passed(&self) -> bool {
        self.tally().failed == 0
    }

    /// The process exit code: 0 passed, 1 a probe failed.
    pub fn exit_code(&self) -> i32 {
        if self.passed() { 0 } else { 1 }
    }

    /// The versions of the bindings probed.
    fn versions(&self) -> Vec<&'static str> {
        self.bindings.iter().map(|b| b.version()).collect()
    }

    /// One line: `18 passed, 2 warnings, 0 failed, 3 skipped in 41.2 ms: PASSED`.
    pub(crate) fn summary(&self) -> String {
        let t = self.tally();
        format!(
            "{} passed, {} warning{}, {} failed, {} skipped in {:.1} ms: {}",
            t.passed,
            t.warned,
            if t.warned == 1 { "" } else { "s" },
            t.failed,
            t.skipped,
            ms(self.elapsed),
            if self.passed() { "PASSED" } else { "FAILED" }
        )
    }

    /// The readable report: one line per probe, the detail of each that did not pass
    /// indented under it, the summary last.
    pub fn text(&self) -> String {
        let mut out = format!("ddwire check {}\n", self.url);
        if let Some(card) = &self.card_url {
            let bindings = match self.versions().join(", ") {
                none if none.is_empty() => "none".to_string(),
                some => some,
            };
            let strict = if self.strict { "; strict" } else { "" };
            let _ = writeln!(out, "card {card}; bindings probed: {bindings}{strict}");
        }
        if self.insecure {
            let _ = writeln!(out, "warning: {INSECURE}");
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out.push('\n');
        let width = self
            .results
            .iter()
            .map(|r| r.name().chars().count())
            .max()
            .unwrap_or(0);
        for r in &self.results {
            let _ = writeln!(
                out,
                "{}  {:<width$}  {:>9.1} ms  {} {}",
                r.status.label(),
                r.name(),
                ms(r.latency),
                r.level.label(),
                r.spec,
            );
            let _ = match (r.status, &r.detail) {
                (Status::Warn | Status::Fail, detail) => writeln!(
                    out,
                    "      rule:  {}\n      found: {}",
                    r.title,
                    detail.as_deref().unwrap_or("?")
                ),
                (Status::Pass, Some(note)) => writeln!(out, "      note: {note}"),
                (Status::Skip, Some(why)) => writeln!(out, "      skipped: {why}"),
                _ => Ok(()),
            };
        }
        let _ = writeln!(out, "\n{}", self.summary());
        out
    }

    /// The report as JSON: the target, the summary, and every probe.
    pub(crate) fn json(&self) -> Value {
        let t = self.tally();
        let probes: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "binding": r.binding.map(Binding::version),
                    "level": r.level.label(),
                    "spec": r.spec,
                    "title": r.title,
                    "status": r.status.label().to_ascii_lowercase(),
                    "detail": r.detail,
                    "latency_ms": ms(r.latency),
                })
            })
            .collect();
        json!({
            "url": self.url,
            "card_url": self.card_url,
            "bindings": self.versions(),
            "notes": self.notes,
            "strict": self.strict,
            "insecure": self.insecure,
            "passed": self.passed(),
            "exit_code": self.exit_code(),
            "summary": {"passed": t.passed, "warned": t.warned, "failed": t.failed, "skipped": t.skipped},
            "elapsed_ms": ms(self.elapsed),
            "probes": probes,
        })
    }

    /// The report as JUnit XML: one `testsuite`, one `testcase` per probe (`classname`
    /// `ddwire.check.<group>`), a `failure` for each failed probe, `skipped` for each
    /// skipped one, and each warning in the test case's `system-out`.
    pub(crate) fn junit(&self) -> String {
        let t = self.tally();
        let secs = |d: Duration| format!("{:.6}", d.as_secs_f64());
        let counts = format!(
            "tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\"",
            self.results.len(),
            t.failed,
            t.skipped,
            secs(self.elapsed)
        );
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(out, "<testsuites name=\"ddwire check\" {counts}>");
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" {counts} timestamp=\"{}\">",
            xml(&format!("ddwire check {}", self.url)),
            xml(crate::time::now_rfc3339().trim_end_matches('Z')),
        );
        out.push_str("    <properties>\n");
        let properties = [
            ("url", self.url.clone()),
            ("card", self.card_url.clone().unwrap_or_default()),
            ("bindings", self.versions().join(",")),
            ("strict", self.strict.to_string()),
            ("insecure", self.insecure.to_string()),
        ];
        let warning = self.insecure.then_some(("warning", INSECURE.to_string()));
        for (name, value) in properties.into_iter().chain(warning) {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                xml(&value)
            );
        }
        out.push_str("    </properties>\n");
        for r in &self.results {
            let detail = r.detail.as_deref().unwrap_or("");
            let rule = format!("{} {}: {}", r.level.label(), r.spec, r.title);
            let system_out = |text: String| format!("<system-out>{}</system-out>", xml(&text));
            let inner = match r.status {
                Status::Pass if detail.is_empty() => None,
                Status::Pass => Some(system_out(format!("note: {detail}"))),
                Status::Warn => Some(system_out(format!(
                    "WARNING ({} {}): {}: {detail}",
                    r.level.label(),
                    r.spec,
                    r.title
                ))),
                Status::Fail => Some(format!(
                    "<failure message=\"{}\" type=\"{}\">{}</failure>",
                    xml(&rule),
                    r.level.label(),
                    xml(&format!("{rule}: {detail}"))
                )),
                Status::Skip => Some(format!("<skipped message=\"{}\"/>", xml(detail))),
            };
            let _ = write!(
                out,
                "    <testcase classname=\"ddwire.check.{}\" name=\"{}\" time=\"{}\"",
                xml(r.id.split('.').next().unwrap_or(r.id)),
                xml(&r.name()),
                secs(r.latency)
            );
            let _ = match inner {
                None => writeln!(out, "/>"),
                Some(inner) => writeln!(out, ">\n      {inner}\n    </testcase>"),
            };
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// Text as XML 1.0 character data or an attribute value (§2.4, §3.3.3): the five
/// predefined entities, line ends and tabs as character references (kept through attribute
/// normalisation), and characters XML cannot hold at all (other C0 controls, U+FFFE, U+FFFF)
/// replaced by U+FFFD.
pub(crate) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &'static str, status: Status, detail: Option<&str>) -> ProbeResult {
        ProbeResult {
            id,
            binding: Some(Binding::V10),
            level: Level::Must,
            spec: "JSON-RPC 2.0 §5",
            title: "a title",
            status,
            detail: detail.map(str::to_string),
            latency: Duration::from_micros(1500),
        }
    }

    fn report(results: Vec<ProbeResult>) -> Report {
        Report {
            url: "http://127.0.0.1:1".into(),
            card_url: Some("http://127.0.0.1:1/.well-known/agent-card.json".into()),
            bindings: vec![Binding::V10],
            notes: Vec::new(),
            strict: false,
            insecure: false,
            results,
            elapsed: Duration::from_millis(3),
        }
    }

    #[test]
    fn xml_text_escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(xml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(xml("x\u{1}y\u{FFFF}\n"), "x\u{FFFD}y\u{FFFD}&#10;");
    }

    #[test]
    fn a_failure_exits_1_and_warnings_alone_exit_0() {
        let warned = report(vec![
            result("a.b", Status::Pass, None),
            result("a.c", Status::Warn, Some("w")),
        ]);
        assert_eq!((warned.exit_code(), warned.passed()), (0, true));
        let failed = report(vec![result("a.d", Status::Fail, Some("f"))]);
        assert_eq!(failed.exit_code(), 1);
        assert!(failed.summary().ends_with("FAILED"));
        assert!(failed.text().contains("FAIL  a.d [1.0]"));
        assert!(
            failed
                .text()
                .contains("      rule:  a title\n      found: f\n")
        );
    }

    #[test]
    fn junit_counts_failures_and_skips_and_keeps_a_peers_markup_out_of_the_xml() {
        let r = report(vec![
            result("card.fetch", Status::Pass, None),
            result("jsonrpc.id", Status::Fail, Some("got </failure><x>")),
            result("a2a.get-task", Status::Skip, Some("no task")),
            result("jsonrpc.notification", Status::Warn, Some("answered")),
        ]);
        let x = r.junit();
        assert!(x.contains("tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""));
        assert!(x.contains("got &lt;/failure&gt;&lt;x&gt;</failure>"));
        assert!(x.contains("<skipped message=\"no task\"/>"));
        assert!(x.contains(
            "<system-out>WARNING (MUST JSON-RPC 2.0 §5): a title: answered</system-out>"
        ));
        assert_eq!(x.matches("<testcase ").count(), 4);
    }

    #[test]
    fn the_json_report_names_every_probe_with_its_spec_and_latency() {
        let v = report(vec![result("jsonrpc.id", Status::Fail, Some("f"))]).json();
        assert_eq!(v["summary"]["failed"], 1);
        assert_eq!(v["probes"][0]["status"], "fail");
        assert_eq!(v["probes"][0]["binding"], "1.0");
        assert_eq!(v["probes"][0]["spec"], "JSON-RPC 2.0 §5");
        assert_eq!(v["probes"][0]["latency_ms"], 1.5);
        assert_eq!(v["exit_code"], 1);
    }
}
