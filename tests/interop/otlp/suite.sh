#!/usr/bin/env bash
# The otlp suite: ddwire's OTLP export received by real OTLP receivers from PyPI.
#
# rotel (a Rust OpenTelemetry collector shipped in the `rotel` wheel) receives, on a free
# loopback port, every run of `ddwire demo` in both encodings, exported live by the demo's
# background exporter (as `serve` exports) and again by `ddwire export` from the run store, by
# flags, by OTEL_* variables and through an --otlp-file; it forwards what it received as
# protobuf to sink.py, which decodes it with opentelemetry-proto, and check_received.py compares
# every stored span with what arrived, field by field. Arize Phoenix receives a delegated run
# (parent and child traces) and its REST API returns both (check_phoenix.py); and a relay session
# between two ddwire agents, which its REST API shows as one session with its hops
# (check_phoenix_relay.py).
#
# Test names carry the receiver and its version (e.g. rotel-0.0.1a15/...).
set -euo pipefail
SUITE=otlp
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$INTEROP/otlp"

bash "$INTEROP/venv.sh" otlp >"$LOGS/venv-otlp.out" 2>"$LOGS/venv-otlp.log" & v_otlp=$!
if [[ "${DDWIRE_INTEROP_PHOENIX:-1}" != 0 ]]; then
    bash "$INTEROP/venv.sh" phoenix >"$LOGS/venv-phoenix.out" 2>"$LOGS/venv-phoenix.log" & v_phx=$!
fi
venv_otlp="" venv_phx=""
if wait $v_otlp; then venv_otlp="$(cat "$LOGS/venv-otlp.out")"; else fail setup/venv-otlp "see $LOGS/venv-otlp.log"; fi
if [[ -n "${v_phx:-}" ]]; then
    if wait "$v_phx"; then venv_phx="$(cat "$LOGS/venv-phoenix.out")"; else fail setup/venv-phoenix "see $LOGS/venv-phoenix.log"; fi
fi
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -n "$venv_otlp" ]] || { finish; exit; }

py="$venv_otlp/bin/python"
rotel="$("$py" -c 'import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), "rotel-agent"))')"
rotel_version="$("$py" -c 'import importlib.metadata as m; print(m.version("rotel"))')"
echo "rotel $rotel_version: $("$rotel" --version)" >"$LOGS/receivers.txt"

read -r -d '' p_sink p_http p_grpc p_phx p_phx_grpc < <(free_ports 5; printf '\0') || true
sink="$LOGS/sink.jsonl"
start_server sink "$py" "$here/sink.py" "$p_sink" "$sink"
wait_ready sink "http://127.0.0.1:$p_sink/" 30 || { finish; exit; }
# rotel takes OTLP/HTTP (JSON and protobuf) and forwards protobuf to the sink, in 50 ms batches.
start_server rotel "$rotel" start --otlp-http-endpoint "127.0.0.1:$p_http" \
    --otlp-grpc-endpoint "127.0.0.1:$p_grpc" --exporter otlp \
    --otlp-exporter-endpoint "http://127.0.0.1:$p_sink" --otlp-exporter-protocol http \
    --batch-timeout 50ms --log-file "$LOGS/rotel-agent.log" --pid-file "$LOGS/rotel-agent.pid"
# rotel answers 404 at /, so wait for its port to accept connections.
if ! python3 - "$p_http" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
then
    fail rotel/ready "rotel did not listen on $p_http (log: $LOGS/rotel.log)"; finish; exit
fi

r="rotel-$rotel_version"
rotel_url="http://127.0.0.1:$p_http"
# A test's log is named after it, with its slashes as dashes.
check() { run_test "${1//\//-}" "$py" "$here/check_received.py" "$@"; }

# Every run of the demo, exported live by its background exporter, in each encoding.
check "$r/demo-live/http-json" "$LOGS/runs-json" "$sink" --live --common deployment.environment=interop -- \
    env OTEL_RESOURCE_ATTRIBUTES=deployment.environment=interop \
    "$DDWIRE" demo --quiet --runs "$LOGS/runs-json" --otlp-endpoint "$rotel_url" --otlp-protocol http/json
check "$r/demo-live/http-protobuf" "$LOGS/runs-pb" "$sink" --live -- \
    "$DDWIRE" demo --quiet --runs "$LOGS/runs-pb" --otlp-endpoint "$rotel_url" --otlp-protocol http/protobuf
# The same runs again from the run store, by flags and by the standard variables.
check "$r/export/http-json-flags" "$LOGS/runs-pb" "$sink" -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-pb" --otlp-traces-endpoint "$rotel_url/v1/traces" --otlp-protocol http/json
check "$r/export/http-protobuf-variables" "$LOGS/runs-json" "$sink" -- \
    env OTEL_EXPORTER_OTLP_ENDPOINT="$rotel_url" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
    OTEL_EXPORTER_OTLP_HEADERS="x-ddwire-test=otlp%20suite" "$DDWIRE" export --all --runs "$LOGS/runs-json"
# The collector file-exporter format: each line POSTed to rotel as it is.
check "$r/export/otlp-file" "$LOGS/runs-json" "$sink" --post-file "$LOGS/traces.jsonl" "$rotel_url/v1/traces" -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-json" --otlp-file "$LOGS/traces.jsonl"

# `ddwire serve` exports each run it stores, configured by the standard variables alone; the
# harness's own spans are named by OTEL_SERVICE_NAME. A delegation and a plain run, sent by
# `ddwire send` over A2A.
read -r -d '' p_hello p_director p_serve < <(free_ports 3; printf '\0') || true
start_server ddwire-hello "$DDWIRE" agent hello --port "$p_hello"
start_server ddwire-director "$DDWIRE" agent director --port "$p_director"
cat >"$LOGS/agents.json" <<EOF
{"agents": [{"url": "http://127.0.0.1:$p_hello", "name": "hello", "timeout_s": 30},
            {"url": "http://127.0.0.1:$p_director", "name": "director", "timeout_s": 60}]}
EOF
cat >"$LOGS/profile.json" <<'EOF'
{"profile_id": "otlp-interop", "version": 1,
 "agents": {"hello.world": "converse", "director.route": "converse"}, "actions_requiring_approval": []}
EOF
ok=1
wait_ready ddwire-hello "http://127.0.0.1:$p_hello/.well-known/agent-card.json" 15 || ok=0
wait_ready ddwire-director "http://127.0.0.1:$p_director/.well-known/agent-card.json" 15 || ok=0
if [[ $ok -eq 1 ]]; then
    start_server ddwire-serve env OTEL_EXPORTER_OTLP_ENDPOINT="$rotel_url" OTEL_SERVICE_NAME=ddwire-interop \
        OTEL_EXPORTER_OTLP_PROTOCOL=http/json "$DDWIRE" serve --port "$p_serve" --agents "$LOGS/agents.json" \
        --profile "$LOGS/profile.json" --runs "$LOGS/runs-serve" \
        --acting-for-id https://orcid.org/0000-0002-1825-0097 --acting-for-name "Josiah Carberry"
    if wait_ready ddwire-serve "http://127.0.0.1:$p_serve/healthz" 15; then
        echo '{"agent_id": "director.route", "input": {"schema_class": "Message", "message_text": "Say hello"}}' >"$LOGS/route.json"
        echo '{"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "Hi"}}' >"$LOGS/hello.json"
        check "$r/serve-live/variables" "$LOGS/runs-serve" "$sink" --live --service-name ddwire-interop -- \
            bash -c '"$1" send "$2" --data "$3" >/dev/null && "$1" send "$2" --data "$4" >/dev/null' _ \
            "$DDWIRE" "http://127.0.0.1:$p_serve" "$LOGS/route.json" "$LOGS/hello.json"
    fi
fi

# The fixture's spans (fixtures/otlp: every kind, ERROR statuses, trace states, extended attribute
# values, escapes, zero and far times...) stored as runs, then exported in each encoding. rotel
# refuses, in OTLP/JSON only, an empty value inside an array (Python's ["a", None] is
# `"values":[{"stringValue":"a"},{}]`, valid OTLP/JSON with no other spelling): the JSON copy of
# the store leaves out the one attribute that holds one.
python3 - "$REPO/fixtures/otlp/cases.jsonl" "$LOGS/runs-fixture" "$LOGS/runs-fixture-json" <<'PY'
import json, os, sys

def null_in_list(v, in_list=False):
    if v is None:
        return in_list
    if isinstance(v, list):
        return any(null_in_list(x, True) for x in v)
    if isinstance(v, dict):
        return any(null_in_list(x) for x in v.values())
    return False

seen = set()
for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    case = json.loads(line)
    for store, for_json in ((sys.argv[2], False), (sys.argv[3], True)):
        run = os.path.join(store, f"01900000-0000-7000-8000-{i:012x}")
        os.makedirs(run)
        with open(os.path.join(run, "envelope.json"), "w") as f:
            json.dump({"invocation_id": os.path.basename(run), "completed_at": "2026-01-01T00:00:00Z"}, f)
        with open(os.path.join(run, "spans.jsonl"), "w", encoding="utf-8") as f:
            for text in case["spans"]:
                span = json.loads(text)
                c = span["context"]
                if not for_json:
                    if (c["trace_id"], c["span_id"]) in seen:
                        sys.exit(f"{case['case']}: span {c['span_id']} is in two cases")
                    seen.add((c["trace_id"], c["span_id"]))
                elif any(null_in_list(v) for v in span["attributes"].values()):
                    span["attributes"] = {k: v for k, v in span["attributes"].items() if not null_in_list(v)}
                    text = json.dumps(span)
                f.write(text + "\n")
PY
check "$r/export/fixture-spans-protobuf" "$LOGS/runs-fixture" "$sink" -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-fixture" --otlp-endpoint "$rotel_url" --otlp-protocol http/protobuf
check "$r/export/fixture-spans-json" "$LOGS/runs-fixture-json" "$sink" -- \
    "$DDWIRE" export --all --runs "$LOGS/runs-fixture-json" --otlp-endpoint "$rotel_url" --otlp-protocol http/json

if [[ -n "$venv_phx" ]]; then
    phx_version="$("$venv_phx/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))')"
    echo "arize-phoenix $phx_version" >>"$LOGS/receivers.txt"
    mkdir -p "$LOGS/phoenix"
    start_server phoenix env PHOENIX_WORKING_DIR="$LOGS/phoenix" PHOENIX_HOST=127.0.0.1 \
        PHOENIX_PORT="$p_phx" PHOENIX_GRPC_PORT="$p_phx_grpc" PHOENIX_TELEMETRY_ENABLED=false \
        "$venv_phx/bin/phoenix" serve
    if wait_ready phoenix "http://127.0.0.1:$p_phx/healthz" 120; then
        run_test phoenix-checks "$venv_phx/bin/python" "$here/check_phoenix.py" \
            "phoenix-$phx_version" "http://127.0.0.1:$p_phx" "$LOGS/runs-pb" "$DDWIRE"
        # A relay session between a ddwire agent (the hub) and a ddwire harness over `ddwire agent
        # hello` (a leaf that streams), exported to Phoenix as it happens.
        read -r -d '' p_hub p_hello p_leaf p_relay < <(free_ports 4; printf '\0') || true
        printf '{"peers": [{"id": "hub", "url": "http://127.0.0.1:%s", "role": "hub"}, {"id": "leaf", "url": "http://127.0.0.1:%s", "role": "leaf"}]}\n' \
            "$p_hub" "$p_leaf" >"$LOGS/relay-peers.json"
        printf '{"agents": [{"url": "http://127.0.0.1:%s"}]}\n' "$p_hello" >"$LOGS/relay-agents.json"
        start_server relay-hub "$DDWIRE" agent echo --port "$p_hub"
        start_server relay-hello "$DDWIRE" agent hello --port "$p_hello"
        start_server relay-leaf "$DDWIRE" serve --port "$p_leaf" --agents "$LOGS/relay-agents.json" \
            --runs "$LOGS/relay-runs" --acting-for-id urn:test:otlp-suite --acting-for-name "OTLP suite"
        relay_ready=1
        wait_ready relay-hub "http://127.0.0.1:$p_hub/.well-known/agent-card.json" 15 || relay_ready=0
        wait_ready relay-hello "http://127.0.0.1:$p_hello/.well-known/agent-card.json" 15 || relay_ready=0
        wait_ready relay-leaf "http://127.0.0.1:$p_leaf/healthz" 15 || relay_ready=0
        start_server relay "$DDWIRE" relay --port "$p_relay" --peers "$LOGS/relay-peers.json" --star \
            --peer-allow 127.0.0.1/32 --traces "$LOGS/relay-traces" \
            --otlp-endpoint "http://127.0.0.1:$p_phx"
        wait_ready relay "http://127.0.0.1:$p_relay/livez" 15 || relay_ready=0
        if [[ $relay_ready -eq 1 ]]; then
            run_test phoenix-relay python3 "$here/check_phoenix_relay.py" "phoenix-$phx_version" \
                "http://127.0.0.1:$p_phx" "http://127.0.0.1:$p_relay" "$LOGS/relay-traces" "$DDWIRE"
        fi
    fi
fi

finish
