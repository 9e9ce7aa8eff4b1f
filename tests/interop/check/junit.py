"""Read every JUnit report `ddwire check` wrote with a real JUnit XML consumer.

Usage: python junit.py REPORTS      (in the venv of requirements-check.txt: junitparser 5.0.3)

For each REPORTS/NAME.xml, junitparser (the library CI tools such as the JUnit report
actions use) must parse it, and what it reads must agree with REPORTS/NAME.json, the same
check's JSON report: one test suite; as many test cases as probes, each named as the report
names it, under `ddwire.check.<group>`; a Failure for each failed probe whose message starts
with its level and specification section; a Skipped for each skipped probe; the suite's
tests, failures and skipped counts. Prints `PASS junit/NAME` or `FAIL junit/NAME: <reason>`.
"""

import glob
import json
import os
import sys

from junitparser import Failure, JUnitXml, Skipped


def verify(xml_path, json_path):
    with open(json_path) as f:
        report = json.load(f)
    xml = JUnitXml.fromfile(xml_path)
    suites = list(xml)
    if len(suites) != 1:
        return f"{len(suites)} test suites, expected 1"
    suite = suites[0]
    probes = report["probes"]
    summary = report["summary"]
    counts = (suite.tests, suite.failures, suite.skipped, suite.errors)
    want = (len(probes), summary["failed"], summary["skipped"], 0)
    if counts != want:
        return f"suite counts (tests, failures, skipped, errors) {counts}, expected {want}"
    if (xml.tests, xml.failures, xml.skipped) != want[:3]:
        return f"testsuites counts {(xml.tests, xml.failures, xml.skipped)}, expected {want[:3]}"
    cases = list(suite)
    if len(cases) != len(probes):
        return f"{len(cases)} test cases for {len(probes)} probes"
    for case, probe in zip(cases, probes):
        name = probe["id"] + (f" [{probe['binding']}]" if probe["binding"] else "")
        if case.name != name or case.classname != "ddwire.check." + probe["id"].split(".")[0]:
            return f"test case {case.classname}/{case.name} for probe {name}"
        results = case.result
        if probe["status"] == "fail":
            failures = [r for r in results if isinstance(r, Failure)]
            prefix = f"{probe['level']} {probe['spec']}"
            if len(failures) != 1 or not failures[0].message.startswith(prefix):
                return f"{name}: expected one Failure whose message starts {prefix!r}, got {results}"
            if probe["detail"][:40] not in (failures[0].text or ""):
                return f"{name}: the failure's text does not hold the finding"
        elif probe["status"] == "skip":
            if not any(isinstance(r, Skipped) for r in results):
                return f"{name}: expected Skipped, got {results}"
        elif results:
            return f"{name} ({probe['status']}): expected no result element, got {results}"
        if probe["status"] == "warn" and "WARNING" not in (case.system_out or ""):
            return f"{name}: the warning is not in system-out"
    return None


def main():
    reports = sys.argv[1]
    paths = sorted(glob.glob(os.path.join(reports, "*.xml")))
    if not paths:
        print("FAIL junit: no JUnit reports in " + reports)
        return 1
    failed = 0
    for xml_path in paths:
        name = os.path.splitext(os.path.basename(xml_path))[0]
        try:
            problem = verify(xml_path, os.path.splitext(xml_path)[0] + ".json")
        except Exception as e:  # a parse error is the finding
            problem = f"{type(e).__name__}: {e}"
        if problem:
            failed += 1
            print(f"FAIL junit/{name}: {problem}")
        else:
            print(f"PASS junit/{name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
