#!/usr/bin/env bash
# The approval interop suite: a data steward's decision on a run the profile referred, end to end.
# Run it through tests/interop/run approval.
#
# Starts on free loopback ports `ddwire agent hello` and `ddwire serve` with a profile that refers
# hello.world's action class to a data steward, and --tokens for Alice (a principal), Bob (another)
# and a steward (`"role": "steward"`). Then:
# - approval_a2a1.py: Alice's a2a-sdk 1.3.0 client sends; `ddwire approve` as the steward runs the
#   agent as a new linked run; a second approval, Bob and Alice herself are refused; a decline over
#   HTTP is recorded once. It leaves three referred runs undecided for the browser.
# - approval_viewer.mjs: in Debian's Chromium (playwright-core), the approved run and its referred
#   run link to each other; the steward approves one referred run and declines another from the
#   viewer; Alice's token is refused at the Approve button.
# Kills every server on exit.
set -euo pipefail
SUITE=approval
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/approval"
CHROMIUM="${DDWIRE_CHROMIUM:-/usr/bin/chromium}"

bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" || fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"
npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || { npm_ok=0; fail setup/npm "npm ci failed (see $LOGS/npm.log)"; }
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -s "$LOGS/venv-a2a1.out" ]] || { finish; exit; }
py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"

read -r -d '' p_hello p_harness < <(free_ports 2; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }

start_server agent-hello "$DDWIRE" agent hello --port "$p_hello" --quiet
wait_ready agent-hello "$(url "$p_hello")/.well-known/agent-card.json" 15 || { finish; exit; }
printf '{"agents": [{"name": "hello", "url": "%s"}]}\n' "$(url "$p_hello")" >"$LOGS/agents.json"
cat >"$LOGS/profile.json" <<'JSON'
{"profile_id": "interop-careful", "version": 1, "agents": {"hello.world": "converse"},
 "actions_requiring_approval": ["converse"]}
JSON
digest() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '{"%s": {"principal_id": "https://orcid.org/0000-0002-1825-0097", "name": "Alice"}, "%s": {"principal_id": "https://orcid.org/0000-0001-5109-3700", "name": "Bob"}, "%s": {"principal_id": "urn:example:role:data-steward", "name": "Data steward", "principal_kind": "accountable_role", "role": "steward"}}\n' \
    "$(digest alice-token)" "$(digest bob-token)" "$(digest steward-token)" >"$LOGS/tokens.json"

harness="$(url "$p_harness")"
start_server serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --profile "$LOGS/profile.json" --tokens "$LOGS/tokens.json" --runs "$LOGS/runs" \
    --approval-for 3600
wait_ready serve "$harness/healthz" 15 || { finish; exit; }

printf '{"harness": "%s", "ddwire": "%s", "referred_out": "%s"}\n' \
    "$harness" "$DDWIRE" "$LOGS/referred.json" >"$LOGS/config.json"
run_test flow "$py1" "$here/approval_a2a1.py" "$LOGS/config.json"

if [[ $npm_ok -eq 1 && -s "$LOGS/referred.json" ]]; then
    if [[ ! -x "$CHROMIUM" ]]; then
        fail setup/chromium "no browser at $CHROMIUM: install Debian's chromium (as root: apt-get install -y chromium), or set DDWIRE_CHROMIUM"
    else
        run_test browser node "$here/approval_viewer.mjs" "$harness" "$LOGS/referred.json" "$LOGS" "$CHROMIUM"
        sed -n 's/^SCREENSHOT /screenshot: /p' "$LOGS/browser.log"
    fi
fi

finish
