#!/usr/bin/env bash
# One A2A agent, three servers, one yardstick: requests/s and p50/p99 latency of
#   - ddwire's echo agent (`ddwire agent echo`), answering A2A v0.3 message/send;
#   - the Python a2a-sdk 0.3.26 echo agent (a2a03_echo_server.py, uvicorn, one worker), answering
#     the same message/send;
#   - nginx (one worker) serving a tiny static JSON file to GET, the floor of what an HTTP server
#     on this machine can do;
# all measured by the load generator (`cargo bench --bench load -- agent`) (closed loop, keep-alive connections) with the same
# concurrency and duration, one server at a time. See benches/README.md.
#
#   benches/agent.sh                       # CONCURRENCY=16 SECONDS=5
#   CONCURRENCY=8 SECONDS=10 benches/agent.sh
#   DDWIRE_BIN=/path/to/ddwire benches/agent.sh   # skip cargo build --release
#   DDWIRE_LOAD_BIN=/path/to/load benches/agent.sh # skip cargo bench --bench load --no-run
#
# Needs cargo (unless DDWIRE_BIN), python3 3.11 (the pinned venv of tests/interop/venv.sh a2a03,
# built from PyPI on first use), nginx (installed with apt-get if missing: nginx-light, else nginx;
# needs root or sudo) and curl. Binds loopback ports only; stops everything it started on exit.
set -euo pipefail

# SECONDS is also bash's own clock: read a value from the environment before it ticks.
bench_seconds="$(printenv SECONDS || true)"
bench_seconds="${bench_seconds:-5}"
concurrency="${CONCURRENCY:-16}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ddwire-bench-agent.XXXXXX")"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { printf '%s\n' "$*" >&2; }

if [[ -z "${DDWIRE_BIN:-}" ]]; then
    say "building ddwire (cargo build --release)..."
    (cd "$repo" && cargo build --release --quiet)
fi
ddwire="${DDWIRE_BIN:-$repo/target/release/ddwire}"
# The load generator is the `load` benchmark target (benches/load/), which `cargo bench` builds;
# it is no part of the ddwire binary. DDWIRE_LOAD_BIN names a built one instead.
load="${DDWIRE_LOAD_BIN:-}"
if [[ -z "$load" ]]; then
    echo "building the load generator (cargo bench --bench load --no-run)..." >&2
    load="$(cd "$repo" && cargo bench --bench load --no-run --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*/load-[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)"
    [[ -x "$load" ]] || { echo "cargo bench --bench load --no-run built no executable" >&2; exit 1; }
fi

nginx_bin="$(command -v nginx || true)"
[[ -n "$nginx_bin" || ! -x /usr/sbin/nginx ]] || nginx_bin=/usr/sbin/nginx
if [[ -z "$nginx_bin" ]]; then
    say "nginx is missing: installing it with apt-get (nginx-light, else nginx)..."
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo=sudo
    $sudo apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >&2 \
        || $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >&2
    nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
fi

say "preparing the a2a-sdk 0.3.26 venv (tests/interop/venv.sh a2a03)..."
venv="$(bash "$repo/tests/interop/venv.sh" a2a03)"

read -r -d '' p_ddwire p_python p_nginx < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
EOF
printf '\0') || true

# nginx: one worker, no access log, keep-alive without a request cap, a 60-byte JSON file.
mkdir -p "$work/nginx/www" "$work/nginx/tmp"
printf '{"jsonrpc":"2.0","id":1,"result":{"kind":"task","echo":true}}' >"$work/nginx/www/echo.json"
chmod 755 "$work" "$work/nginx" "$work/nginx/www"   # the worker may run as nobody
chmod 644 "$work/nginx/www/echo.json"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 65s;
    default_type application/json;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$p_nginx;
        root $work/nginx/www;
    }
}
EOF

"$ddwire" agent echo --port "$p_ddwire" --quiet >"$work/ddwire.log" 2>&1 & pids+=($!)
"$venv/bin/python" "$here/a2a03_echo_server.py" "$p_python" >"$work/python.log" 2>&1 & pids+=($!)
"$nginx_bin" -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" >"$work/nginx.log" 2>&1 & pids+=($!)

wait_http() {  # URL NAME LOG: poll until HTTP 200, 30 s at most
    local i
    for i in $(seq 300); do
        if curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    say "$2 did not come up at $1; its log:"
    cat "$3" >&2
    exit 1
}
wait_http "http://127.0.0.1:$p_ddwire/.well-known/agent-card.json" "ddwire agent echo" "$work/ddwire.log"
wait_http "http://127.0.0.1:$p_python/.well-known/agent-card.json" "the a2a-sdk server" "$work/python.log"
wait_http "http://127.0.0.1:$p_nginx/echo.json" "nginx" "$work/nginx/error.log"

# Each A2A server must answer the very request the load generator sends with a completed task;
# a JSON-RPC error would also be an HTTP 200 and be counted as a success.
request='{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"bench","role":"user","parts":[{"kind":"data","data":{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":{"n":1,"text":"ping"}}}}]}}}'
check_a2a() {  # URL NAME
    local reply
    reply="$(curl -fsS --max-time 10 -H 'Content-Type: application/json' -d "$request" "$1")"
    if ! python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; sys.exit(r["status"]["state"] != "completed")' "$reply"; then
        say "$2 did not answer message/send with a completed task: ${reply:0:400}"
        exit 1
    fi
}
check_a2a "http://127.0.0.1:$p_ddwire/a2a" "ddwire agent echo"
check_a2a "http://127.0.0.1:$p_python/" "the a2a-sdk server"

bench() {  # NAME ARGS...: run the load generator's agent benchmark, keep its one result line
    local name="$1" line
    shift
    say "measuring $name: $concurrency connections, ${bench_seconds}s (+1 s warm-up)..."
    line="$("$load" agent --concurrency "$concurrency" --seconds "$bench_seconds" "$@" 2>/dev/null | tail -n 1)"
    # "<url>  <rps> req/s  p50 <ms> ms  p99 <ms> ms  (<n> requests, <e> errors...)"
    local re='.* ([0-9]+) req/s +p50 +([0-9.]+) ms +p99 +([0-9.]+) ms +\(([0-9]+) requests, ([0-9]+) errors'
    if [[ ! "$line" =~ $re ]]; then
        say "the agent benchmark printed no result line for $name: ${line:-nothing}"
        return 1
    fi
    echo "${BASH_REMATCH[@]:1:5}"
}
r="$(bench "ddwire agent echo" --url "http://127.0.0.1:$p_ddwire/a2a")"
read -r d_rps d_p50 d_p99 d_n d_err <<<"$r"
r="$(bench "a2a-sdk 0.3.26" --url "http://127.0.0.1:$p_python/")"
read -r y_rps y_p50 y_p99 y_n y_err <<<"$r"
r="$(bench "nginx" --get --url "http://127.0.0.1:$p_nginx/echo.json")"
read -r n_rps n_p50 n_p99 n_n n_err <<<"$r"

a2a_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))')"
uvicorn_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("uvicorn"))')"
nginx_version="$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')"

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
     "Linux $(uname -r); load generator on the same machine"
echo "load: cargo bench --bench load -- agent, $concurrency keep-alive connections, closed loop, ${bench_seconds}s after 1 s warm-up"
echo
printf '%-44s %10s %9s %9s %10s %7s\n' "server" "req/s" "p50 ms" "p99 ms" "requests" "errors"
printf '%-44s %10s %9s %9s %10s %7s\n' "$("$ddwire" --version 2>/dev/null | head -n1) agent echo (message/send)" \
    "$d_rps" "$d_p50" "$d_p99" "$d_n" "$d_err"
printf '%-44s %10s %9s %9s %10s %7s\n' "a2a-sdk $a2a_version, uvicorn $uvicorn_version (message/send)" \
    "$y_rps" "$y_p50" "$y_p99" "$y_n" "$y_err"
printf '%-44s %10s %9s %9s %10s %7s\n' "nginx $nginx_version, 1 worker (GET static JSON)" \
    "$n_rps" "$n_p50" "$n_p99" "$n_n" "$n_err"
echo
ratio() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print(f"{a / b:.2f}" if b else "n/a")' "$1" "$2"; }
printf '%-44s %10s %9s %9s\n' "ratio" "req/s" "p50" "p99"
printf '%-44s %10s %9s %9s\n' "ddwire / a2a-sdk" \
    "$(ratio "$d_rps" "$y_rps")" "$(ratio "$d_p50" "$y_p50")" "$(ratio "$d_p99" "$y_p99")"
printf '%-44s %10s %9s %9s\n' "ddwire / nginx" \
    "$(ratio "$d_rps" "$n_rps")" "$(ratio "$d_p50" "$n_p50")" "$(ratio "$d_p99" "$n_p99")"
echo "(req/s ratio above 1: ddwire serves more; latency ratio below 1: ddwire answers sooner;"
echo " against nginx, 1.00 would be as fast as serving a static file)"
if [[ $((d_err + y_err + n_err)) -ne 0 ]]; then
    say "some requests failed (errors column): the figures above are suspect"
    exit 1
fi
