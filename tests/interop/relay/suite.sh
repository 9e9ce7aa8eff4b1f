#!/usr/bin/env bash
# The relay interop suite: `ddwire relay` forwarding between a2a-sdk 0.3.26 and 1.3.0 agents and a
# ddwire agent, called by the a2a-sdk 0.3.26 and 1.3.0 clients. Run it through
# tests/interop/run relay.
#
# Starts on free loopback ports: `ddwire agent echo` (peer "ddecho", the hub), the a2a suite's
# a2a-sdk echo servers (0.3.26: "py03"; 1.3.0: "py1"; 1.3.0 with v0.3 compat: "py1c"), all leaves,
# the same echo servers with cards saying streaming: true ("st03", "st1"), `ddwire serve` over
# `ddwire agent hello` ("dd", a leaf: a harness behind the relay), and a peer "gone" where
# nothing listens; `ddwire relay --star` over them, its spans in
# $LOGS/traces; runs the programs in this folder (see README.md), then `ddwire lint` over every
# session they drove (lint_sessions.py); kills every server on exit.
set -euo pipefail
SUITE=relay
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/relay"
a2a="$INTEROP/a2a"

bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
py03="" py1=""
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -n "$py03" && -n "$py1" ]] || { finish; exit; }

read -r -d '' p_echo p_s03 p_s1 p_s1c p_gone p_relay p_st03 p_st1 p_hello p_dd < <(free_ports 10; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }

cat >"$LOGS/peers.json" <<JSON
{"peers": [
  {"id": "ddecho", "url": "$(url "$p_echo")", "role": "hub"},
  {"id": "py03", "url": "$(url "$p_s03")", "role": "leaf"},
  {"id": "py1", "url": "$(url "$p_s1")", "role": "leaf"},
  {"id": "py1c", "url": "$(url "$p_s1c")", "role": "leaf"},
  {"id": "st03", "url": "$(url "$p_st03")", "role": "leaf"},
  {"id": "st1", "url": "$(url "$p_st1")", "role": "leaf"},
  {"id": "dd", "url": "$(url "$p_dd")", "role": "leaf"},
  {"id": "gone", "url": "$(url "$p_gone")", "role": "leaf"}
]}
JSON

start_server ddwire-echo "$DDWIRE" agent echo --port "$p_echo"
start_server a2a03-server "$py03" "$a2a/server_a2a03.py" "$p_s03"
start_server a2a1-server "$py1" "$a2a/server_a2a1.py" "$p_s1"
start_server a2a1-compat-server "$py1" "$a2a/server_a2a1.py" "$p_s1c" --v03-compat
start_server stream03-server "$py03" "$here/server_stream.py" 03 "$p_st03"
start_server stream1-server "$py1" "$here/server_stream.py" 1 "$p_st1"
start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
printf '{"agents": [{"url": "%s"}]}\n' "$(url "$p_hello")" >"$LOGS/agents.json"
start_server ddwire-harness "$DDWIRE" serve --port "$p_dd" --agents "$LOGS/agents.json" \
    --runs "$LOGS/runs" --acting-for-id urn:test:relay-suite --acting-for-name "Relay suite"

card=/.well-known/agent-card.json
ready=1
wait_ready ddwire-echo "$(url "$p_echo")$card" 15 || ready=0
wait_ready a2a03-server "$(url "$p_s03")$card" || ready=0
wait_ready a2a1-server "$(url "$p_s1")$card" || ready=0
wait_ready a2a1-compat-server "$(url "$p_s1c")$card" || ready=0
wait_ready stream03-server "$(url "$p_st03")$card" || ready=0
wait_ready stream1-server "$(url "$p_st1")$card" || ready=0
wait_ready ddwire-hello "$(url "$p_hello")$card" 15 || ready=0
wait_ready ddwire-harness "$(url "$p_dd")/healthz" 15 || ready=0
# The peers are on loopback, which a relay refuses to reach unless --peer-allow names it.
start_server relay "$DDWIRE" relay --port "$p_relay" --peers "$LOGS/peers.json" --star \
    --peer-allow 127.0.0.1/32 \
    --traces "$LOGS/traces" --timeout 10
wait_ready relay "$(url "$p_relay")/livez" 15 || ready=0

if [[ $ready -eq 1 ]]; then
    relay="$(url "$p_relay")"
    run_test a2a03-client "$py03" "$here/relay_a2a03.py" "$relay" "$LOGS/traces"
    run_test a2a1-client "$py1" "$here/relay_a2a1.py" "$relay" "$LOGS/traces"
    run_test raw python3 "$here/relay_raw.py" "$relay" "$LOGS/traces"
    if bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log"; then
        run_test js-client node "$here/relay_js.mjs" "$relay" "$(url "$p_dd")"
    else
        fail setup/npm "npm ci failed (see $LOGS/npm.log)"
    fi
    # Last: every session the clients above drove must lint clean.
    run_test lint python3 "$here/lint_sessions.py" "$DDWIRE" "$LOGS/traces"
fi

finish
