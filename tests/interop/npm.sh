#!/usr/bin/env bash
# Install (or reuse) the pinned JS SDKs of tests/interop/package-lock.json into
# tests/interop/node_modules with `npm ci`, and print that folder's path on stdout.
#
#   node_modules="$(bash tests/interop/npm.sh)"
#
# Like venv.sh: a stamp with the hash of package-lock.json and the node version is kept in
# node_modules; while it matches, nothing is installed and no network is used.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
modules="$here/node_modules"
stamp="$modules/.ddwire-package-lock.sha256"

want="$( { cat "$here/package-lock.json"; node --version 2>&1; } | sha256sum | cut -d' ' -f1)"

if [[ -d "$modules" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    printf '%s\n' "$modules"
    exit 0
fi

# playwright-core never fetches a browser; the variable makes sure nothing in the tree does.
(cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >&2)
printf '%s\n' "$want" > "$stamp"
printf '%s\n' "$modules"
