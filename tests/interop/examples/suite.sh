#!/usr/bin/env bash
# The examples interop suite: examples/python_agent/agent.py (a plain a2a-sdk 1.3.0 agent made
# Data Director compatible in a page) behind `ddwire serve`, configured with the example profile
# and tokens, invoked with `ddwire invoke --harness` and its verdict reproduced by `ddwire lint`.
# Run it through tests/interop/run examples.
set -euo pipefail
SUITE=examples
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
examples="$REPO/examples"

py1=""
if bash "$INTEROP/venv.sh" a2a1 >"$LOGS/venv-a2a1.out" 2>"$LOGS/venv-a2a1.log"; then
    py1="$(cat "$LOGS/venv-a2a1.out")/bin/python"
else
    fail setup/venv-a2a1 "see $LOGS/venv-a2a1.log"
fi
[[ -x "$DDWIRE" ]] || { fail setup/ddwire "no ddwire binary at $DDWIRE"; finish; exit; }
[[ -n "$py1" ]] || { finish; exit; }

read -r -d '' p_py p_harness < <(free_ports 2; printf '\0') || true
url() { printf 'http://127.0.0.1:%s' "$1"; }

start_server py-example "$py1" "$examples/python_agent/agent.py" "$p_py"
wait_ready py-example "$(url "$p_py")/.well-known/agent-card.json" 60 || { finish; exit; }
cat >"$LOGS/agents.json" <<JSON
{"agents": [{"name": "py-example", "url": "$(url "$p_py")"}]}
JSON
start_server ddwire-serve "$DDWIRE" serve --port "$p_harness" --agents "$LOGS/agents.json" \
    --profile "$examples/profile.json" --tokens "$examples/tokens.json" --runs "$LOGS/runs"
wait_ready ddwire-serve "$(url "$p_harness")/healthz" 15 || { finish; exit; }

# registered: the harness admits the Python agent, nothing unavailable or incompatible.
health="$(python3 - "$(url "$p_harness")/healthz" <<'PY'
import json, sys, urllib.request
h = json.load(urllib.request.urlopen(sys.argv[1]))
a = h["agents"]
if isinstance(a, dict):  # {"available", "configured", "unavailable": {}, "incompatible": {}}
    ok = a.get("available") == 1 and not a.get("unavailable") and not a.get("incompatible")
else:  # the older shape: counts beside "agents"
    ok = a == 1 and not h.get("unavailable") and not h.get("incompatible")
print("ok" if ok else json.dumps(h))
PY
)" || health="no answer"
if [[ "$health" == ok ]]; then
    pass python-agent/registered
else
    fail python-agent/registered "healthz says $health (log: $LOGS/ddwire-serve.log)"
fi

# invoke: a message through the harness as the example token's principal; the envelope succeeded.
status=0
"$DDWIRE" invoke --harness "$(url "$p_harness")" --token example-token-do-not-deploy \
    --agent py.example --input "$examples/messages/hello.json" \
    >"$LOGS/envelope.json" 2>"$LOGS/invoke.log" || status=$?
check="$(python3 - "$LOGS/envelope.json" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))
problems = []
if env["outcome"]["status"] != "succeeded": problems.append(f"outcome {env['outcome']}")
if env["acting_for"]["name"] != "Josiah Carberry": problems.append(f"acting_for {env['acting_for']}")
if env["payload"]["reply_text"] != "4 words.": problems.append(f"payload {env['payload']}")
print("; ".join(problems) or "ok", env["invocation_id"])
PY
)" || check="unreadable envelope (see $LOGS/invoke.log)"
if [[ $status -eq 0 && "$check" == ok* ]]; then
    pass python-agent/invoke
else
    fail python-agent/invoke "exit $status: $check"
fi

# direct: called with no harness in front (ddwire check --dd, ddwire send), the agent names
# its input itself instead of failing on the harness's metadata it was not given.
status=0
"$DDWIRE" check "$(url "$p_py")" --dd --format json --out "$LOGS/check-direct.json" \
    2>"$LOGS/check-direct.log" || status=$?
direct="$(python3 - "$LOGS/check-direct.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
bad = [p for p in report["probes"] if p["status"] == "fail"]
print("ok" if not bad else "; ".join(f"{p['id']}: {p.get('detail')}" for p in bad))
PY
)" || direct="no report (see $LOGS/check-direct.log)"
if [[ $status -eq 0 && "$direct" == ok ]]; then
    pass python-agent/called-directly
else
    fail python-agent/called-directly "check --dd exit $status: $direct"
fi

# lint: the stored verdict, reproduced offline, names the agent's chat span.
id="${check##* }"
status=0
verdict="$("$DDWIRE" lint "$id" --runs "$LOGS/runs" 2>"$LOGS/lint.log")" || status=$?
if [[ $status -eq 0 && "$verdict" == "grounding: passed [input_only] (0 retrieval, 1 chat spans)" ]]; then
    pass python-agent/lint
else
    fail python-agent/lint "exit $status: $verdict $(cat "$LOGS/lint.log")"
fi

finish
