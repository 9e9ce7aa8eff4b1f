#!/usr/bin/env bash
# Instructions per echo call: the load-independent figure docs/building.md's release-profile table
# is measured with (wall-clock rates on a loaded machine are noise). Serves `ddwire agent echo`
# under valgrind's callgrind, sends N1 and then, in a second server life, N2 identical calls over
# one keep-alive connection (the load bench's request: message/send for A2A v0.3, SendMessage
# for 1.0), and prints the stripped binary's size and (Ir with N2 - Ir with N1) / (N2 - N1) for
# each binding: user-space instructions of every server thread, start-up and shut-down cancelled.
#
#   benches/echo_instructions.sh target/release/ddwire        # N1=200 N2=1200, about 1 min
#   PORT=18300 N1=100 N2=600 benches/echo_instructions.sh /path/to/ddwire
#
# Needs valgrind and python3. Binds one loopback port (PORT, default 18207).
set -euo pipefail
bin=${1:?usage: benches/echo_instructions.sh DDWIRE_BINARY}
port=${PORT:-18207}
n1=${N1:-200}
n2=${N2:-1200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/drive.py" <<'PY'
import json, socket, sys
port, n, binding = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
data = {"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": {"n": 1, "text": "ping"}}}
if binding == "0.3":
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "bench", "role": "user", "parts": [{"kind": "data", "data": data}]}}}
    headers = "Content-Type: application/json\r\n"
else:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "bench", "role": "ROLE_USER", "parts": [{"data": data}]}}}
    headers = "Content-Type: application/json\r\nA2A-Version: 1.0\r\n"
raw = json.dumps(body, separators=(",", ":")).encode()
request = (f"POST /a2a HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}"
           f"Content-Length: {len(raw)}\r\n\r\n").encode() + raw
conn = socket.create_connection(("127.0.0.1", port))
pending = b""
for _ in range(n):
    conn.sendall(request)
    while True:
        end = pending.find(b"\r\n\r\n")
        if end >= 0:
            head = pending[:end].decode()
            if not head.startswith("HTTP/1.1 200"):
                sys.exit(f"not 200: {head}")
            length = next(int(l.split(":")[1]) for l in head.split("\r\n")
                          if l.lower().startswith("content-length:"))
            if len(pending) >= end + 4 + length:
                pending = pending[end + 4 + length:]
                break
        chunk = conn.recv(65536)
        if not chunk:
            sys.exit("the server closed the connection")
        pending += chunk
PY

# One server life under callgrind with $2 calls in binding $1; prints its total Ir.
life() {
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1.$2.%p" \
        "$bin" agent echo --host 127.0.0.1 --port "$port" --quiet >"$work/log" 2>&1 &
    local server=$!
    for _ in $(seq 120); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break
        sleep 0.5
    done
    python3 "$work/drive.py" "$port" "$2" "$1"
    kill -INT "$server"
    wait "$server" || true
    cat "$work"/cg."$1"."$2".* | awk '/^summary:/ {s += $2} END {print s}'
}

line="$(basename "$bin") size=$(stat -c %s "$bin")"
for binding in 0.3 1.0; do
    low=$(life "$binding" "$n1")
    high=$(life "$binding" "$n2")
    line="$line  $binding: $(((high - low) / (n2 - n1))) Ir/call"
done
echo "$line"
