#!/usr/bin/env bash
# The AG-UI interop suite: ddwire's harness (`ddwire serve`, POST /agui and GET /agui/runs/{id})
# against @ag-ui/client 1.0.0 (npm) and the ag-ui-protocol Python models (0.1.22, the reference's
# pin, and 1.0.0). Run it through tests/interop/run agui.
#
# Starts on free loopback ports: `ddwire agent hello` and `ddwire agent stub`, `ddwire serve` with
# both registered but only hello.world enabled by the profile (run store under $LOGS/runs), and
# bad_sse.py (the control for the client-warning check); runs
# client_agui.mjs, which saves every stream it read under $LOGS/streams/, then validate_agui.py over
# those streams with each ag-ui-protocol version. Kills every server on exit.
# Not tested: the 15 s SSE keep-alive comment (too slow for this suite).
set -euo pipefail
SUITE=agui
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/agui"

bash "$INTEROP/venv.sh" agui >"$LOGS/venv-agui.out" 2>"$LOGS/venv-agui.log" & v0=$!
bash "$INTEROP/venv.sh" agui1 >"$LOGS/venv-agui1.out" 2>"$LOGS/venv-agui1.log" & v1=$!
npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || npm_ok=0
py0="" py1=""
if wait $v0; then py0="$(cat "$LOGS/venv-agui.out")/bin/python"; else fail setup/venv-agui "see $LOGS/venv-agui.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-agui1.out")/bin/python"; else fail setup/venv-agui1 "see $LOGS/venv-agui1.log"; fi
[[ $npm_ok -eq 1 ]] || fail setup/npm "npm ci failed (see $LOGS/npm.log)"
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }

read -r -d '' p_hello p_stub p_harness p_bad < <(free_ports 4; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }

cat >"$LOGS/agents.json" <<EOF
{"agents": [{"url": "$(url "$p_hello")", "name": "hello", "timeout_s": 30},
            {"url": "$(url "$p_stub")", "name": "stub", "timeout_s": 30}]}
EOF
cat >"$LOGS/profile.json" <<'EOF'
{"profile_id": "agui-interop", "version": 1, "agents": {"hello.world": "converse"}, "actions_requiring_approval": []}
EOF

start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
start_server ddwire-stub "$DDWIRE" agent stub --port "$p_stub"
start_server bad-sse python3 "$here/bad_sse.py" "$p_bad"
wait_ready ddwire-hello "$(url "$p_hello")/.well-known/agent-card.json" 15 || { finish; exit; }
wait_ready ddwire-stub "$(url "$p_stub")/.well-known/agent-card.json" 15 || { finish; exit; }
start_server ddwire-serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --profile "$LOGS/profile.json" --runs "$LOGS/runs" \
    --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"
wait_ready ddwire-serve "$(url "$p_harness")/healthz" 15 || { finish; exit; }
control=""
wait_ready bad-sse "$(url "$p_bad")/" 10 && control="$(url "$p_bad")/"

streams="$LOGS/streams"
if [[ $npm_ok -eq 1 ]]; then
    # node resolves @ag-ui/client from the script's folder upwards: tests/interop/node_modules.
    run_test agui-client node "$here/client_agui.mjs" "$(url "$p_harness")" "$streams" $control
    files=()
    for f in "$streams"/*.sse; do
        [[ -f "$f" ]] && files+=("$f")
    done
    if [[ ${#files[@]} -gt 0 ]]; then
        [[ -z "$py0" ]] || run_test validate-0.1.22 "$py0" "$here/validate_agui.py" ag-ui-protocol-0.1.22 "${files[@]}"
        [[ -z "$py1" ]] || run_test validate-1.0.0 "$py1" "$here/validate_agui.py" ag-ui-protocol-1.0.0 "${files[@]}"
    else
        fail validate "client_agui.mjs saved no streams to validate"
    fi
fi

finish
