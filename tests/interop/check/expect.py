"""Run `ddwire check` against one endpoint and hold it to what that endpoint earns.

Usage: python3 expect.py NAME DDWIRE URL REPORTS [--exit N] [--warn NAMES] [--fail NAMES]
                         [--text-has TEXT]... [--detail-matches NAME=REGEX]...
                         [--all-formats-match REGEX]... [-- CHECK_ARGS...]

Runs `DDWIRE check URL CHECK_ARGS` three times, once per format (text on this program's
output, JSON and JUnit XML saved as REPORTS/NAME.json and REPORTS/NAME.xml for junit.py), and
asserts: the exit code is N (all three runs); the probes that warned are exactly --warn and
the probes that failed exactly --fail (comma-separated probe names as the report prints them,
`jsonrpc.notification [1.0]`; empty for none); every failed or warned probe names its
specification section and what came back; the text report holds each --text-has string; the
JSON report's probe NAME has a detail matching each --detail-matches REGEX (case-insensitive);
each --all-formats-match REGEX (case-insensitive) matches all three reports (the text output,
the JSON and the JUnit XML file).
Prints `PASS NAME` or `FAIL NAME: <reason>` (standard library only).
"""

import argparse
import json
import os
import re
import subprocess
import sys


def names(text):
    return sorted(n.strip() for n in text.split(",") if n.strip())


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("ddwire")
    p.add_argument("url")
    p.add_argument("reports")
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--warn", default="")
    p.add_argument("--fail", default="")
    p.add_argument("--text-has", action="append", default=[])
    p.add_argument("--detail-matches", action="append", default=[])
    p.add_argument("--all-formats-match", action="append", default=[])
    a = p.parse_args(argv)
    os.makedirs(a.reports, exist_ok=True)
    problems = []

    def check(fmt, out=None):
        cmd = [a.ddwire, "check", a.url, *extra, "--format", fmt]
        if out:
            cmd += ["--out", out]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        # Indented, so that the report's own PASS/FAIL lines are not read as this test's.
        shown = (run.stdout + run.stderr).splitlines()
        print(f"$ {' '.join(cmd)}\n" + "".join(f"  | {line}\n" for line in shown))
        if run.returncode != a.exit:
            problems.append(f"--format {fmt} exited {run.returncode}, expected {a.exit}")
        return run

    text_run = check("text")
    text = text_run.stdout
    json_path = os.path.join(a.reports, f"{a.name}.json")
    xml_path = os.path.join(a.reports, f"{a.name}.xml")
    json_run = check("json", json_path)
    xml_run = check("junit", xml_path)
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL {a.name}: " + "; ".join(problems + [f"no JSON report: {e}"]))
        return 1

    def label(probe):
        return probe["id"] + (f" [{probe['binding']}]" if probe["binding"] else "")

    got = {s: sorted(label(p) for p in report["probes"] if p["status"] == s) for s in ("warn", "fail")}
    for status, want in (("warn", names(a.warn)), ("fail", names(a.fail))):
        if got[status] != want:
            problems.append(f"{status}: got {got[status]}, expected {want}")
    for probe in report["probes"]:
        if probe["status"] in ("warn", "fail"):
            if not probe["spec"] or not probe["detail"]:
                problems.append(f"{label(probe)} names no spec section or finding")
            elif f"{probe['status'].upper()}  {label(probe)}" not in text or probe["spec"] not in text:
                problems.append(f"the text report does not show {label(probe)} with {probe['spec']}")
    for want in a.text_has:
        if want not in text:
            problems.append(f"the text report lacks {want!r}")
    for spec in a.detail_matches:
        name, _, pattern = spec.partition("=")
        details = [p["detail"] or "" for p in report["probes"] if label(p) == name]
        if not details:
            problems.append(f"the JSON report has no probe {name!r}")
        elif not any(re.search(pattern, d, re.I) for d in details):
            problems.append(f"probe {name!r}: detail {details[0]!r} does not match /{pattern}/i")
    for pattern in a.all_formats_match:
        for fmt, path, run in (("text", None, text_run), ("json", json_path, json_run), ("junit", xml_path, xml_run)):
            body = run.stdout + run.stderr
            if path:
                try:
                    with open(path, encoding="utf-8") as f:
                        body = f.read()
                except OSError as e:
                    body = ""
                    problems.append(f"no {fmt} report: {e}")
            if not re.search(pattern, body, re.I):
                problems.append(f"the {fmt} report does not match /{pattern}/i")
    if report["exit_code"] != a.exit:
        problems.append(f"the JSON report says exit_code {report['exit_code']}")
    if problems:
        print(f"FAIL {a.name}: " + "; ".join(problems))
        return 1
    summary = ", ".join(f"{k} {v}" for k, v in report["summary"].items())
    print(f"{a.name}: {summary}; {report['elapsed_ms']} ms")
    print(f"PASS {a.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
