#!/usr/bin/env bash
# The viewer interop suite: `ddwire serve`'s GET /viewer in Debian's Chromium (headless), driven
# by playwright-core (npm, pinned in package.json; it never downloads a browser). Run it through
# tests/interop/run viewer.
#
# Starts on free loopback ports the six built-in agents (`ddwire agent NAME`) and `ddwire serve`
# with them and the shipped profile (runs in $LOGS/runs, request log and wire log in $LOGS), makes
# the runs `ddwire demo` makes through the harness with `ddwire invoke --harness` (a success, an
# abstention, a refusal by policy, an input not accepted, a withheld result, an agent error and a
# delegation), then runs viewer_test.mjs against /viewer: see README.md. The screenshots are saved
# under $LOGS and their paths printed. Kills every server on exit.
#
# Chromium must be at /usr/bin/chromium (Debian's `chromium` package; .ci/run installs it). Without
# it the suite fails with setup/chromium rather than skipping.
set -euo pipefail
SUITE=viewer
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/viewer"
CHROMIUM="${DDWIRE_CHROMIUM:-/usr/bin/chromium}"

npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || npm_ok=0
[[ $npm_ok -eq 1 ]] || fail setup/npm "npm ci failed (see $LOGS/npm.log)"
if [[ ! -x "$CHROMIUM" ]]; then
    fail setup/chromium "no browser at $CHROMIUM: install Debian's chromium (as root: apt-get install -y chromium), or set DDWIRE_CHROMIUM"
fi
# With no font at all, Chromium's renderer crashes on the first page ("Target page, context or
# browser has been closed"): say so instead.
if ! find /usr/share/fonts /usr/local/share/fonts -name '*.[ot]tf' -print -quit 2>/dev/null | grep -q .; then
    fail setup/fonts "no font under /usr/share/fonts: Chromium cannot render a page without one (as root: apt-get install -y fonts-liberation)"
fi
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ $npm_ok -eq 1 && -x "$CHROMIUM" ]] || { finish; exit; }
"$CHROMIUM" --version >"$LOGS/chromium-version.txt" 2>&1 || true

names=(hello stub director echo ungrounded failing)
read -r -d '' p_hello p_stub p_director p_echo p_ungrounded p_failing p_harness p_tokens \
    < <(free_ports 8; printf '\0') || true
ports=("$p_hello" "$p_stub" "$p_director" "$p_echo" "$p_ungrounded" "$p_failing")
url() { printf 'http://127.0.0.1:%s' "$1"; }
card=/.well-known/agent-card.json

entries=()
for i in "${!names[@]}"; do
    start_server "agent-${names[$i]}" "$DDWIRE" agent "${names[$i]}" --port "${ports[$i]}" --quiet
    timeout=30
    [[ ${names[$i]} == director ]] && timeout=120
    entries+=("{\"name\": \"${names[$i]}\", \"url\": \"$(url "${ports[$i]}")\", \"timeout_s\": $timeout}")
done
ok=1
for i in "${!names[@]}"; do
    wait_ready "agent-${names[$i]}" "$(url "${ports[$i]}")$card" 15 || ok=0
done
[[ $ok -eq 1 ]] || { finish; exit; }
(IFS=,; printf '{"agents": [%s]}\n' "${entries[*]}") >"$LOGS/agents.json"

harness="$(url "$p_harness")"
start_server serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --runs "$LOGS/runs" --acting-for-id urn:ddwire:demo:operator \
    --acting-for-name "ddwire demo operator (not a person)" \
    --wire-log "$LOGS/wire.jsonl"
wait_ready serve "$harness/healthz" 15 || { finish; exit; }

# The demo's seven invocations, through the harness as any caller would make them.
cases=(
    "success hello.world {\"schema_class\":\"Message\",\"message_text\":\"Hello from the ddwire viewer suite\"}"
    "abstention stub.abstain {\"schema_class\":\"Message\",\"message_text\":\"Can you decide this?\"}"
    "refusal echo.wire {\"schema_class\":\"Echo\",\"value\":1}"
    "not-accepted hello.world {\"schema_class\":\"Echo\",\"value\":1}"
    "withheld demo.ungrounded {\"schema_class\":\"Message\",\"message_text\":\"What is the capital of Atlantis?\"}"
    "agent-error demo.failing {\"schema_class\":\"Message\",\"message_text\":\"Please try\"}"
    "delegation director.route {\"schema_class\":\"Message\",\"message_text\":\"Say hello for me\"}"
)
printf '{' >"$LOGS/runs.json"
sep=""
made=1
for c in "${cases[@]}"; do
    read -r name agent input <<<"$c"
    if ! printf '%s' "$input" | "$DDWIRE" invoke --agent "$agent" --input - --harness "$harness" \
        >"$LOGS/invoke-$name.json" 2>"$LOGS/invoke-$name.log"; then
        fail "setup/invoke-$name" "ddwire invoke exited non-zero (see $LOGS/invoke-$name.log)"
        made=0
        continue
    fi
    id="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["invocation_id"])' "$LOGS/invoke-$name.json")"
    printf '%s"%s": "%s"' "$sep" "$name" "$id" >>"$LOGS/runs.json"
    sep=", "
done
printf '}\n' >>"$LOGS/runs.json"
[[ $made -eq 1 ]] || { finish; exit; }

# A second harness over the same store that takes tokens: the operator's token reads the runs
# above, another principal's reads none (tokens file: digests only).
digest() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '{"%s": {"principal_id": "urn:ddwire:demo:operator", "name": "ddwire demo operator (not a person)", "principal_kind": "accountable_role"}, "%s": {"principal_id": "https://orcid.org/0000-0001-5109-3700", "name": "Someone else"}}\n' \
    "$(digest viewer-operator-token)" "$(digest viewer-other-token)" >"$LOGS/tokens.json"
with_tokens="$(url "$p_tokens")"
start_server serve-tokens "$DDWIRE" serve --port "$p_tokens" --agents "$LOGS/agents.json" \
    --runs "$LOGS/runs" --tokens "$LOGS/tokens.json"
wait_ready serve-tokens "$with_tokens/healthz" 15 || { finish; exit; }

# node resolves playwright-core from the script's folder upwards: tests/interop/node_modules.
run_test browser node "$here/viewer_test.mjs" "$harness" "$LOGS/runs.json" "$LOGS" "$CHROMIUM" "$with_tokens"
sed -n 's/^SCREENSHOT /screenshot: /p' "$LOGS/browser.log"

finish
