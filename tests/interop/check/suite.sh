#!/usr/bin/env bash
# The `check` interop suite: `ddwire check` against the real upstream SDK servers, against
# ddwire's own agent and harness, and against a server broken on purpose; its JUnit output read
# by junitparser. Run it through tests/interop/run check.
#
# Starts on free loopback ports: the a2a-sdk 0.3.26 and 1.3.0 echo servers of the a2a suite
# (1.3.0 twice: plain, and with its v0.3 compat layer), an @a2a-js/sdk 1.3.0 server on express
# (server_js.mjs), broken_server.py, `ddwire agent hello`, and `ddwire serve` with that agent;
# runs expect.py once per expectation (see README.md), then junit.py over every JUnit report.
set -euo pipefail
SUITE=check
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/check"
a2a="$INTEROP/a2a"
reports="$LOGS/reports"

bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
bash "$INTEROP/venv.sh" check >"$LOGS/venv-check.out" 2>"$LOGS/venv-check.log" & vc=$!
npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || npm_ok=0
py03="" py1="" pyc=""
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
if wait $vc; then pyc="$(cat "$LOGS/venv-check.out")/bin/python"; else fail setup/venv-check "see $LOGS/venv-check.log"; fi
[[ $npm_ok -eq 1 ]] || fail setup/npm "npm ci failed (see $LOGS/npm.log)"
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }

read -r -d '' p_s03 p_s1 p_s1c p_js p_broken p_hello p_serve < <(free_ports 7; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }
card=/.well-known/agent-card.json

[[ -z "$py03" ]] || start_server a2a03-server "$py03" "$a2a/server_a2a03.py" "$p_s03"
[[ -z "$py1" ]] || start_server a2a1-server "$py1" "$a2a/server_a2a1.py" "$p_s1"
[[ -z "$py1" ]] || start_server a2a1-compat-server "$py1" "$a2a/server_a2a1.py" "$p_s1c" --v03-compat
[[ $npm_ok -eq 0 ]] || start_server js-server node "$here/server_js.mjs" "$p_js"
start_server broken-server python3 "$here/broken_server.py" "$p_broken"
start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
printf '{"agents": [{"name": "hello", "url": "%s"}]}\n' "$(url "$p_hello")" >"$LOGS/agents.json"

expect() { run_test "$1" python3 "$here/expect.py" "$1" "$DDWIRE" "${@:2}"; }

# The upstream SDKs pass, with the warnings they earn, and fail under --strict.
if [[ -n "$py03" ]] && wait_ready a2a03-server "$(url "$p_s03")$card"; then
    expect a2a-sdk-0.3.26 "$(url "$p_s03")" "$reports" \
        --warn "jsonrpc.error-id [0.3],jsonrpc.notification [0.3]"
    expect a2a-sdk-0.3.26-strict "$(url "$p_s03")" "$reports" --exit 1 \
        --fail "jsonrpc.error-id [0.3],jsonrpc.notification [0.3]" -- --strict
fi
if [[ -n "$py1" ]] && wait_ready a2a1-server "$(url "$p_s1")$card"; then
    expect a2a-sdk-1.3.0 "$(url "$p_s1")" "$reports" --warn "jsonrpc.notification [1.0]"
    expect a2a-sdk-1.3.0-strict "$(url "$p_s1")" "$reports" --exit 1 \
        --fail "jsonrpc.notification [1.0]" -- --strict
fi
if [[ -n "$py1" ]] && wait_ready a2a1-compat-server "$(url "$p_s1c")$card"; then
    # Its v0.3 compat path answers a get-task without an id with -32600, not -32602.
    expect a2a-sdk-1.3.0-compat-both "$(url "$p_s1c")" "$reports" \
        --warn "jsonrpc.invalid-params [0.3],jsonrpc.notification [0.3],jsonrpc.notification [1.0]" \
        -- --binding both
fi
if [[ $npm_ok -eq 1 ]] && wait_ready js-server "$(url "$p_js")$card" 30; then
    # It answers an invalid request with -32602, not -32600; its card declares streaming,
    # and the streaming probe reads its SSE stream.
    expect a2a-js-1.3.0 "$(url "$p_js")" "$reports" \
        --warn "jsonrpc.invalid-request [1.0],jsonrpc.notification [1.0]" \
        --text-has "PASS  a2a.streaming [1.0]"
    expect a2a-js-1.3.0-strict "$(url "$p_js")" "$reports" --exit 1 \
        --fail "jsonrpc.invalid-request [1.0],jsonrpc.notification [1.0]" -- --strict
fi

# ddwire's own agent and harness pass every probe, strictly, in both bindings.
if wait_ready ddwire-hello "$(url "$p_hello")$card" 15; then
    # The harness reads its agent's card once, at start: it starts only once the agent
    # answers (on a loaded machine the agent may take a while to listen).
    start_server ddwire-serve "$DDWIRE" serve --port "$p_serve" --agents "$LOGS/agents.json" \
        --runs "$LOGS/runs" --acting-for-id https://orcid.org/0000-0002-1825-0097 \
        --acting-for-name "Josiah Carberry"
    expect ddwire-agent-strict "$(url "$p_hello")" "$reports" \
        --text-has "PASS  dd.reply [1.0]" -- --dd --strict --binding both
    if wait_ready ddwire-serve "$(url "$p_serve")$card" 15; then
        expect ddwire-serve-strict "$(url "$p_serve")" "$reports" \
            --text-has "a harness serving [hello.world]" -- --dd --strict --binding both
    fi
fi

# The broken server fails on exactly its two defects, with a report that says why.
if wait_ready broken-server "$(url "$p_broken")$card" 15; then
    expect broken-server "$(url "$p_broken")" "$reports" --exit 1 \
        --fail "jsonrpc.id [0.3],a2a.streaming [0.3]" \
        --text-has 'MUST JSON-RPC 2.0 §5' \
        --text-has 'found: sent id 7 (a number), got id "7" (a string): HTTP 200 application/json: {"jsonrpc": "2.0", "id": "7"' \
        --text-has 'MUST A2A 0.3 §7.2' \
        --text-has 'found: the card declares capabilities.streaming: true, but message/stream was refused with error -32004'
fi

# Every JUnit report above, read by junitparser.
[[ -z "$pyc" ]] || run_test junit "$pyc" "$here/junit.py" "$reports"

finish
