#!/usr/bin/env bash
# One A2A agent, its floors and its rival: requests/s and p50/p99 latency of
#   - ddwire's echo agent (`ddwire agent echo`), answering A2A v0.3 message/send;
#   - nginx (one worker, keep-alive without a request cap, no access log) answering the same
#     POST with `return 200` and a JSON body as long as ddwire's reply (nginx-post), the floor of
#     what an HTTP server on this machine can do for the same bytes in and out;
#   - the same nginx serving a tiny static JSON file to GET (nginx-static);
#   - the Python a2a-sdk 0.3.26 echo agent (a2a03_echo_server.py, uvicorn, one worker), answering
#     the same message/send;
#   - with DDWIRE_BASE_BIN, a second ddwire binary (main's, say), so a change is measured as a
#     ratio in the same run;
# all measured by the load generator (`cargo bench --bench load -- agent`) (closed loop,
# keep-alive connections) at CONCURRENCY connections and at one, in ROUNDS rounds (default 3)
# in which the servers take turns, the order reversed every other round, so drift on the machine
# falls on all alike. Ratios (ddwire / nginx-post, / nginx-static, / a2a-sdk, / base) are taken
# within each round and their median printed. See benches/README.md.
#
#   benches/agent.sh                       # CONCURRENCY=16 SECONDS=5 ROUNDS=3, about 4 min
#   CONCURRENCY=8 SECONDS=10 ROUNDS=5 benches/agent.sh
#   DDWIRE_BIN=/path/to/ddwire benches/agent.sh   # skip cargo build --release
#   DDWIRE_BASE_BIN=/path/to/main/ddwire benches/agent.sh   # and measure main's alongside
#   DDWIRE_LOAD_BIN=/path/to/load benches/agent.sh # skip cargo bench --bench load --no-run
#
# Needs cargo (unless DDWIRE_BIN), python3 3.11 (the pinned venv of tests/interop/venv.sh a2a03,
# built from PyPI on first use), nginx (installed with apt-get if missing: nginx-light, else nginx;
# needs root or sudo) and curl. Binds loopback ports only; stops everything it started on exit.
#
# --tls: ddwire's echo agent over TLS (`--tls-cert`/`--tls-key`, the test PKI of fixtures/tls/:
# ECDSA P-256, chain leaf+CA for localhost/127.0.0.1) against nginx over TLS with the same
# certificate and key (one worker, keep-alive without a request cap, no access log, TLS 1.2-1.3)
# answering the same POST with `return 200` of a JSON body as long as ddwire's reply. Both are
# driven by wrk over https (the load generator speaks no TLS) with the same message/send POST
# (benches/wrk-post.lua), CONCURRENCY connections, SECONDS per measurement after 1 s of warm-up,
# in ROUNDS rounds (default 3) that alternate the order (ddwire, nginx; nginx, ddwire; ...) so
# drift on the machine cancels. Measured twice: keep-alive, then a new connection (and TLS
# handshake) per request (wrk -H 'Connection: close'); the difference, per request, is the
# handshake's cost, as wall time (1 / throughput) and as the server's own CPU time.
# Session resumption is made equal on both sides: wrk (OpenSSL) resumes a session on every
# reconnect when the server offers one, so nginx offers resumption exactly when ddwire does
# (probed with openssl s_client), and the script prints which kind of handshake was measured,
# checked against nginx's $ssl_session_reused and, as root, against the ServerHellos on lo.
#
#   benches/agent.sh --tls                 # CONCURRENCY=16 SECONDS=5 ROUNDS=3, about 90 s
#   DDWIRE_BIN=/path/to/ddwire ROUNDS=5 SECONDS=10 WRK_THREADS=2 benches/agent.sh --tls
#
# --tls needs wrk (installed with apt-get if missing), nginx, curl and openssl; not the load
# generator, python's venv or the a2a-sdk server.
set -euo pipefail

# The nginx configuration both floors share, up to the server blocks (which follow it and close
# the http block): one worker, no access log, keep-alive without a request cap, every temporary
# path under $work.
nginx_http_head() {
    cat <<EOF
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
EOF
}

mode=plain
case "${1:-}" in
    "") ;;
    --tls) mode=tls ;;
    -h | --help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: benches/agent.sh [--tls]   (see the comment at its top)" >&2; exit 2 ;;
esac

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

# The A2A v0.3 message/send both modes send (the load generator sends the same one).
request='{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"bench","role":"user","parts":[{"kind":"data","data":{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":{"n":1,"text":"ping"}}}}]}}}'

if [[ -z "${DDWIRE_BIN:-}" ]]; then
    say "building ddwire (cargo build --release)..."
    (cd "$repo" && cargo build --release --quiet)
fi
ddwire="${DDWIRE_BIN:-$repo/target/release/ddwire}"

find_nginx() {  # sets nginx_bin, installing nginx if missing
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
}

if [[ "$mode" == tls ]]; then
    rounds="${ROUNDS:-3}"
    wrk_threads="${WRK_THREADS:-1}"
    ca="$repo/fixtures/tls/ca.pem"

    wrk_bin="$(command -v wrk || true)"
    if [[ -z "$wrk_bin" ]]; then
        say "wrk is missing: installing it with apt-get..."
        sudo=""
        [[ $(id -u) -eq 0 ]] || sudo=sudo
        $sudo apt-get update -qq >&2
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >&2
        wrk_bin="$(command -v wrk)"
    fi
    find_nginx

    # The key must be readable by its owner only (ddwire refuses it otherwise), and git keeps no
    # modes: serve a copy from the bench's own directory.
    mkdir -p "$work/tls"
    cp "$repo/fixtures/tls/server.pem" "$repo/fixtures/tls/server.key" "$work/tls/"
    chmod 600 "$work/tls/server.key"
    printf '%s' "$request" >"$work/request.json"

    # ddwire; nginx offering session resumption (its default: TLS 1.3 tickets); nginx offering
    # none; nginx as the first, logging whether each handshake was resumed (for the wrk probe).
    read -r -d '' p_ddwire p_resume p_full p_probe < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
EOF
    printf '\0') || true

    "$ddwire" agent echo --port "$p_ddwire" --tls-cert "$work/tls/server.pem" \
        --tls-key "$work/tls/server.key" --quiet >"$work/ddwire.log" 2>&1 &
    pids+=($!)
    ddwire_pid=$!
    for i in $(seq 300); do
        curl -fsS -o /dev/null --max-time 2 --cacert "$ca" \
            "https://127.0.0.1:$p_ddwire/.well-known/agent-card.json" 2>/dev/null && break
        if [[ $i -eq 300 ]] || ! kill -0 "$ddwire_pid" 2>/dev/null; then
            say "ddwire agent echo --tls-cert did not come up at https://127.0.0.1:$p_ddwire; its log:"
            cat "$work/ddwire.log" >&2
            exit 1
        fi
        sleep 0.1
    done

    # ddwire's answer to the very POST wrk sends: a completed task; its body's size is the size
    # of nginx's answer, so both servers encrypt and send the same number of bytes.
    reply="$(curl -fsS --max-time 10 --cacert "$ca" -H 'Content-Type: application/json' \
        -d "$request" "https://127.0.0.1:$p_ddwire/a2a")"
    if ! python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; sys.exit(r["status"]["state"] != "completed")' "$reply"; then
        say "ddwire agent echo did not answer message/send over TLS with a completed task: ${reply:0:400}"
        exit 1
    fi
    reply_bytes="$(printf '%s' "$reply" | wc -c)"
    # A JSON body of exactly reply_bytes bytes, with nothing nginx would read as a variable.
    nginx_body="$(python3 -c '
import sys
n = int(sys.argv[1])
head, tail = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\",\"status\":{\"state\":\"completed\"},\"pad\":\"", "\"}}"
print(head + "x" * max(0, n - len(head) - len(tail)) + tail)' "$reply_bytes")"

    # nginx: one worker, no access log, keep-alive without a request cap. Debian's 1.22 speaks
    # TLS 1.0-1.2 unless told otherwise (TLS 1.3 joined the default in 1.23.4): without
    # ssl_protocols it would be TLS 1.2 against ddwire's 1.3.
    mkdir -p "$work/nginx/tmp"
    chmod 755 "$work" "$work/nginx"
    nginx_site() {  # PORT EXTRA: one server block answering POST /a2a like ddwire
        printf '    server {\n        listen 127.0.0.1:%s ssl;\n%s        location = /a2a { return 200 '"'"'%s'"'"'; }\n    }\n' \
            "$1" "$2" "$nginx_body"
    }
    { nginx_http_head; cat <<EOF
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $work/tls/server.pem;
    ssl_certificate_key $work/tls/server.key;
    log_format resumed '\$ssl_session_reused';
$(nginx_site "$p_resume" "")
$(nginx_site "$p_full" "        ssl_session_tickets off;
        ssl_session_cache off;
")
$(nginx_site "$p_probe" "        access_log $work/nginx/resumed.log resumed;
")
}
EOF
} >"$work/nginx/nginx.conf"
    "$nginx_bin" -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" >"$work/nginx.log" 2>&1 &
    pids+=($!)
    nginx_pid=$!
    for p in "$p_resume" "$p_full" "$p_probe"; do
        for i in $(seq 300); do
            curl -fsS -o /dev/null --max-time 2 --cacert "$ca" -d "$request" "https://127.0.0.1:$p/a2a" 2>/dev/null && break
            if [[ $i -eq 300 ]] || ! kill -0 "$nginx_pid" 2>/dev/null; then
                say "nginx did not come up at https://127.0.0.1:$p; its logs:"
                cat "$work/nginx.log" "$work/nginx/error.log" >&2
                exit 1
            fi
            sleep 0.1
        done
    done

    # With 'Connection: close' wrk opens a new connection only when the answer says
    # 'Connection: close' (it reads the answer's header, not the socket): a server that ignored the
    # request's header would be measured on keep-alive again, silently.
    for p in "$p_ddwire" "$p_resume"; do
        if ! curl -fsS --max-time 10 --cacert "$ca" -H 'Content-Type: application/json' \
            -H 'Connection: close' -d "$request" -D - -o /dev/null "https://127.0.0.1:$p/a2a" \
            | tr -d '\r' | grep -qi '^connection: *close$'; then
            say "the server at port $p answered 'Connection: close' without 'Connection: close'"
            exit 1
        fi
    done
    head_bytes() {  # PORT: the size of the answer's status line and header fields
        curl -fsS --max-time 10 --cacert "$ca" -H 'Content-Type: application/json' -d "$request" \
            -o /dev/null -w '%{size_header}' "https://127.0.0.1:$1/a2a"
    }
    d_head="$(head_bytes "$p_ddwire")"
    n_head="$(head_bytes "$p_resume")"
    n_bytes="$(curl -fsS --max-time 10 --cacert "$ca" -d "$request" "https://127.0.0.1:$p_resume/a2a" | wc -c)"

    # What each server negotiates with OpenSSL's default client (wrk's), and whether it resumes a
    # session: the first connection saves the session (and its TLS 1.3 tickets, sent after the
    # handshake, hence a full request and -ign_eof), the second offers it back.
    tls_probe() {  # PORT PATH: "<version> <cipher> <key exchange> <signature> <New|Reused>"
        local port="$1" path="$2" out again
        local get="GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        out="$(printf "$get" | timeout 10 openssl s_client -connect "127.0.0.1:$port" \
            -servername localhost -CAfile "$ca" -ign_eof -sess_out "$work/tls/$port.session" 2>&1)" || true
        again="$(printf "$get" | timeout 10 openssl s_client -connect "127.0.0.1:$port" \
            -servername localhost -CAfile "$ca" -ign_eof -sess_in "$work/tls/$port.session" 2>&1)" || true
        python3 - "$out" "$again" <<'EOF'
import re, sys
out, again = sys.argv[1:]
def find(pattern, text, default="?"):
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else default
version = find(r"^New, (TLSv[\d.]+), Cipher is", out)
cipher = find(r"^New, TLSv[\d.]+, Cipher is (\S+)", out)
kx = find(r"^(?:Server|Peer) Temp Key: ([^,\s]+)", out)
sig = find(r"^Peer signature type: (\S+)", out)
if find(r"^Verify return code: (\d+)", out) != "0":
    sig += "(unverified)"
print(version, cipher, kx, sig, find(r"^(New|Reused), ", again, "none"))
EOF
    }
    read -r d_ver d_cipher d_kx d_sig d_resumed <<<"$(tls_probe "$p_ddwire" /.well-known/agent-card.json)"
    read -r n_ver n_cipher n_kx n_sig n_resumed <<<"$(tls_probe "$p_resume" /a2a)"
    read -r _ _ _ _ f_resumed <<<"$(tls_probe "$p_full" /a2a)"
    if [[ "$n_resumed" != Reused || "$f_resumed" != New ]]; then
        say "nginx's two TLS sites did not behave as configured (resumed: $n_resumed, not: $f_resumed)"
        exit 1
    fi
    if [[ "$d_ver $d_cipher $d_kx $d_sig" != "$n_ver $n_cipher $n_kx $n_sig" ]]; then
        say "note: ddwire and nginx negotiate differently with OpenSSL's client:" \
            "ddwire $d_ver $d_cipher $d_kx $d_sig, nginx $n_ver $n_cipher $n_kx $n_sig"
    fi

    # Session resumption. wrk 4.1 makes one SSL object per connection slot and, on reconnecting,
    # calls SSL_shutdown then SSL_clear, which keeps the session: every new connection after a
    # slot's first offers the last session (TLS 1.2: ticket; TLS 1.3: PSK from the last
    # NewSessionTicket, with a fresh X25519 share, psk_dhe_ke), and a server that accepts it skips
    # the certificate and its signature. Its OpenSSL configuration cannot turn that off for
    # TLS 1.3 (Options = -SessionTicket changes TLS 1.2 only). So, to compare like with like, nginx
    # is measured on the site that resumes when ddwire resumes, and on the one that offers no
    # resumption (no tickets, no cache: every handshake full) when ddwire does not. The probe
    # below checks wrk's side against nginx's log of $ssl_session_reused.
    : >"$work/nginx/resumed.log"
    WRK_BODY="$work/request.json" "$wrk_bin" -t 1 -c 2 -d 1s -H 'Connection: close' \
        -s "$here/wrk-post.lua" "https://127.0.0.1:$p_probe/a2a" >/dev/null 2>&1 || true
    wrk_handshakes="$(wc -l <"$work/nginx/resumed.log")"
    wrk_resumed="$(grep -c '^r' "$work/nginx/resumed.log" || true)"
    if [[ "$d_resumed" == Reused ]]; then
        p_nginx="$p_resume"
        handshake_kind="resumed (PSK with a fresh X25519 share; no certificate): both servers accept"
        handshake_kind+=" a session back, and wrk offers one on every reconnect"
    else
        p_nginx="$p_full"
        handshake_kind="full (certificate, ECDSA signature, X25519): ddwire resumed no session"
        handshake_kind+=" (openssl s_client: $d_resumed), so nginx is measured with resumption off"
    fi
    resumption_check="wrk resumed $wrk_resumed of $wrk_handshakes handshakes on nginx's logging site"
    # As root, check the same on the wire for the two sites measured: during a second of wrk with
    # a new connection per request, count the ServerHellos (in clear even in TLS 1.3) that carry
    # pre_shared_key, i.e. accept the session wrk offered.
    wire_resumed() {  # PORT: "<resumed> <full>" ServerHellos from 127.0.0.1:PORT on lo
        local sniff_out="$work/sniff.$1" sniffer
        python3 - "$1" 2.5 >"$sniff_out" <<'EOF' &
import socket, struct, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))  # ETH_P_ALL
s.bind(("lo", 0))
s.settimeout(0.2)
end, resumed, full = time.time() + secs, 0, 0
while time.time() < end:
    try:
        pkt, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    ip = pkt[14:]
    if addr[2] == socket.PACKET_OUTGOING or ip[0] >> 4 != 4 or ip[9] != 6:
        continue  # lo shows every packet twice; IPv4 TCP only
    tcp = ip[(ip[0] & 15) * 4:]
    if struct.unpack("!H", tcp[:2])[0] != port:
        continue
    h = tcp[(tcp[12] >> 4) * 4:][5:]  # past the TLS record header
    if len(h) < 40 or tcp[(tcp[12] >> 4) * 4] != 0x16 or h[0] != 0x02:
        continue  # not a handshake record starting with ServerHello
    i = 4 + 2 + 32
    i += 1 + h[i] + 2 + 1  # session id, cipher suite, compression
    end_e = i + 2 + struct.unpack("!H", h[i:i + 2])[0]
    i += 2
    types = []
    while i + 4 <= end_e:
        t, n = struct.unpack("!HH", h[i:i + 4])
        types.append(t)
        i += 4 + n
    resumed, full = (resumed + 1, full) if 41 in types else (resumed, full + 1)
print(resumed, full)
EOF
        sniffer=$!
        sleep 0.5
        WRK_BODY="$work/request.json" "$wrk_bin" -t 1 -c 2 -d 1s -H 'Connection: close' \
            -s "$here/wrk-post.lua" "https://127.0.0.1:$1/a2a" >/dev/null 2>&1 || true
        wait "$sniffer" || true
        cat "$sniff_out"
    }
    if [[ $(id -u) -eq 0 ]]; then
        read -r dw_resumed dw_full <<<"$(wire_resumed "$p_ddwire")"
        read -r nw_resumed nw_full <<<"$(wire_resumed "$p_nginx")"
        resumption_check+="; on the wire, ServerHellos accepting wrk's session: ddwire"
        resumption_check+=" ${dw_resumed:-?} of $((${dw_resumed:-0} + ${dw_full:-0})), nginx (measured site)"
        resumption_check+=" ${nw_resumed:-?} of $((${nw_resumed:-0} + ${nw_full:-0}))"
        # Either both mostly resume or both mostly do not (each connection's first is always full).
        if (((${dw_resumed:-0} * 2 > ${dw_full:-0}) != (${nw_resumed:-0} * 2 > ${nw_full:-0}))); then
            say "wrk's handshakes are not of one kind on both servers: $resumption_check"
            exit 1
        fi
    fi

    cpu_ticks() {  # PID...: user+system clock ticks of these processes (all threads) and their children
        local p c s t=0
        local -a f
        for p in "$@"; do
            for c in "$p" $(ps -o pid= --ppid "$p" 2>/dev/null); do
                s="$(cat "/proc/$c/stat" 2>/dev/null)" || continue
                read -r -a f <<<"${s##*) }"
                t=$((t + f[11] + f[12]))
            done
        done
        echo "$t"
    }
    measure() {  # SERVER MODE ROUND URL PID: one wrk run after 1 s of warm-up, appended to results
        local server="$1" kind="$2" round="$3" url="$4" pid="$5" out line t0 t1
        local -a extra=()
        [[ "$kind" == keepalive ]] || extra=(-H 'Connection: close')
        say "round $round: $server, $kind: $concurrency connections, ${bench_seconds}s (+1 s warm-up)..."
        WRK_BODY="$work/request.json" "$wrk_bin" -t "$wrk_threads" -c "$concurrency" -d 1s \
            "${extra[@]}" -s "$here/wrk-post.lua" "$url" >/dev/null 2>&1 || true
        t0="$(cpu_ticks "$pid")"
        out="$(WRK_BODY="$work/request.json" "$wrk_bin" -t "$wrk_threads" -c "$concurrency" \
            -d "${bench_seconds}s" "${extra[@]}" -s "$here/wrk-post.lua" "$url" 2>&1)" || true
        t1="$(cpu_ticks "$pid")"
        line="$(grep '^wrk-result ' <<<"$out" | tail -n 1)"
        if [[ -z "$line" ]]; then
            say "wrk printed no result for $server ($kind): $out"
            exit 1
        fi
        echo "$server $kind $round ${line#wrk-result } $((t1 - t0))" >>"$work/results"
    }
    : >"$work/results"
    for round in $(seq "$rounds"); do
        if ((round % 2)); then order=(ddwire nginx); else order=(nginx ddwire); fi
        for kind in keepalive close; do
            for server in "${order[@]}"; do
                if [[ "$server" == ddwire ]]; then
                    measure ddwire "$kind" "$round" "https://127.0.0.1:$p_ddwire/a2a" "$ddwire_pid"
                else
                    measure nginx "$kind" "$round" "https://127.0.0.1:$p_nginx/a2a" "$nginx_pid"
                fi
            done
        done
    done

    nginx_version="$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')"
    echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
         "Linux $(uname -r); wrk on the same machine"
    echo "servers: $("$ddwire" --version 2>/dev/null | head -n1) agent echo --tls-cert (message/send);" \
         "nginx $nginx_version, 1 worker, return 200 (same POST)"
    echo "load: $("$wrk_bin" -v 2>&1 | head -n1 | cut -d' ' -f1-2), $(openssl version | cut -d' ' -f1-2);" \
         "$concurrency connections, $wrk_threads thread(s), ${bench_seconds}s per measurement after 1 s warm-up," \
         "$rounds rounds alternating the order"
    echo "TLS: ddwire $d_ver $d_cipher $d_kx $d_sig; nginx $n_ver $n_cipher $n_kx $n_sig; certificate" \
         "fixtures/tls/server.pem (ECDSA P-256, leaf+CA) for both"
    echo "answers: ddwire $reply_bytes body bytes + $d_head header bytes; nginx $n_bytes + $n_head"
    echo "new-connection handshakes: $handshake_kind"
    echo "resumption check: $resumption_check"
    echo
    python3 - "$work/results" "$(getconf CLK_TCK)" "$concurrency" <<'EOF'
import statistics, sys
path, tck, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [l.split() for l in open(path) if l.strip()]
# server kind round requests duration_us connect read write status timeout mean_us p50_us p99_us ticks
runs = {}
for r in rows:
    server, kind, rnd = r[0], r[1], int(r[2])
    req, dur = int(r[3]), int(r[4])
    runs[(server, kind, rnd)] = dict(req=req, sec=dur / 1e6, err=sum(map(int, r[5:10])),
                                     p50=float(r[11]), p99=float(r[12]), ticks=int(r[13]))
rounds = sorted({k[2] for k in runs})
kinds = [("keepalive", "keep-alive"), ("close", "new connection per request")]
rps = lambda x: x["req"] / x["sec"] if x["sec"] else 0.0
def fmt(n): return f"{n:,.0f}"

print("per round (the order alternates: ddwire first in odd rounds, nginx first in even ones)")
print(f"{'':28} {'round':>5} {'ddwire req/s':>13} {'nginx req/s':>12} {'ddwire/nginx':>13}")
ratios = {}
for kind, label in kinds:
    for rnd in rounds:
        d, n = runs[("ddwire", kind, rnd)], runs[("nginx", kind, rnd)]
        ratio = rps(d) / rps(n) if rps(n) else 0.0
        ratios.setdefault(kind, []).append(ratio)
        print(f"{label:28} {rnd:>5} {fmt(rps(d)):>13} {fmt(rps(n)):>12} {ratio:>12.1%}")
print()

agg = {}
for server in ("ddwire", "nginx"):
    for kind, _ in kinds:
        xs = [runs[(server, kind, rnd)] for rnd in rounds]
        req, sec = sum(x["req"] for x in xs), sum(x["sec"] for x in xs)
        agg[(server, kind)] = dict(
            rps=req / sec if sec else 0.0, req=req, err=sum(x["err"] for x in xs),
            p50=statistics.median(x["p50"] for x in xs) / 1000,
            p99=statistics.median(x["p99"] for x in xs) / 1000,
            us=sec / req * 1e6 if req else 0.0,
            cpu=sum(x["ticks"] for x in xs) / tck / req * 1e6 if req else 0.0)

print(f"summary, all rounds ({len(rounds)} x each)")
print(f"{'server':40} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'us/req':>7} {'CPU us/req':>10} {'requests':>9} {'errors':>6}")
for kind, label in kinds:
    for server in ("ddwire", "nginx"):
        a = agg[(server, kind)]
        print(f"{server + ', ' + label:40} {fmt(a['rps']):>9} {a['p50']:>7.3f} {a['p99']:>7.3f} "
              f"{a['us']:>7.1f} {a['cpu']:>10.1f} {a['req']:>9,} {a['err']:>6}")
print()
for kind, label in kinds:
    d, n = agg[("ddwire", kind)], agg[("nginx", kind)]
    rs = ratios[kind]
    goal = " (target: at least 50%)" if kind == "keepalive" else ""
    print(f"ddwire / nginx, {label}: {d['rps'] / n['rps']:.1%} of the requests/s{goal}; "
          f"rounds {min(rs):.1%} to {max(rs):.1%}; server CPU per request "
          f"{d['cpu'] / n['cpu']:.2f}x nginx's")
print()
print(f"{'handshake cost (new connection - keep-alive)':46} {'us/req':>9} {'server CPU us/req':>18}")
for server in ("ddwire", "nginx"):
    k, c = agg[(server, "keepalive")], agg[(server, "close")]
    print(f"{server:46} {c['us'] - k['us']:>9.1f} {c['cpu'] - k['cpu']:>18.1f}")
print()
print("us/req: 1 / throughput, the loaded machine's wall time per request (at", conc, "connections:")
print(f"  each connection waits {conc} times that); CPU us/req: the server process's own user+system")
print("  time per request (ddwire: all its threads; nginx: master and worker). With a new connection")
print("  per request wrk's own handshakes (OpenSSL) take a core and can bound both servers' req/s:")
print("  the server CPU column is then the cost to read. p50/p99: wrk's latency, the median of the")
print("  rounds; it starts once the request is written, so it excludes connect and handshake.")
EOF
    if [[ "$(awk '{ e += $6 + $7 + $8 + $9 + $10 } END { print e + 0 }' "$work/results")" -ne 0 ]]; then
        say "some requests failed (errors column): the figures above are suspect"
        exit 1
    fi
    exit 0
fi
# The load generator is the `load` benchmark target (benches/load/), which `cargo bench` builds;
# it is no part of the ddwire binary. DDWIRE_LOAD_BIN names a built one instead.
load="${DDWIRE_LOAD_BIN:-}"
if [[ -z "$load" ]]; then
    echo "building the load generator (cargo bench --bench load --no-run)..." >&2
    load="$(cd "$repo" && cargo bench --bench load --no-run --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*/load-[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)"
    [[ -x "$load" ]] || { echo "cargo bench --bench load --no-run built no executable" >&2; exit 1; }
fi

find_nginx

say "preparing the a2a-sdk 0.3.26 venv (tests/interop/venv.sh a2a03)..."
venv="$(bash "$repo/tests/interop/venv.sh" a2a03)"
rounds="${ROUNDS:-3}"
base="${DDWIRE_BASE_BIN:-}"

read -r -d '' p_ddwire p_python p_nginx p_base < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
EOF
printf '\0') || true

"$ddwire" agent echo --port "$p_ddwire" --quiet >"$work/ddwire.log" 2>&1 & pids+=($!)
ddwire_pid=$!
"$venv/bin/python" "$here/a2a03_echo_server.py" "$p_python" >"$work/python.log" 2>&1 & pids+=($!)
python_pid=$!
base_pid=""
if [[ -n "$base" ]]; then
    "$base" agent echo --port "$p_base" --quiet >"$work/base.log" 2>&1 & pids+=($!)
    base_pid=$!
fi

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
[[ -z "$base" ]] || wait_http "http://127.0.0.1:$p_base/.well-known/agent-card.json" "DDWIRE_BASE_BIN agent echo" "$work/base.log"

# Each A2A server must answer the very request the load generator sends with a completed task;
# a JSON-RPC error would also be an HTTP 200 and be counted as a success.
check_a2a() {  # URL NAME: prints the reply
    local reply
    reply="$(curl -fsS --max-time 10 -H 'Content-Type: application/json' -d "$request" "$1")"
    if ! python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; sys.exit(r["status"]["state"] != "completed")' "$reply"; then
        say "$2 did not answer message/send with a completed task: ${reply:0:400}"
        exit 1
    fi
    printf '%s' "$reply"
}
reply="$(check_a2a "http://127.0.0.1:$p_ddwire/a2a" "ddwire agent echo")"
check_a2a "http://127.0.0.1:$p_python/" "the a2a-sdk server" >/dev/null
[[ -z "$base" ]] || check_a2a "http://127.0.0.1:$p_base/a2a" "DDWIRE_BASE_BIN agent echo" >/dev/null
reply_bytes="$(printf '%s' "$reply" | wc -c)"
# nginx's answer to the same POST: `return 200` with a JSON body exactly as long as ddwire's
# reply, with nothing nginx would read as a variable, so both send the same number of bytes.
nginx_body="$(python3 -c '
import sys
n = int(sys.argv[1])
head, tail = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\",\"status\":{\"state\":\"completed\"},\"pad\":\"", "\"}}"
print(head + "x" * max(0, n - len(head) - len(tail)) + tail)' "$reply_bytes")"

# nginx: one worker, no access log, keep-alive without a request cap; POST /a2a answered with
# `return 200` and the body above, GET /echo.json a 60-byte static JSON file.
mkdir -p "$work/nginx/www" "$work/nginx/tmp"
printf '{"jsonrpc":"2.0","id":1,"result":{"kind":"task","echo":true}}' >"$work/nginx/www/echo.json"
chmod 755 "$work" "$work/nginx" "$work/nginx/www"   # the worker may run as nobody
chmod 644 "$work/nginx/www/echo.json"
{ nginx_http_head; cat <<EOF
    server {
        listen 127.0.0.1:$p_nginx;
        root $work/nginx/www;
        location = /a2a { return 200 '$nginx_body'; }
    }
}
EOF
} >"$work/nginx/nginx.conf"
"$nginx_bin" -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" >"$work/nginx.log" 2>&1 & pids+=($!)
nginx_pid=$!
wait_http "http://127.0.0.1:$p_nginx/echo.json" "nginx" "$work/nginx/error.log"
n_bytes="$(curl -fsS --max-time 10 -H 'Content-Type: application/json' -d "$request" "http://127.0.0.1:$p_nginx/a2a" | wc -c)"

cpu_ticks() {  # PID: user+system clock ticks of the process (all threads) and its children
    local c s t=0
    local -a f
    for c in "$1" $(ps -o pid= --ppid "$1" 2>/dev/null); do
        s="$(cat "/proc/$c/stat" 2>/dev/null)" || continue
        read -r -a f <<<"${s##*) }"
        t=$((t + f[11] + f[12]))
    done
    echo "$t"
}
bench() {  # NAME CONNECTIONS PID ARGS...: one load-generator run; prints
    # "rps p50 p99 requests errors server-ticks" (the server's CPU over the whole run, warm-up
    # included: the generator counts its requests after the warm-up)
    local name="$1" conns="$2" pid="$3" line t0 t1
    shift 3
    say "measuring $name: $conns connection(s), ${bench_seconds}s (+1 s warm-up)..."
    t0="$(cpu_ticks "$pid")"
    line="$("$load" agent --concurrency "$conns" --seconds "$bench_seconds" "$@" 2>/dev/null | tail -n 1)"
    t1="$(cpu_ticks "$pid")"
    # "<url>  <rps> req/s  p50 <ms> ms  p99 <ms> ms  (<n> requests, <e> errors...)"
    local re='.* ([0-9]+) req/s +p50 +([0-9.]+) ms +p99 +([0-9.]+) ms +\(([0-9]+) requests, ([0-9]+) errors'
    if [[ ! "$line" =~ $re ]]; then
        say "the agent benchmark printed no result line for $name: ${line:-nothing}"
        exit 1
    fi
    echo "${BASH_REMATCH[@]:1:5} $((t1 - t0))"
}
# The servers take turns within each round, the order reversed every other round, so drift on
# the machine (a build next door) falls on all of them alike; each is measured at CONCURRENCY
# connections and at one.
servers=(ddwire nginx-post nginx-static a2a-sdk)
[[ -z "$base" ]] || servers=(ddwire base nginx-post nginx-static a2a-sdk)
: >"$work/results"
for round in $(seq "$rounds"); do
    order=("${servers[@]}")
    if ((round % 2 == 0)); then
        order=()
        for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[$i]}"); done
    fi
    for conns in "$concurrency" 1; do
        for server in "${order[@]}"; do
            case "$server" in
                ddwire) pid=$ddwire_pid args=(--url "http://127.0.0.1:$p_ddwire/a2a") ;;
                base) pid=$base_pid args=(--url "http://127.0.0.1:$p_base/a2a") ;;
                nginx-post) pid=$nginx_pid args=(--url "http://127.0.0.1:$p_nginx/a2a") ;;
                nginx-static) pid=$nginx_pid args=(--get --url "http://127.0.0.1:$p_nginx/echo.json") ;;
                a2a-sdk) pid=$python_pid args=(--url "http://127.0.0.1:$p_python/") ;;
            esac
            r="$(bench "$server (round $round)" "$conns" "$pid" "${args[@]}")"
            echo "$server $conns $round $r" >>"$work/results"
        done
    done
done

a2a_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))')"
uvicorn_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("uvicorn"))')"
nginx_version="$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')"

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
     "Linux $(uname -r); load generator on the same machine; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load: cargo bench --bench load -- agent, keep-alive connections, closed loop, ${bench_seconds}s" \
     "after 1 s warm-up, $rounds rounds alternating the order"
echo "servers: ddwire = $("$ddwire" --version 2>/dev/null | head -n1) agent echo (message/send, $reply_bytes body bytes)"
[[ -z "$base" ]] || echo "         base = $base agent echo (DDWIRE_BASE_BIN)"
echo "         nginx-post = nginx $nginx_version, 1 worker, return 200 to the same POST ($n_bytes body bytes)"
echo "         nginx-static = the same nginx, GET of a 60-byte static JSON file"
echo "         a2a-sdk = a2a-sdk $a2a_version, uvicorn $uvicorn_version (message/send)"
echo
python3 - "$work/results" "$concurrency" "$bench_seconds" "$(getconf CLK_TCK)" <<'EOF'
import statistics, sys
path, conc, secs, tck = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rows = [l.split() for l in open(path) if l.strip()]
# server conns round rps p50_ms p99_ms requests errors ticks
runs = {}
for r in rows:
    rps, ticks = float(r[3]), int(r[8])
    # The ticks cover the warm-up second too, at about the measured rate.
    served = rps * (secs + 1.0)
    runs.setdefault((r[0], r[1]), []).append(dict(
        round=int(r[2]), rps=rps, p50=float(r[4]), p99=float(r[5]), err=int(r[7]),
        cpu=ticks / tck / served * 1e6 if served else 0.0))
servers = list(dict.fromkeys(r[0] for r in rows))
def fmt(n): return f"{n:,.0f}"
print(f"{'server':14} {'conns':>5} {'req/s median':>13}  {'rounds':<28} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10} {'errors':>6}")
for conns in (conc, "1"):
    for s in servers:
        xs = runs[(s, conns)]
        rs = [x["rps"] for x in xs]
        print(f"{s:14} {conns:>5} {fmt(statistics.median(rs)):>13}  {' '.join(fmt(r) for r in rs):<28} "
              f"{statistics.median(x['p50'] for x in xs):>7.3f} {statistics.median(x['p99'] for x in xs):>7.3f} "
              f"{statistics.median(x['cpu'] for x in xs):>10.1f} {sum(x['err'] for x in xs):>6}")
print()
def ratio(a, b, conns):
    # per round (the two measured in the same round), then the median over the rounds
    ra = {x["round"]: x["rps"] for x in runs[(a, conns)]}
    rb = {x["round"]: x["rps"] for x in runs[(b, conns)]}
    rs = sorted(ra[k] / rb[k] for k in ra if rb.get(k))
    return statistics.median(rs), rs[0], rs[-1]
pairs = [("nginx-post", "of nginx answering the same POST with return 200 (target: at least 40%)", True),
         ("nginx-static", "of nginx serving the static file", True),
         ("a2a-sdk", "a2a-sdk's requests/s (target: at least 40x)", False)]
if "base" in servers:
    pairs.insert(0, ("base", "DDWIRE_BASE_BIN's requests/s", False))
for conns in (conc, "1"):
    print(f"ddwire at {conns} connection(s):")
    for b, what, pct in pairs:
        m, lo, hi = ratio("ddwire", b, conns)
        show = (lambda v: f"{v:.1%}") if pct else (lambda v: f"{v:.2f}x")
        print(f"  {show(m):>8} {what}; rounds {show(lo)} to {show(hi)}")
    if "base" in servers:
        d = statistics.median(x["cpu"] for x in runs[("ddwire", conns)])
        b = statistics.median(x["cpu"] for x in runs[("base", conns)])
        print(f"  {d / b:>7.2f}x DDWIRE_BASE_BIN's server CPU per request ({d:.1f} against {b:.1f} us)")
print()
print("CPU us/req: the server process's own user+system time (all threads and children, from")
print("/proc) per request; it moves less than req/s when other work shares the machine.")
print("Each ratio is taken within a round (both servers measured minutes apart at most), and the")
print("median over the rounds printed: on a loaded machine figures move from run to run, ratios less.")
EOF
if [[ "$(awk '{ e += $8 } END { print e + 0 }' "$work/results")" -ne 0 ]]; then
    say "some requests failed (errors column): the figures above are suspect"
    exit 1
fi
