#!/usr/bin/env bash
# The A2A interop suite: ddwire agents and the ddwire client against the real upstream SDKs
# (a2a-sdk 0.3.26 and 1.3.0 for Python, @a2a-js/sdk 1.3.0). Run it through tests/interop/run a2a.
#
# Starts on free loopback ports: ddwire agents hello, echo and a second hello (left idle), and
# three a2a-sdk echo servers (0.3.26; 1.3.0; 1.3.0 with v0.3 compat); waits for their cards;
# runs the test programs in this folder (see README.md); kills every server on exit.
set -euo pipefail
SUITE=a2a
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/a2a"
idle_seconds="${DDWIRE_INTEROP_IDLE_SECONDS:-32}"

# The pinned SDKs: two venvs (the a2a-sdk versions conflict) and the npm folder, built in parallel.
bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || npm_ok=0
py03="" py1=""
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
[[ $npm_ok -eq 1 ]] || fail setup/npm "npm ci failed (see $LOGS/npm.log)"
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }

read -r -d '' p_hello p_echo p_idle p_s03 p_s1 p_s1c < <(free_ports 6; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }

start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
start_server ddwire-echo "$DDWIRE" agent echo --port "$p_echo"
start_server ddwire-idle "$DDWIRE" agent hello --port "$p_idle"
[[ -z "$py03" ]] || start_server a2a03-server "$py03" "$here/server_a2a03.py" "$p_s03"
[[ -z "$py1" ]] || start_server a2a1-server "$py1" "$here/server_a2a1.py" "$p_s1"
[[ -z "$py1" ]] || start_server a2a1-compat-server "$py1" "$here/server_a2a1.py" "$p_s1c" --v03-compat

card=/.well-known/agent-card.json
ready_hello=0 ready_echo=0 ready_idle=0 ready_s=1
wait_ready ddwire-hello "$(url "$p_hello")$card" 15 && ready_hello=1
wait_ready ddwire-echo "$(url "$p_echo")$card" 15 && ready_echo=1
wait_ready ddwire-idle "$(url "$p_idle")$card" 15 && ready_idle=1
idle_since=$SECONDS
if [[ -n "$py03" && -n "$py1" ]]; then
    wait_ready a2a03-server "$(url "$p_s03")$card" || ready_s=0
    wait_ready a2a1-server "$(url "$p_s1")$card" || ready_s=0
    wait_ready a2a1-compat-server "$(url "$p_s1c")$card" || ready_s=0
else
    ready_s=0
fi

# Upstream clients -> ddwire agents.
if [[ $ready_hello -eq 1 ]]; then
    [[ -z "$py03" ]] || run_test a2a03-client "$py03" "$here/client_a2a03.py" "$(url "$p_hello")"
    [[ -z "$py1" || $ready_echo -eq 0 ]] || run_test a2a1-client "$py1" "$here/client_a2a1.py" "$(url "$p_hello")" "$(url "$p_echo")"
    [[ $npm_ok -eq 0 ]] || run_test js-client node "$here/client_js.mjs" "$(url "$p_hello")"
fi

# The ddwire client -> upstream servers.
if [[ $ready_s -eq 1 ]]; then
    run_test ddwire-send python3 "$here/ddwire_send.py" "$DDWIRE" "$(url "$p_s03")" "$(url "$p_s1")" "$(url "$p_s1c")"
fi

# Last, the agent left idle since its readiness poll.
if [[ $ready_idle -eq 1 && $idle_seconds -gt 0 ]]; then
    left=$((idle_seconds - (SECONDS - idle_since)))
    if [[ $left -gt 0 ]]; then
        # In the background and waited for, so INT/TERM stop the suite at once (and kill it).
        start_server idle-wait sleep "$left"
        wait "${_pids[idle-wait]}" || true
    fi
    run_test ddwire-idle python3 "$here/idle_listener.py" "$(url "$p_idle")" "$idle_seconds"
fi

finish
