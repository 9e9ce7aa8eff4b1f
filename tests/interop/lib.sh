# Helpers for interop suites; sourced by tests/interop/<suite>/suite.sh (bash, set -euo pipefail).
#
# A suite prints one line per test on stdout, `PASS <suite>/<name>` or
# `FAIL <suite>/<name>: <reason>`, keeps its details in $LOGS (target/interop-logs/<suite>/),
# and exits non-zero if any test failed. Servers started with `start_server` are killed when
# the suite exits.
#
# Provided: $REPO, $INTEROP (tests/interop), $SUITE, $LOGS, $DDWIRE (the ddwire binary),
#   free_ports N          print N distinct free loopback ports, one a line
#   start_server NAME CMD...   start CMD in the background (log: $LOGS/NAME.log)
#   wait_ready NAME URL [SECONDS [CA_FILE [CERT KEY]]]   poll URL until HTTP 200 (fails early if the
#                         server died); an https URL is verified with CA_FILE's CA (and presents
#                         the client certificate CERT/KEY) when given; CA_FILE `-` verifies
#                         nothing (for servers whose certificate is bad on purpose)
#   run_test NAME CMD...  run a test program; pass its PASS/FAIL lines on, prefixed with $SUITE/
#   pass NAME / fail NAME REASON   print a result line yourself
#   finish                exit 1 if any test of this suite failed, else 0

INTEROP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$INTEROP/../.." && pwd)"
SUITE="${SUITE:?set SUITE before sourcing lib.sh}"
LOGS="${DDWIRE_INTEROP_LOGS:-$REPO/target/interop-logs}/$SUITE"
DDWIRE="${DDWIRE_BIN:-$REPO/target/release/ddwire}"
TEST_TIMEOUT="${DDWIRE_INTEROP_TEST_TIMEOUT:-120}"
rm -rf "$LOGS"
mkdir -p "$LOGS"

_failures=0
declare -A _pids=()

_stop_servers() {
    local name
    for name in "${!_pids[@]}"; do
        kill "${_pids[$name]}" 2>/dev/null || true
    done
    for name in "${!_pids[@]}"; do
        wait "${_pids[$name]}" 2>/dev/null || true
    done
    _pids=()
}
trap _stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass() { printf 'PASS %s/%s\n' "$SUITE" "$1"; }

fail() {
    _failures=$((_failures + 1))
    printf 'FAIL %s/%s: %s\n' "$SUITE" "$1" "$2"
}

free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print("\n".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

start_server() {
    local name="$1"
    shift
    "$@" >"$LOGS/$name.log" 2>&1 &
    _pids[$name]=$!
}

wait_ready() {
    local name="$1" url="$2" seconds="${3:-60}"
    if python3 - "$url" "${_pids[$name]}" "$seconds" "${@:4}" <<'EOF'
import os, ssl, sys, time, urllib.request
url, pid, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
context = None
if len(sys.argv) > 4:  # CA_FILE [CERT KEY]
    if sys.argv[4] == "-":
        context = ssl._create_unverified_context()
    else:
        context = ssl.create_default_context(cafile=sys.argv[4])
    if len(sys.argv) > 6:
        context.load_cert_chain(sys.argv[5], sys.argv[6])
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    try:  # a server that exited is gone or a zombie (its parent, the suite, has not waited yet)
        alive = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        alive = False
    if not alive:
        sys.exit("the server exited before it was ready")
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as r:
            if r.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(f"not ready after {seconds:g}s")
EOF
    then
        return 0
    fi
    fail "$name/ready" "$url did not answer 200 (log: $LOGS/$name.log; last line: $(tail -n 1 "$LOGS/$name.log" 2>/dev/null))"
    return 1
}

run_test() {
    local name="$1"
    shift
    local log="$LOGS/$name.log" status=0
    timeout "$TEST_TIMEOUT" "$@" >"$log" 2>&1 || status=$?
    local lines
    lines="$(grep -E '^(PASS|FAIL) ' "$log" || true)"
    if [[ -n "$lines" ]]; then
        sed -E "s#^(PASS|FAIL) #\1 $SUITE/#" <<<"$lines"
        _failures=$((_failures + $(grep -c '^FAIL ' <<<"$lines" || true)))
    fi
    if [[ $status -ne 0 ]] && ! grep -q '^FAIL ' <<<"$lines"; then
        local why="exited $status"
        [[ $status -eq 124 ]] && why="timed out after ${TEST_TIMEOUT}s"
        fail "$name" "$why (log: $log; last line: $(grep -v -E '^(PASS|FAIL) ' "$log" | tail -n 1))"
    fi
    if [[ $status -ne 0 ]]; then
        echo "  (details: $log)"
    fi
    return 0
}

finish() {
    [[ $_failures -eq 0 ]]
}
