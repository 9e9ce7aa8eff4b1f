#!/usr/bin/env bash
# The stream interop suite: streamed runs on ddwire's harness (`ddwire serve`) from the upstream
# streaming clients: a2a-sdk 0.3.26 (`message/stream`, `tasks/resubscribe`), a2a-sdk 1.3.0
# (`SendStreamingMessage`, `SubscribeToTask`) and @a2a-js/sdk 1.3.0 (`sendMessageStream`,
# `resubscribeTask`). Run it through tests/interop/run stream.
#
# Starts on free loopback ports:
# - `ddwire agent hello`, `ddwire agent failing` (demo.failing fails every run),
#   `ddwire agent echo --delay 2` (each task stays working for 2 s, so it can be followed) and
#   `ddwire agent confirm` (demo.confirm suspends every run until the caller confirms);
# - `ddwire serve` with the three, one bearer token, runs in $LOGS/runs.
# Then runs stream_a2a03.py, stream_a2a1.py, interrupt_agui1.py (ag-ui-protocol 1.0.0: a suspended
# run as an AG-UI interrupt, and its resume) and stream_js.mjs; see README.md. Kills every
# server on exit.
set -euo pipefail
SUITE=stream
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/stream"

bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
bash "$INTEROP/venv.sh" agui1 >"$LOGS/venv-agui1.out" 2>"$LOGS/venv-agui1.log" & vagui=$!
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" & npm=$!
py03="" py1="" pyagui="" npm_ok=1
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
if wait $vagui; then pyagui="$(cat "$LOGS/venv-agui1.out")/bin/python"; else fail setup/venv-agui1 "see $LOGS/venv-agui1.log"; fi
wait $npm || { npm_ok=0; fail setup/npm "npm ci failed (see $LOGS/npm.log)"; }
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }

read -r -d '' p_hello p_failing p_echo p_confirm p_harness < <(free_ports 5; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }
card=/.well-known/agent-card.json

start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
start_server ddwire-failing "$DDWIRE" agent failing --port "$p_failing"
start_server ddwire-echo "$DDWIRE" agent echo --port "$p_echo" --delay 2
start_server ddwire-confirm "$DDWIRE" agent confirm --port "$p_confirm"
ok=1
wait_ready ddwire-hello "$(url "$p_hello")$card" 15 || ok=0
wait_ready ddwire-failing "$(url "$p_failing")$card" 15 || ok=0
wait_ready ddwire-echo "$(url "$p_echo")$card" 15 || ok=0
wait_ready ddwire-confirm "$(url "$p_confirm")$card" 15 || ok=0
[[ $ok -eq 1 ]] || { finish; exit; }

cat >"$LOGS/agents.json" <<JSON
{"agents": [
  {"url": "$(url "$p_hello")", "name": "hello", "timeout_s": 30},
  {"url": "$(url "$p_failing")", "name": "failing", "timeout_s": 30},
  {"url": "$(url "$p_echo")", "name": "echo", "timeout_s": 30},
  {"url": "$(url "$p_confirm")", "name": "confirm", "timeout_s": 30}
]}
JSON
cat >"$LOGS/profile.json" <<'JSON'
{"profile_id": "stream-interop", "version": 1,
 "agents": {"hello.world": "converse", "demo.failing": "advise", "echo.wire": "advise",
            "demo.confirm": "converse"},
 "actions_requiring_approval": []}
JSON
token="ada-$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
cat >"$LOGS/tokens.json" <<JSON
{"$(sha "$token")": {"principal_id": "https://orcid.org/0000-0001-5109-3700", "name": "Ada Interop"}}
JSON

start_server ddwire-serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --profile "$LOGS/profile.json" --runs "$LOGS/runs" --tokens "$LOGS/tokens.json"
wait_ready ddwire-serve "$(url "$p_harness")/healthz" 15 || { finish; exit; }

python3 - "$LOGS/config.json" "$(url "$p_harness")" "$token" "$LOGS/runs" <<'PY'
import json, sys
path, harness, token, runs = sys.argv[1:]
json.dump({"harness": harness, "token": token, "runs": runs}, open(path, "w"), indent=2)
PY

[[ -z "$py03" ]] || run_test a2a03-client "$py03" "$here/stream_a2a03.py" "$LOGS/config.json"
[[ -z "$py1" ]] || run_test a2a1-client "$py1" "$here/stream_a2a1.py" "$LOGS/config.json"
[[ -z "$pyagui" ]] || run_test agui1 "$pyagui" "$here/interrupt_agui1.py" "$LOGS/config.json"
# node resolves @a2a-js/sdk from the script's folder upwards: tests/interop/node_modules.
[[ $npm_ok -eq 0 ]] || run_test js-client node "$here/stream_js.mjs" "$LOGS/config.json"

finish
