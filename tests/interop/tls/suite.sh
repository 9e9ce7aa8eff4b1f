#!/usr/bin/env bash
# The tls interop suite: ddwire's TLS (servers, outbound trust, mTLS, OTLP over https) against the
# real upstream tools, with the test PKI of fixtures/tls (see fixtures/tls/generate.sh). Run it
# through tests/interop/run tls.
#
# Copies fixtures/tls to $LOGS/pki with every key chmod 600 (git keeps no file modes; ddwire
# refuses a key others can read), then starts on free loopback ports:
# - ddwire, over TLS (server.pem): `ddwire agent hello`, `ddwire agent echo`, `ddwire agent echo
#   --tls-client-ca ca.pem` (mTLS), `ddwire agent echo --host ::1`, `ddwire agent director --ca-file ca.pem` (it calls the harness
#   back over https to delegate), a second hello whose certificate files rotate_tls.py replaces,
#   the harness `ddwire serve --ca-file ca.pem` whose agents are all at https URLs (the mTLS ones
#   with tls_client_cert/tls_client_key in their entries), a second, plain harness trusting the CA
#   through DD_CA_FILE and exporting to a TLS sink, and `ddwire relay --ca-file ca.pem
#   --tls-client-cert client.pem` over peers at https URLs;
# - a2a-sdk 0.3.26 agents under uvicorn with ssl_certfile/ssl_keyfile (what uvicorn's
#   --ssl-certfile/--ssl-keyfile set): ../a2a/server_a2a03.py with server.pem, wronghost.pem,
#   expired.pem, untrusted.pem and plain HTTP, ../relay/server_stream.py (streaming);
# - a2a-sdk 1.3.0 agents built like dd_sdk.serve (../harness/dd_agent.py) under uvicorn TLS: py.chat,
#   and py.mtls requiring a client certificate (ssl_cert_reqs=CERT_REQUIRED);
# - silent.py (a port that never answers a ClientHello);
# - OTLP receivers over TLS: rotel 0.0.1a15 has TLS options for its exporters only (`rotel-agent
#   start --help`: --otlp-exporter-tls-*; its OTLP receivers have none), so it cannot receive over
#   https. Instead: Arize Phoenix 20.26.1 with its own TLS (PHOENIX_TLS_ENABLED, PHOENIX_TLS_CERT_FILE,
#   PHOENIX_TLS_KEY_FILE), the most real receiver on PyPI that serves OTLP/HTTP over TLS
#   (DDWIRE_INTEROP_PHOENIX=0 skips it, as in the otlp suite), and ../otlp/sink.py behind Python's
#   ssl module (decoding with opentelemetry-proto, so that every span is compared field by field
#   by ../otlp/check_received.py), three times: for export and serve, requiring a client
#   certificate, and for the relay;
# then runs the test programs (each one's docstring lists its tests; README.md sums them up):
# ../a2a/client_a2a03.py and client_js.mjs against the TLS hello, ../harness/harness_a2a03.py
# against the TLS harness, tls_a2a03.py, tls_js.mjs, cli_tls.py, ../check/expect.py per `ddwire
# check` expectation and ../check/junit.py over their reports, ../otlp/check_received.py and
# check_phoenix.py, rotate_tls.py, relay_tls.py; and kills every server on exit. About 25 s with
# warm venvs.
set -euo pipefail
SUITE=tls
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/tls"
a2a="$INTEROP/a2a"
reports="$LOGS/reports"   # check/<test>.json and .xml: the name expect.py prints is the report's path
mkdir -p "$reports/check"

bash "$INTEROP/venv.sh" a2a03 >"$LOGS/venv-a2a03.out" 2>"$LOGS/venv-a2a03.log" & v03=$!
bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log" & v1=$!
bash "$INTEROP/venv.sh" otlp >"$LOGS/venv-otlp.out" 2>"$LOGS/venv-otlp.log" & votlp=$!
bash "$INTEROP/venv.sh" check >"$LOGS/venv-check.out" 2>"$LOGS/venv-check.log" & vc=$!
if [[ "${DDWIRE_INTEROP_PHOENIX:-1}" != 0 ]]; then
    bash "$INTEROP/venv.sh" phoenix >"$LOGS/venv-phoenix.out" 2>"$LOGS/venv-phoenix.log" & v_phx=$!
fi
npm_ok=1
bash "$INTEROP/npm.sh" >/dev/null 2>"$LOGS/npm.log" || npm_ok=0
py03="" py1="" pyotlp="" pyc="" venv_phx=""
if wait $v03; then py03="$(cat "$LOGS/venv-a2a03.out")/bin/python"; else fail setup/venv-a2a03 "see $LOGS/venv-a2a03.log"; fi
if wait $v1; then py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"; else fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"; fi
if wait $votlp; then pyotlp="$(cat "$LOGS/venv-otlp.out")/bin/python"; else fail setup/venv-otlp "see $LOGS/venv-otlp.log"; fi
if wait $vc; then pyc="$(cat "$LOGS/venv-check.out")/bin/python"; else fail setup/venv-check "see $LOGS/venv-check.log"; fi
if [[ -n "${v_phx:-}" ]]; then
    if wait "$v_phx"; then venv_phx="$(cat "$LOGS/venv-phoenix.out")"; else fail setup/venv-phoenix "see $LOGS/venv-phoenix.log"; fi
fi
[[ $npm_ok -eq 1 ]] || fail setup/npm "npm ci failed (see $LOGS/npm.log)"
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -n "$py03" && -n "$py1" && -n "$pyotlp" ]] || { finish; exit; }

# The test PKI, keys readable by their owner only.
pki="$LOGS/pki"
mkdir -p "$pki"
cp "$REPO"/fixtures/tls/*.pem "$REPO"/fixtures/tls/*.key "$pki/"
chmod 600 "$pki"/*.key
ca="$pki/ca.pem"
# The same flags serve ddwire, the uvicorn servers and sink.py.
server=(--tls-cert "$pki/server.pem" --tls-key "$pki/server.key")
wronghost=(--tls-cert "$pki/wronghost.pem" --tls-key "$pki/wronghost.key")
expired=(--tls-cert "$pki/expired.pem" --tls-key "$pki/expired.key")
untrusted=(--tls-cert "$pki/untrusted.pem" --tls-key "$pki/untrusted.key")
client=(--tls-client-cert "$pki/client.pem" --tls-client-key "$pki/client.key")

read -r -d '' p_hello p_echo p_mecho p_harness p_relay p_oharness p_s03 p_st03 p_wrong p_expired \
    p_untrusted p_plain p_py p_pym p_silent p_sink p_msink p_rsink p_phx p_phx_grpc p_rotate \
    p_director p_echo6 < <(free_ports 23; printf '\0') || true
https() { printf 'https://127.0.0.1:%s' "$1"; }
card=/.well-known/agent-card.json

# ddwire's TLS agents, the a2a-sdk 0.3.26 servers, the silent port and the OTLP sinks.
start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello" "${server[@]}"
start_server ddwire-echo "$DDWIRE" agent echo --port "$p_echo" "${server[@]}"
start_server ddwire-echo-ipv6 "$DDWIRE" agent echo --host ::1 --port "$p_echo6" "${server[@]}"
start_server ddwire-echo-mtls "$DDWIRE" agent echo --port "$p_mecho" "${server[@]}" --tls-client-ca "$ca"
# The director delegates by calling the harness back at its https URL: it trusts the CA.
start_server ddwire-director "$DDWIRE" agent director --port "$p_director" "${server[@]}" --ca-file "$ca"
# An agent whose certificate files rotate_tls.py replaces while it serves.
mkdir -p "$LOGS/rotate"
cp "$pki/server.pem" "$LOGS/rotate/cert.pem"
cp -p "$pki/server.key" "$LOGS/rotate/key.pem"
start_server ddwire-rotate "$DDWIRE" agent hello --port "$p_rotate" \
    --tls-cert "$LOGS/rotate/cert.pem" --tls-key "$LOGS/rotate/key.pem"
start_server a2a03-server "$py03" "$a2a/server_a2a03.py" "$p_s03" "${server[@]}"
start_server stream03-server "$py03" "$INTEROP/relay/server_stream.py" 03 "$p_st03" "${server[@]}"
start_server a2a03-wronghost "$py03" "$a2a/server_a2a03.py" "$p_wrong" "${wronghost[@]}"
start_server a2a03-expired "$py03" "$a2a/server_a2a03.py" "$p_expired" "${expired[@]}"
start_server a2a03-untrusted "$py03" "$a2a/server_a2a03.py" "$p_untrusted" "${untrusted[@]}"
start_server a2a03-plain "$py03" "$a2a/server_a2a03.py" "$p_plain"
start_server silent python3 "$here/silent.py" "$p_silent"
start_server sink "$pyotlp" "$INTEROP/otlp/sink.py" "$p_sink" "$LOGS/sink.jsonl" "${server[@]}"
start_server sink-mtls "$pyotlp" "$INTEROP/otlp/sink.py" "$p_msink" "$LOGS/sink-mtls.jsonl" "${server[@]}" \
    --tls-client-ca "$ca"
start_server sink-relay "$pyotlp" "$INTEROP/otlp/sink.py" "$p_rsink" "$LOGS/sink-relay.jsonl" "${server[@]}"
if [[ -n "$venv_phx" ]]; then
    mkdir -p "$LOGS/phoenix"
    start_server phoenix env PHOENIX_WORKING_DIR="$LOGS/phoenix" PHOENIX_HOST=127.0.0.1 \
        PHOENIX_PORT="$p_phx" PHOENIX_GRPC_PORT="$p_phx_grpc" PHOENIX_TELEMETRY_ENABLED=false \
        PHOENIX_TLS_ENABLED=true PHOENIX_TLS_CERT_FILE="$pki/server.pem" PHOENIX_TLS_KEY_FILE="$pki/server.key" \
        "$venv_phx/bin/phoenix" serve
fi

ok=1
wait_ready ddwire-hello "$(https "$p_hello")$card" 15 "$ca" || ok=0
wait_ready ddwire-echo "$(https "$p_echo")$card" 15 "$ca" || ok=0
wait_ready ddwire-echo-ipv6 "https://[::1]:$p_echo6$card" 15 "$ca" || ok=0
wait_ready ddwire-echo-mtls "$(https "$p_mecho")$card" 15 "$ca" "$pki/client.pem" "$pki/client.key" || ok=0
wait_ready ddwire-rotate "$(https "$p_rotate")$card" 15 "$ca" || ok=0
wait_ready ddwire-director "$(https "$p_director")$card" 15 "$ca" || ok=0
[[ $ok -eq 1 ]] || { finish; exit; }

# Every printed address says https.
listening=1
for s in ddwire-hello:$p_hello ddwire-echo:$p_echo ddwire-echo-mtls:$p_mecho ddwire-rotate:$p_rotate \
    ddwire-director:$p_director; do
    grep -q "listening on https://127.0.0.1:${s#*:} " "$LOGS/${s%%:*}.log" || listening=0
done
grep -q "listening on https://\[::1\]:$p_echo6 " "$LOGS/ddwire-echo-ipv6.log" || listening=0
if [[ $listening -eq 1 ]]; then
    pass ddwire/agents-say-https
else
    fail ddwire/agents-say-https "an agent's listening line does not say https://127.0.0.1:PORT (logs: $LOGS/ddwire-*.log)"
fi

# The a2a-sdk 1.3.0 agents read their class schemas off hello's card, over https.
start_server py-chat "$py1" "$INTEROP/harness/dd_agent.py" "$p_py" "$(https "$p_hello")" --agent-id py.chat \
    --ca "$ca" "${server[@]}"
start_server py-mtls "$py1" "$INTEROP/harness/dd_agent.py" "$p_pym" "$(https "$p_hello")" --agent-id py.mtls \
    --ca "$ca" "${server[@]}" --tls-client-ca "$ca"

wait_ready a2a03-server "$(https "$p_s03")$card" 60 "$ca" || ok=0
wait_ready stream03-server "$(https "$p_st03")$card" 60 "$ca" || ok=0
wait_ready a2a03-wronghost "$(https "$p_wrong")$card" 60 - || ok=0
wait_ready a2a03-expired "$(https "$p_expired")$card" 60 - || ok=0
wait_ready a2a03-untrusted "$(https "$p_untrusted")$card" 60 "$pki/other-ca.pem" || ok=0
wait_ready a2a03-plain "http://127.0.0.1:$p_plain$card" 60 || ok=0
wait_ready py-chat "$(https "$p_py")$card" 60 "$ca" || ok=0
wait_ready py-mtls "$(https "$p_pym")$card" 60 "$ca" "$pki/client.pem" "$pki/client.key" || ok=0
wait_ready sink "$(https "$p_sink")/" 30 "$ca" || ok=0
wait_ready sink-mtls "$(https "$p_msink")/" 30 "$ca" "$pki/client.pem" "$pki/client.key" || ok=0
wait_ready sink-relay "$(https "$p_rsink")/" 30 "$ca" || ok=0
[[ $ok -eq 1 ]] || { finish; exit; }

# The harness: every agent at an https URL; the mTLS ones with the client certificate in their
# entry (relative to the file's folder, or absolute).
cat >"$LOGS/agents.json" <<EOF
{"agents": [
  {"url": "$(https "$p_py")", "name": "py-chat", "timeout_s": 30},
  {"url": "$(https "$p_pym")", "name": "py-mtls", "timeout_s": 30,
   "tls_client_cert": "$pki/client.pem", "tls_client_key": "$pki/client.key"},
  {"url": "$(https "$p_hello")", "name": "hello", "timeout_s": 30},
  {"url": "$(https "$p_mecho")", "name": "echo-mtls", "timeout_s": 30,
   "tls_client_cert": "pki/client.pem", "tls_client_key": "pki/client.key"},
  {"url": "$(https "$p_director")", "name": "director", "timeout_s": 60}
]}
EOF
cat >"$LOGS/profile.json" <<'EOF'
{"profile_id": "tls-interop", "version": 1,
 "agents": {"py.chat": "converse", "py.mtls": "converse", "hello.world": "converse", "echo.wire": "advise",
            "director.route": "converse"},
 "actions_requiring_approval": []}
EOF
start_server ddwire-serve "$DDWIRE" serve --port "$p_harness" "${server[@]}" --ca-file "$ca" \
    --agents "$LOGS/agents.json" --profile "$LOGS/profile.json" --runs "$LOGS/runs" \
    --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"

# The relay: called over https, calling its peers over https (presenting client.pem to the one
# that asks), exporting its spans to a TLS sink.
cat >"$LOGS/peers.json" <<JSON
{"peers": [
  {"id": "ddecho", "url": "$(https "$p_echo")", "role": "hub"},
  {"id": "py03", "url": "$(https "$p_s03")", "role": "leaf"},
  {"id": "st03", "url": "$(https "$p_st03")", "role": "leaf"},
  {"id": "mecho", "url": "$(https "$p_mecho")", "role": "leaf"},
  {"id": "bad", "url": "$(https "$p_untrusted")", "role": "leaf"}
]}
JSON
start_server relay "$DDWIRE" relay --port "$p_relay" "${server[@]}" --ca-file "$ca" "${client[@]}" \
    --peers "$LOGS/peers.json" --peer-allow 127.0.0.1/32 --traces "$LOGS/traces" --timeout 10 \
    --otlp-endpoint "$(https "$p_rsink")"

# A second harness, plain HTTP, trusting the CA through DD_CA_FILE alone: it calls hello over
# https and exports each run it stores to the TLS sink.
cat >"$LOGS/agents-otlp.json" <<EOF
{"agents": [{"url": "$(https "$p_hello")", "name": "hello", "timeout_s": 30}]}
EOF
start_server ddwire-serve-otlp env DD_CA_FILE="$ca" "$DDWIRE" serve --port "$p_oharness" \
    --agents "$LOGS/agents-otlp.json" --profile "$LOGS/profile.json" --runs "$LOGS/runs-otlp" \
    --otlp-endpoint "$(https "$p_sink")" \
    --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"

harness_ok=1 relay_ok=1 oharness_ok=1
wait_ready ddwire-serve "$(https "$p_harness")/healthz" 30 "$ca" || harness_ok=0
wait_ready relay "$(https "$p_relay")/livez" 15 "$ca" || relay_ok=0
wait_ready ddwire-serve-otlp "http://127.0.0.1:$p_oharness/healthz" 30 || oharness_ok=0

python3 - "$LOGS/config.json" <<EOF
import json, sys
json.dump({"echo": "$(https "$p_echo")", "echo6": "https://[::1]:$p_echo6", "mecho": "$(https "$p_mecho")", "harness": "$(https "$p_harness")",
           "agents": 5, "pki": "$pki", "ddwire": "$DDWIRE", "logs": "$LOGS",
           "s03": "$(https "$p_s03")", "wrong": "$(https "$p_wrong")", "expired": "$(https "$p_expired")",
           "untrusted": "$(https "$p_untrusted")", "runs": "$LOGS/runs-demo",
           "sink": "$(https "$p_sink")", "sink_file": "$LOGS/sink.jsonl",
           "msink": "$(https "$p_msink")", "msink_file": "$LOGS/sink-mtls.jsonl",
           "relay": "$(https "$p_relay")", "traces": "$LOGS/traces", "sink_relay_file": "$LOGS/sink-relay.jsonl"},
          open(sys.argv[1], "w"), indent=2)
EOF

# 1, 2, 6: a2a-sdk 0.3.26 and @a2a-js/sdk clients over TLS: to ddwire's agents, to the harness
# (which calls the a2a-sdk agents under uvicorn TLS), and mTLS.
run_test agent-hello-a2a03 env INTEROP_TEST_PREFIX=agent-hello/ "$py03" "$a2a/client_a2a03.py" \
    "$(https "$p_hello")" --ca "$ca"
[[ $harness_ok -eq 0 ]] || run_test harness-a2a03 env INTEROP_TEST_PREFIX=harness/ "$py03" \
    "$INTEROP/harness/harness_a2a03.py" "$(https "$p_harness")" --ca "$ca"
run_test tls-a2a03 "$py03" "$here/tls_a2a03.py" "$LOGS/config.json"
if [[ $npm_ok -eq 1 ]]; then
    run_test agent-hello-js env INTEROP_TEST_PREFIX=agent-hello/ NODE_EXTRA_CA_CERTS="$REPO/fixtures/tls/ca.pem" \
        node "$a2a/client_js.mjs" "$(https "$p_hello")"
    run_test tls-js env NODE_EXTRA_CA_CERTS="$REPO/fixtures/tls/ca.pem" node "$here/tls_js.mjs" "$LOGS/config.json"
fi
# A run store for the OTLP exports below (and cli_tls.py's refused ones).
"$DDWIRE" demo --quiet --runs "$LOGS/runs-demo" >"$LOGS/demo.log" 2>&1 || fail setup/demo "ddwire demo failed (log: $LOGS/demo.log)"
run_test cli python3 "$here/cli_tls.py" "$LOGS/config.json"

# 3: `ddwire check` over TLS: passes against the a2a-sdk agent under uvicorn TLS and ddwire's own,
# fails with its TLS probe (tls.handshake) naming the cause otherwise, for an https:// URL and for
# an http:// URL whose port speaks TLS.
expect() { run_test "check-${1//\//-}" python3 "$INTEROP/check/expect.py" "check/$1" "$DDWIRE" "${@:2}"; }
trust=(--ca-file "$ca")
probe=tls.handshake   # the probe a TLS failure fails (vendor-notes/a2a.md, vendor-notes/tls.md)
tls_fails=(--exit 1 --fail "$probe")
expect uvicorn-a2a-sdk-0.3.26 "$(https "$p_s03")" "$reports" \
    --warn "jsonrpc.error-id [0.3],jsonrpc.notification [0.3]" -- "${trust[@]}"
expect ddwire-agent-strict "$(https "$p_hello")" "$reports" --text-has "PASS  dd.reply [1.0]" \
    -- "${trust[@]}" --dd --strict --binding both
[[ $harness_ok -eq 0 ]] || expect ddwire-serve-strict "$(https "$p_harness")" "$reports" \
    -- "${trust[@]}" --dd --strict --binding both
expect ddwire-agent-mtls-client-cert "$(https "$p_mecho")" "$reports" \
    -- "${trust[@]}" "${client[@]}" --dd --strict --binding both
expect wrong-host "$(https "$p_wrong")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=wrong host" -- "${trust[@]}"
expect expired "$(https "$p_expired")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=expired" -- "${trust[@]}"
expect unknown-ca "$(https "$p_untrusted")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=unknown CA" -- "${trust[@]}"
expect ca-only-other-ca "$(https "$p_s03")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=unknown CA" \
    -- --ca-file "$pki/other-ca.pem" --ca-only
expect handshake-timeout "$(https "$p_silent")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=handshake.*(timeout|in time)" \
    -- "${trust[@]}" --timeout 2
expect tls-to-plain-port "$(https "$p_plain")" "$reports" "${tls_fails[@]}" --detail-matches "$probe=plain HTTP" \
    -- "${trust[@]}"
expect plain-http-to-uvicorn-tls-port "http://127.0.0.1:$p_s03" "$reports" "${tls_fails[@]}" \
    --detail-matches "$probe=plain HTTP.*TLS port" -- "${trust[@]}"
expect plain-http-to-ddwire-tls-port "http://127.0.0.1:$p_hello" "$reports" "${tls_fails[@]}" \
    --detail-matches "$probe=plain HTTP.*TLS port" -- "${trust[@]}"
expect mtls-no-client-cert "$(https "$p_mecho")" "$reports" "${tls_fails[@]}" \
    --detail-matches "$probe=client certificate" -- "${trust[@]}"
expect insecure-wrong-host "$(https "$p_wrong")" "$reports" \
    --warn "jsonrpc.error-id [0.3],jsonrpc.notification [0.3]" --all-formats-match 'not verified' -- --insecure
[[ -z "$pyc" ]] || run_test check-junit "$pyc" "$INTEROP/check/junit.py" "$reports/check"

# 4: OTLP over https, received by sink.py (field by field) and by Arize Phoenix.
received() { run_test "${1//\//-}" "$pyotlp" "$INTEROP/otlp/check_received.py" "$@"; }
received otlp/sink-tls/export-ca-file "$LOGS/runs-demo" "$LOGS/sink.jsonl" -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-demo" --otlp-endpoint "$(https "$p_sink")" --ca-file "$ca"
received otlp/sink-tls/export-variables "$LOGS/runs-demo" "$LOGS/sink.jsonl" -- \
    env OTEL_EXPORTER_OTLP_ENDPOINT="$(https "$p_sink")" DD_CA_FILE="$ca" "$DDWIRE" export --all --runs "$LOGS/runs-demo"
received otlp/sink-mtls/export-client-cert "$LOGS/runs-demo" "$LOGS/sink-mtls.jsonl" --tls-client-cn ddwire-test-client -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-demo" --otlp-traces-endpoint "$(https "$p_msink")/v1/traces" \
    --ca-file "$ca" "${client[@]}"
echo '{"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "Hi over TLS"}}' >"$LOGS/hello.json"
[[ $oharness_ok -eq 0 ]] || received otlp/sink-tls/serve-live-dd-ca-file "$LOGS/runs-otlp" "$LOGS/sink.jsonl" --live -- \
    "$DDWIRE" send "http://127.0.0.1:$p_oharness" --data "$LOGS/hello.json"
if [[ -n "$venv_phx" ]]; then
    phx_version="$("$venv_phx/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))')"
    if wait_ready phoenix "$(https "$p_phx")/healthz" 120 "$ca"; then
        run_test phoenix-checks "$venv_phx/bin/python" "$INTEROP/otlp/check_phoenix.py" \
            "otlp/phoenix-$phx_version-tls" "$(https "$p_phx")" "$LOGS/runs-demo" "$DDWIRE" --ca "$ca"
    fi
fi

# A listener's certificate rotated under it: by a change of its files, by SIGHUP.
python3 - "$LOGS/rotate.json" <<EOF
import json, sys
json.dump({"url": "$(https "$p_rotate")", "dir": "$LOGS/rotate", "pid": ${_pids[ddwire-rotate]},
           "log": "$LOGS/ddwire-rotate.log", "pki": "$pki"}, open(sys.argv[1], "w"), indent=2)
EOF
run_test rotate python3 "$here/rotate_tls.py" "$LOGS/rotate.json"

# 5: the relay over TLS, to peers at https URLs.
python3 - "$LOGS/relay.json" <<EOF
import json, sys
json.dump({"relay": "$(https "$p_relay")", "traces": "$LOGS/traces", "sink": "$LOGS/sink-relay.jsonl",
           "pki": "$pki"}, open(sys.argv[1], "w"), indent=2)
EOF
[[ $relay_ok -eq 0 ]] || run_test relay "$py03" "$here/relay_tls.py" "$LOGS/relay.json"

finish
