#!/usr/bin/env bash
# Prove that the committed fixtures still come from the pinned upstream Python SDKs:
# build the venv (tests/interop/venv.sh), re-run every fixture generator into a temporary
# directory and diff the result against the committed files. Exits non-zero on any difference
# (or if a generator fails). Needs python3 and access to PyPI the first time the venv is built.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$(bash "$here/venv.sh")"
py="$venv/bin/python"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

status=0
for dir in canonical spans trace-context; do
    gen="$repo/fixtures/$dir/generate.py"
    out="$tmp/$dir"
    mkdir -p "$out"
    if ! "$py" "$gen" "$out"; then
        echo "check-fixtures: FAILED to run fixtures/$dir/generate.py" >&2
        status=1
        continue
    fi
    for produced in "$out"/*.jsonl; do
        name="$(basename "$produced")"
        committed="$repo/fixtures/$dir/$name"
        if [[ ! -f "$committed" ]]; then
            echo "check-fixtures: fixtures/$dir/$name is produced but not committed" >&2
            status=1
        elif ! diff -u "$committed" "$produced" >"$tmp/$dir-$name.diff"; then
            echo "check-fixtures: fixtures/$dir/$name differs from a fresh run:" >&2
            head -n 40 "$tmp/$dir-$name.diff" >&2
            status=1
        else
            echo "check-fixtures: fixtures/$dir/$name ok ($(wc -l <"$committed") lines)"
        fi
    done
    for committed in "$repo/fixtures/$dir"/*.jsonl; do
        if [[ ! -f "$out/$(basename "$committed")" ]]; then
            echo "check-fixtures: fixtures/$dir/$(basename "$committed") is committed but no longer produced" >&2
            status=1
        fi
    done
done

if [[ $status -ne 0 ]]; then
    echo "check-fixtures: fixtures differ from the pinned SDKs' output; regenerate them (see fixtures/README.md)" >&2
fi
exit $status
