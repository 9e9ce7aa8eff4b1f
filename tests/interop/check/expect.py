"""Run `ddwire check` against one endpoint and hold it to what that endpoint earns.

Usage: python3 expect.py NAME DDWIRE URL REPORTS [--exit N] [--warn NAMES] [--fail NAMES]
                         [--text-has TEXT]... [-- CHECK_ARGS...]

Runs `DDWIRE check URL CHECK_ARGS` three times, once per format (text on this program's
output, JSON and JUnit XML saved as REPORTS/NAME.json and REPORTS/NAME.xml for junit.py), and
asserts: the exit code is N (all three runs); the probes that warned are exactly --warn and
the probes that failed exactly --fail (comma-separated probe names as the report prints them,
`jsonrpc.notification [1.0]`; empty for none); every failed or warned probe names its
specification section and what came back; the text report holds each --text-has string.
Prints `PASS NAME` or `FAIL NAME: <reason>` (standard library only).
"""

import argparse
import json
import os
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

    text = check("text").stdout
    json_path = os.path.join(a.reports, f"{a.name}.json")
    check("json", json_path)
    check("junit", os.path.join(a.reports, f"{a.name}.xml"))
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL {a.name}: no JSON report: {e}")
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
