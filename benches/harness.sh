#!/usr/bin/env bash
# The harness end to end, twice: `ddwire bench harness` with its run store on the disk the
# repository lives on, then on /dev/shm (tmpfs, memory), so the share of the run store's writes
# and fsyncs in an invocation shows. Each run: caller -> harness (A2A message/send) -> echo agent
# -> run store, against the same echo agent called directly, and a second harness exporting each
# run over OTLP (to a sink in the same process); then COUNT more invocations to measure the
# process's resident memory. See benches/README.md.
#
#   benches/harness.sh                            # CONCURRENCY=8 SECONDS=5 COUNT=20000
#   CONCURRENCY=4 SECONDS=10 COUNT=100000 benches/harness.sh
#   DDWIRE_BIN=/path/to/ddwire benches/harness.sh  # skip cargo build --release
#
# Writes about 25 KB per run to each store (COUNT=20000 plus the timed runs: about 1 GB at
# most), and removes both stores on exit. Loopback only.
set -euo pipefail

# SECONDS is also bash's own clock: read a value from the environment before it ticks.
bench_seconds="$(printenv SECONDS || true)"
bench_seconds="${bench_seconds:-5}"
concurrency="${CONCURRENCY:-8}"
count="${COUNT:-20000}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
mkdir -p "$repo/target"
disk="$(mktemp -d "$repo/target/ddwire-bench-harness.XXXXXX")"
shm=""
cleanup() { rm -rf "$disk" ${shm:+"$shm"}; }
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

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r)"
echo "$("$ddwire" --version | head -n1); $concurrency connections, ${bench_seconds}s per phase (+1 s warm-up), $count runs for memory"

run() {  # LABEL DIR
    echo
    echo "== run store on $1: $2 ($(stat -f -c %T "$2"), $(df --output=source "$2" | tail -n 1))"
    "$ddwire" bench harness --concurrency "$concurrency" --seconds "$bench_seconds" \
        --count "$count" --runs "$2/runs" --otlp 2>&1 | grep -v '^bench harness: '
    rm -rf "$2/runs" "$2/runs-otlp"
}
run "the repository's disk" "$disk"
if [[ -n "$shm" ]]; then
    run "/dev/shm" "$shm"
else
    echo
    echo "== /dev/shm is missing or not writable: the tmpfs run is skipped"
fi
