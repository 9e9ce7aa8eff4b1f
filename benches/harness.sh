#!/usr/bin/env bash
# The harness end to end, with the run store on the disk the repository lives on and on
# /dev/shm (tmpfs), against the Python reference path measured in the same run. For each store:
#
#   1. one fsync round on that file system (`cargo bench --bench load -- fsync`: 8 KiB append + fdatasync, as
#      the store's journal pays it once per group of runs);
#   2. `cargo bench --bench load -- harness` at CONCURRENCY connections: caller -> harness (A2A message/send)
#      -> echo agent -> run store, against the same echo agent called directly, and a second
#      harness exporting each run over OTLP (to a sink in the same process), the two taking
#      turns over one set of connections in WINDOWS half-second windows; the cost is given in
#      throughput and in the process's CPU per run;
#   3. the same at one connection: the harness's single-stream overhead over a direct call,
#      set against the budget of one fsync round + 0.5 ms, and where one run's time goes: the
#      median (and p99) of each stage of 2,000 invocations made one at a time straight into a
#      conductor (policy gate, input check, agent call, grounding check, validation, store, and
#      the gaps between them), and what the wire adds around them (HTTP, JSON-RPC, the A2A
#      task, the agent call's hand-over);
#   4. the Python reference path (benches/reference_path.py: an a2a-sdk 1.3.0 harness that
#      forwards with the a2a-sdk client to an a2a-sdk + OpenTelemetry echo agent and writes the
#      run's files as the reference's store does), driven by the same load generator with the
#      same invocation (A2A 1.0 SendMessage), and the ratio of the two.
#
# With DDWIRE_BASE_BIN (another ddwire binary, the commit a change starts from, say): the two
# binaries' harnesses (`ddwire serve`, each its own process) take turns, ROUNDS rounds (default 3)
# in alternating order, behind one echo agent (DDWIRE_BIN's), each phase with a new store on the
# repository's disk, at CONCURRENCY connections and at one, driven by the same generator with the
# same call (A2A v0.3 message/send); printed per round and as the median of the rounds' ratios,
# with 200 sampled runs of each phase stored and succeeded. Stores are removed only at the end:
# ext4 mounted without a journal (as on the machine these figures come from; `dmesg` says so)
# skips, when it allocates an inode, those freed in the last 60 s, or 360 s while their inode
# table block is not yet written back (`recently_deleted` in fs/ext4/ialloc.c, which `perf`
# shows), so deleting thousands of run files between phases would slow the next phase's file
# creation. Any other process deleting many files on the same disk in the 6 minutes before or
# during a run skews it the same way: leave the disk alone that long before measuring.
#
# Then COUNT more runs through the harness on tmpfs, with the process's resident memory before
# and after; with MASSIF=1, the same under valgrind's massif, printing the live heap over the
# run (to tell memory the harness holds from memory glibc's allocator keeps).
#
#   benches/harness.sh                            # CONCURRENCY=16 SECONDS=5 WINDOWS=120 COUNT=100000
#   CONCURRENCY=8 SECONDS=10 COUNT=20000 benches/harness.sh
#   MASSIF=1 MASSIF_COUNT=40000 benches/harness.sh
#   PYTHON=0 benches/harness.sh                   # skip the Python reference path
#   DDWIRE_BIN=/path/to/ddwire benches/harness.sh  # skip cargo build --release
#   DDWIRE_LOAD_BIN=/path/to/load benches/harness.sh  # skip cargo bench --bench load --no-run
#   DDWIRE_BASE_BIN=/path/to/main/ddwire ROUNDS=3 benches/harness.sh  # and main's harness alongside
#
# The Python venv is tests/interop/venv.sh a2a1 (pinned a2a-sdk 1.3.0, opentelemetry-sdk
# 1.45.2) under target/. Stores take about 25 KB per run and are removed on exit. Loopback only;
# every process started is stopped on exit.
set -euo pipefail

# SECONDS is also bash's own clock: read a value from the environment before it ticks.
bench_seconds="$(printenv SECONDS || true)"
bench_seconds="${bench_seconds:-5}"
concurrency="${CONCURRENCY:-16}"
count="${COUNT:-100000}"
windows="${WINDOWS:-120}"
python="${PYTHON:-1}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
mkdir -p "$repo/target"
disk="$(mktemp -d "$repo/target/ddwire-bench-harness.XXXXXX")"
shm=""
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$disk" ${shm:+"$shm"}
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ -d /dev/shm && -w /dev/shm ]]; then
    shm="$(mktemp -d /dev/shm/ddwire-bench-harness.XXXXXX)"
fi

if [[ -z "${DDWIRE_BIN:-}" ]]; then
    echo "building ddwire (cargo build --release)..." >&2
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

venv=""
if [[ "$python" == 1 ]]; then
    echo "preparing the Python venv (tests/interop/venv.sh a2a1)..." >&2
    if ! venv="$(bash "$repo/tests/interop/venv.sh" a2a1)"; then
        echo "the Python venv could not be made: the reference path is skipped" >&2
        venv=""
    fi
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {  # URL: wait up to 30 s for an agent card there
    for _ in $(seq 1 300); do
        if curl -fsS -o /dev/null "$1/.well-known/agent-card.json" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing answered at $1" >&2
    return 1
}

field() {  # LABEL COLUMN < output: the number after LABEL's COLUMNth word
    awk -v label="$1" -v col="$2" 'index($0, label) == 1 { print $(col) }'
}

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$("$ddwire" --version | head -n1); $concurrency connections, ${bench_seconds}s per phase (+1 s warm-up), $windows export windows of 0.5 s, $count runs for memory"

python_path() {  # DIR: the reference path's req/s at $concurrency connections, or "-"
    [[ -n "$venv" ]] || { echo "-"; return; }
    local agent_port harness_port
    agent_port="$(free_port)"
    harness_port="$(free_port)"
    "$venv/bin/python" "$here/reference_path.py" agent "$agent_port" >&2 &
    local agent_pid=$!
    pids+=("$agent_pid")
    "$venv/bin/python" "$here/reference_path.py" harness "$harness_port" \
        "http://127.0.0.1:$agent_port" "$1/pyruns" >&2 &
    local harness_pid=$!
    pids+=("$harness_pid")
    wait_for "http://127.0.0.1:$agent_port" && wait_for "http://127.0.0.1:$harness_port"
    # The exact call the generator sends must come back as a completed task with an envelope.
    local answer
    answer="$(curl -fsS -X POST "http://127.0.0.1:$harness_port/a2a" -H 'Content-Type: application/json' \
        -H 'A2A-Version: 1.0' -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"bench","role":"ROLE_USER","parts":[{"data":{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":{"n":1,"text":"ping"}}}}]}}}')"
    if [[ "$answer" != *TASK_STATE_COMPLETED*'"envelope"'* ]]; then
        echo "the Python reference path did not complete a run: ${answer:0:400}" >&2
        echo "-"
    else
        "$load" agent --url "http://127.0.0.1:$harness_port/a2a" --binding 1.0 \
            --concurrency "$concurrency" --seconds "$bench_seconds" 2>/dev/null \
            | tee >(cat >&2) | awk '{ print $2 }'
    fi
    kill "$agent_pid" "$harness_pid" 2>/dev/null || true
    wait "$agent_pid" "$harness_pid" 2>/dev/null || true
    # As for ddwire's harness: 200 of its stored runs, spread evenly, must be whole and succeeded.
    sample_runs "$1/pyruns" >&2
}

sample_runs() {  # DIR: 200 of the runs stored in DIR, spread evenly, read back
    python3 - "$1" <<'EOF'
import json, os, sys
root = sys.argv[1]
ids = sorted(n for n in os.listdir(root) if os.path.isfile(os.path.join(root, n, "envelope.json")))
take = min(200, len(ids))
good = 0
for i in range(take):
    try:
        with open(os.path.join(root, ids[i * len(ids) // take], "envelope.json"), encoding="utf-8") as f:
            good += json.load(f)["outcome"]["status"] == "succeeded"
    except (OSError, ValueError, KeyError):
        pass
print(f"sampled runs {good}/{take} stored and succeeded ({len(ids)} runs on disk)")
EOF
}

measure() {  # LABEL DIR
    local label="$1" dir="$2"
    echo
    echo "== run store on $label: $dir ($(stat -f -c %T "$dir"), $(df --output=source "$dir" | tail -n 1))"
    local fsync many one py
    fsync="$("$load" fsync --runs "$dir/probe" --seconds 2 | tee >(cat >&2))"
    many="$("$load" harness --concurrency "$concurrency" --seconds "$bench_seconds" \
        --count 0 --stages 0 --runs "$dir/runs" --otlp --windows "$windows" 2>/dev/null | tee >(cat >&2))"
    one="$("$load" harness --concurrency 1 --seconds "$bench_seconds" \
        --count 0 --runs "$dir/runs1" 2>/dev/null | sed 's/^/single stream: /' | tee >(cat >&2))"
    py="$(python_path "$dir" 2> >(sed 's/^/python path:   /' >&2))"
    local fsync_p50 harness_rps overhead budget
    fsync_p50="$(field "fsync round" 4 <<<"$fsync")"
    harness_rps="$(field "through the harness" 4 <<<"$many")"
    overhead="$(field "single stream: harness overhead" 6 <<<"$one")"
    budget="$(awk -v f="$fsync_p50" 'BEGIN { printf "%.3f", f + 0.5 }')"
    echo "-- $label: $harness_rps invocations/s through the harness at $concurrency connections"
    echo "-- ddwire's $(grep '^sampled runs' <<<"$many" | tr -s ' ')"
    local export_cost
    export_cost="$(grep '^OTLP export cost' <<<"$many" | sed 's/^OTLP export cost *//')"
    [[ -z "$export_cost" ]] || echo "-- OTLP export: $export_cost"
    if [[ "$py" != "-" && -n "$py" ]]; then
        awk -v d="$harness_rps" -v p="$py" -v c="$concurrency" \
            'BEGIN { printf "-- %.1fx the Python reference path (%s req/s) at %s connections (aim: 20x on ext4)\n", d / p, p, c }'
    fi
    awk -v o="$overhead" -v b="$budget" -v f="$fsync_p50" \
        'BEGIN { printf "-- single-stream overhead p50 %s ms; budget one fsync round (p50 %s ms) + 0.5 ms = %s ms: %s\n", o, f, b, (o <= b ? "within" : "OVER") }'
    # Where one run's time goes (the load generator's `stages` table for this store).
    sed -n '/^single stream: stages of one run/,$p' <<<"$one" | sed 's/^single stream: /-- /'
    rm -rf "$dir/runs" "$dir/runs-otlp" "$dir/runs1" "$dir/runs1-stages" "$dir/pyruns" "$dir/probe"
}

against_base() {  # the harness of DDWIRE_BASE_BIN and of DDWIRE_BIN, taking turns
    local base="$DDWIRE_BASE_BIN" rounds="${ROUNDS:-3}" dir="$disk/ab"
    mkdir -p "$dir"
    echo
    echo "== against DDWIRE_BASE_BIN: \`serve\` of $(basename "$base") (base) and of $(basename "$ddwire") (new), $rounds rounds taking turns, store on the repository's disk"
    local agent_port
    agent_port="$(free_port)"
    "$ddwire" agent echo --host 127.0.0.1 --port "$agent_port" --quiet &
    local agent_pid=$!
    pids+=("$agent_pid")
    wait_for "http://127.0.0.1:$agent_port"
    printf '{"agents": [{"url": "http://127.0.0.1:%s"}]}\n' "$agent_port" >"$dir/agents.json"
    # The load generator's in-process harness runs under this profile too.
    echo '{"profile_id": "ddwire-bench", "version": 1, "agents": {"echo.wire": "advise"}}' >"$dir/profile.json"
    phase() {  # LABEL BINARY ROUND CONNECTIONS: that harness's invocations/s
        local port runs="$dir/runs-$1-$3-$4"
        port="$(free_port)"
        "$2" serve --host 127.0.0.1 --port "$port" --agents "$dir/agents.json" \
            --profile "$dir/profile.json" --runs "$runs" \
            --acting-for-id urn:ddwire:bench --acting-for-name bench --quiet 2>/dev/null &
        local pid=$!
        pids+=("$pid")
        for _ in $(seq 1 300); do
            curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
            sleep 0.1
        done
        "$load" agent --url "http://127.0.0.1:$port/a2a" --concurrency "$4" --seconds 1 >/dev/null 2>&1
        local line before after
        before="$(cut -d' ' -f14,15 "/proc/$pid/stat")"
        line="$("$load" agent --url "http://127.0.0.1:$port/a2a" --concurrency "$4" \
            --seconds "$bench_seconds" 2>/dev/null)"
        after="$(cut -d' ' -f14,15 "/proc/$pid/stat")"
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        # The harness process's own CPU per run, in user space and in the kernel.
        local cpu
        cpu="$(awk -v b="$before" -v a="$after" -v line="$line" -v hz="$(getconf CLK_TCK)" 'BEGIN {
            split(b, x, " "); split(a, y, " "); match(line, /\(([0-9]+) requests/)
            n = substr(line, RSTART + 1, RLENGTH - 10) + 0; if (n == 0) n = 1
            printf "harness cpu per run: user %.0f us, kernel %.0f us", (y[1] - x[1]) / hz / n * 1e6, (y[2] - x[2]) / hz / n * 1e6 }')"
        echo "round $3, $4 connection(s), $1: $(awk '{ $1 = ""; print }' <<<"$line" | sed 's/^ *//'); $cpu; $(sample_runs "$runs")" >&2
        awk '{ print $2 }' <<<"$line"
    }
    local conns r b n
    for conns in "$concurrency" 1; do
        local ratios=()
        for r in $(seq 1 "$rounds"); do
            if (( r % 2 )); then
                b="$(phase base "$base" "$r" "$conns")"; n="$(phase new "$ddwire" "$r" "$conns")"
            else
                n="$(phase new "$ddwire" "$r" "$conns")"; b="$(phase base "$base" "$r" "$conns")"
            fi
            ratios+=("$(awk -v n="$n" -v b="$b" 'BEGIN { printf "%.3f", n / b }')")
        done
        echo "-- $conns connection(s): new/base per round ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')x"
    done
    kill "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
}
# First, and its stores kept until the exit: see "ext4 skips inodes" above.
[[ -z "${DDWIRE_BASE_BIN:-}" ]] || against_base

measure "the repository's disk" "$disk"
if [[ -n "$shm" ]]; then
    measure "/dev/shm" "$shm"
    mem_dir="$shm"
else
    echo
    echo "== /dev/shm is missing or not writable: the tmpfs run is skipped"
    mem_dir="$disk"
fi


if [[ "$count" -gt 0 ]]; then
    echo
    echo "== memory over $count runs (store on $(stat -f -c %T "$mem_dir"))"
    "$load" harness --concurrency 8 --seconds 1 --count "$count" --stages 0 --runs "$mem_dir/mem" 2>/dev/null \
        | grep -E '^(memory|resident)'
    rm -rf "$mem_dir/mem"
fi

if [[ "${MASSIF:-0}" == 1 ]]; then
    massif_count="${MASSIF_COUNT:-40000}"
    out="$repo/target/massif.harness.out"
    echo
    echo "== valgrind massif over $massif_count runs (slow: valgrind runs everything about 20x slower)"
    valgrind --tool=massif --massif-out-file="$out" "$load" harness --concurrency 4 \
        --seconds 1 --count "$massif_count" --stages 0 --runs "$mem_dir/massif" >/dev/null 2>&1
    rm -rf "$mem_dir/massif"
    awk -F= '/^mem_heap_B=/ { heap[n++] = $2 } /^mem_heap_extra_B=/ { extra[m++] = $2 }
        END {
            if (n == 0) { print "massif wrote no snapshots"; exit }
            max = 0; for (i = 0; i < n; i++) if (heap[i] > max) max = heap[i]
            printf "live heap: first snapshot %.2f MB, middle %.2f MB, last %.2f MB, peak %.2f MB (%d snapshots)\n",
                heap[0] / 1e6, heap[int(n / 2)] / 1e6, heap[n - 1] / 1e6, max / 1e6, n
        }' "$out"
    echo "(ms_print $out for the whole profile)"
fi
