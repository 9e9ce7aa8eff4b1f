#!/usr/bin/env bash
# Prove that the committed fixtures still come from the pinned upstream Python SDKs:
# build the venvs (tests/interop/venv.sh), re-run every fixture generator into a temporary
# directory and diff the result against the committed files. Exits non-zero on any difference
# (or if a generator fails). Needs python3 and access to PyPI the first time a venv is built.
#
# A folder's generator may run in several venvs (one per pinned SDK version): each run writes
# the file of its version, and the folder is compared once all its runs are done.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# <fixtures folder>:<venv name> (no name: the default fixture venv), in run order.
jobs=(
    canonical:
    spans:
    trace-context:
    a2a:a2a03
    a2a:a2a1
    agui:agui
    agui:agui1
    otlp:otlp
)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

status=0
dirs=()
declare -A failed=()
for job in "${jobs[@]}"; do
    dir="${job%%:*}"
    name="${job#*:}"
    out="$tmp/$dir"
    if [[ ! -d "$out" ]]; then
        mkdir -p "$out"
        dirs+=("$dir")
    fi
    if [[ -n "$name" ]]; then
        venv="$(bash "$here/venv.sh" "$name")"
    else
        venv="$(bash "$here/venv.sh")"
    fi
    if ! "$venv/bin/python" "$repo/fixtures/$dir/generate.py" "$out"; then
        echo "check-fixtures: FAILED to run fixtures/$dir/generate.py in $venv" >&2
        failed[$dir]=1
        status=1
    fi
done

for dir in "${dirs[@]}"; do
    if [[ -n "${failed[$dir]:-}" ]]; then
        continue
    fi
    out="$tmp/$dir"
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
