#!/usr/bin/env bash
# The harness interop suite: ddwire's harness (`ddwire serve`) with a Python agent written the way
# `dd_sdk.serve` serves agents (a2a-sdk 1.3.0 server, OpenTelemetry SDK spans), called by the
# a2a-sdk 1.3.0 and 0.3.26 clients. Run it through tests/interop/run harness.
#
# Starts on free loopback ports:
# - `ddwire agent hello` and `ddwire agent director`;
# - dd_agent.py three times (a2a-sdk 1.3.0): py.chat; py.overreach (its chat span also sets
#   dd.grounding_mode); py.broken (raises); each reads its class schemas off hello's card;
# - `ddwire serve` (the harness) with all four agents, the operator's principal, runs in $LOGS/runs;
# - a second `ddwire serve` with --tokens (one bearer token) and hello, runs in $LOGS/runs-tokens;
# - signed calls (vendor-notes/hmac-signing.md): `ddwire agent hello --key-file`, dd_agent.py as
#   py.signed with --key-file (verifying with dd_signing.py as ASGI middleware), and a third
#   `ddwire serve` whose agents config names both key files, runs in $LOGS/runs-signed.
# Then runs harness_a2a1.py (a2a-sdk 1.3.0 client), signed_a2a.py (1.3.0) and harness_a2a03.py
# (0.3.26 client); see README.md. Kills every server on exit.
set -euo pipefail
SUITE=harness
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/harness"

bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
py03="" py1=""
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -n "$py1" ]] || { finish; exit; }

read -r -d '' p_hello p_director p_py p_over p_broken p_harness p_tokens p_hello_signed p_py_signed p_signed \
    < <(free_ports 10; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }
card=/.well-known/agent-card.json

# Each keyed agent's secret: 64 hex digits, readable by its owner only.
for k in hello-signed py-signed; do
    python3 -c 'import secrets; print(secrets.token_hex(32))' >"$LOGS/$k.key"
    chmod 600 "$LOGS/$k.key"
done

start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
start_server ddwire-hello-signed "$DDWIRE" agent hello --port "$p_hello_signed" --key-file "$LOGS/hello-signed.key"
start_server ddwire-director "$DDWIRE" agent director --port "$p_director"
wait_ready ddwire-hello "$(url "$p_hello")$card" 15 || { finish; exit; }
start_server py-chat "$py1" "$here/dd_agent.py" "$p_py" "$(url "$p_hello")" --agent-id py.chat
start_server py-overreach "$py1" "$here/dd_agent.py" "$p_over" "$(url "$p_hello")" --agent-id py.overreach --overreach
start_server py-broken "$py1" "$here/dd_agent.py" "$p_broken" "$(url "$p_hello")" --agent-id py.broken --broken
start_server py-signed "$py1" "$here/dd_agent.py" "$p_py_signed" "$(url "$p_hello")" --agent-id py.signed \
    --key-file "$LOGS/py-signed.key" --record "$LOGS/py-signed-last-call.json"
ok=1
wait_ready ddwire-director "$(url "$p_director")$card" 15 || ok=0
wait_ready py-chat "$(url "$p_py")$card" 60 || ok=0
wait_ready py-overreach "$(url "$p_over")$card" 60 || ok=0
wait_ready py-broken "$(url "$p_broken")$card" 60 || ok=0
wait_ready ddwire-hello-signed "$(url "$p_hello_signed")$card" 15 || ok=0
wait_ready py-signed "$(url "$p_py_signed")$card" 60 || ok=0
[[ $ok -eq 1 ]] || { finish; exit; }

cat >"$LOGS/agents.json" <<EOF
{"agents": [
  {"url": "$(url "$p_py")", "name": "py-chat", "timeout_s": 30},
  {"url": "$(url "$p_over")", "name": "py-overreach", "timeout_s": 30},
  {"url": "$(url "$p_broken")", "name": "py-broken", "timeout_s": 30},
  {"url": "$(url "$p_hello")", "name": "hello", "timeout_s": 30},
  {"url": "$(url "$p_director")", "name": "director", "timeout_s": 30}
]}
EOF
cat >"$LOGS/agents-tokens.json" <<EOF
{"agents": [{"url": "$(url "$p_hello")", "name": "hello", "timeout_s": 30}]}
EOF
# Key files named relative to the config's folder.
cat >"$LOGS/agents-signed.json" <<EOF
{"agents": [
  {"url": "$(url "$p_py_signed")", "name": "py-signed", "timeout_s": 30, "key_file": "py-signed.key"},
  {"url": "$(url "$p_hello_signed")", "name": "hello-signed", "timeout_s": 30, "key_file": "hello-signed.key"}
]}
EOF
cat >"$LOGS/profile.json" <<'EOF'
{"profile_id": "harness-interop", "version": 1,
 "agents": {"py.chat": "converse", "py.overreach": "converse", "py.broken": "converse", "py.signed": "converse", "hello.world": "converse", "director.route": "converse"},
 "actions_requiring_approval": []}
EOF
# The tokens file holds only the token's SHA-256 digest; the test presents the token itself.
token="interop-$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
principal_name="Ada Interop"
digest="$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
cat >"$LOGS/tokens.json" <<EOF
{"$digest": {"principal_id": "https://orcid.org/0000-0001-5109-3700", "name": "$principal_name", "principal_kind": "person"}}
EOF

start_server ddwire-serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --profile "$LOGS/profile.json" --runs "$LOGS/runs" \
    --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"
start_server ddwire-serve-tokens "$DDWIRE" serve --port "$p_tokens" --agents "$LOGS/agents-tokens.json" \
    --profile "$LOGS/profile.json" --runs "$LOGS/runs-tokens" --tokens "$LOGS/tokens.json"
start_server ddwire-serve-signed "$DDWIRE" serve --port "$p_signed" --agents "$LOGS/agents-signed.json" \
    --profile "$LOGS/profile.json" --runs "$LOGS/runs-signed" \
    --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"
wait_ready ddwire-serve "$(url "$p_harness")/healthz" 15 || ok=0
wait_ready ddwire-serve-tokens "$(url "$p_tokens")/healthz" 15 || ok=0
wait_ready ddwire-serve-signed "$(url "$p_signed")/healthz" 15 || ok=0
[[ $ok -eq 1 ]] || { finish; exit; }

python3 - "$LOGS/config.json" <<EOF
import json, sys
json.dump({"harness": "$(url "$p_harness")", "tokens_harness": "$(url "$p_tokens")",
           "runs": "$LOGS/runs", "tokens_runs": "$LOGS/runs-tokens", "ddwire": "$DDWIRE",
           "py_agent": "$(url "$p_py")", "token": "$token", "principal_name": "$principal_name"},
          open(sys.argv[1], "w"), indent=2)
EOF

run_test a2a1-client "$py1" "$here/harness_a2a1.py" "$LOGS/config.json"

python3 - "$LOGS/signed.json" <<EOF
import json, sys
json.dump({"signed_harness": "$(url "$p_signed")", "py_signed": "$(url "$p_py_signed")",
           "py_key_file": "$LOGS/py-signed.key", "py_record": "$LOGS/py-signed-last-call.json",
           "hello_signed": "$(url "$p_hello_signed")", "hello_key_file": "$LOGS/hello-signed.key",
           "note": "$REPO/vendor-notes/hmac-signing.md", "runs": "$LOGS/runs-signed"},
          open(sys.argv[1], "w"), indent=2)
EOF
run_test signed-client "$py1" "$here/signed_a2a.py" "$LOGS/signed.json"
[[ -z "$py03" ]] || run_test a2a03-client "$py03" "$here/harness_a2a03.py" "$(url "$p_harness")"

finish
