#!/usr/bin/env bash
# Create (or reuse) the Python venv that holds the pinned upstream SDKs used to
# generate the interop fixtures, and print its path on stdout.
#
#   venv="$(bash tests/interop/venv.sh)"
#   "$venv/bin/python" fixtures/spans/generate.py
#
# Location: ${DDWIRE_VENV:-<repo>/target/interop-venv} (under target/, never committed).
# The venv is rebuilt from scratch when tests/interop/requirements.txt or the
# python3 version changes: a stamp with their hash is kept inside the venv.
# A second run with nothing changed does no network access and returns at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
req="$here/requirements.txt"
venv="${DDWIRE_VENV:-$repo/target/interop-venv}"
stamp="$venv/.ddwire-requirements.sha256"

want="$( { cat "$req"; python3 --version 2>&1; } | sha256sum | cut -d' ' -f1)"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    printf '%s\n' "$venv"
    exit 0
fi

if [[ -e "$venv" && ! -f "$venv/pyvenv.cfg" && -n "$(ls -A "$venv" 2>/dev/null)" ]]; then
    echo "venv.sh: $venv exists and is not a venv; refusing to replace it" >&2
    exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2
printf '%s\n' "$want" > "$stamp"
printf '%s\n' "$venv"
