#!/usr/bin/env bash
# Create (or reuse) a Python venv that holds pinned upstream SDKs, and print its path on stdout.
#
#   venv="$(bash tests/interop/venv.sh)"          # the fixture venv
#   "$venv/bin/python" fixtures/spans/generate.py
#   venv="$(bash tests/interop/venv.sh a2a03)"    # a named venv (here: a2a-sdk 0.3.26)
#
# With no argument: requirements.txt -> ${DDWIRE_VENV:-<repo>/target/interop-venv}, the venv
# that generates the fixtures. With a NAME: requirements-NAME.txt -> <repo>/target/interop-venv-NAME
# (named venvs exist because some pinned SDKs conflict, e.g. a2a-sdk 0.3.26 and 1.3.0).
# Venvs live under target/ and are never committed.
# A venv is rebuilt from scratch when its requirements file or the python3 version changes:
# a stamp with their hash is kept inside the venv.
# A second run with nothing changed does no network access and returns at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name="${1:-}"
if [[ -z "$name" ]]; then
    req="$here/requirements.txt"
    venv="${DDWIRE_VENV:-$repo/target/interop-venv}"
elif [[ "$name" =~ ^[A-Za-z0-9_.-]+$ && -f "$here/requirements-$name.txt" ]]; then
    req="$here/requirements-$name.txt"
    venv="$repo/target/interop-venv-$name"
else
    echo "venv.sh: no requirements file tests/interop/requirements-$name.txt" >&2
    exit 2
fi
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
