#!/usr/bin/env bash
# Cost against the number of threads: traces in which the main thread forks and joins one
# short-lived thread after another (N threads, 8 events each, critical sections on two
# shared locks: what a program starting a thread per task records), timed for `hb` and
# `wcp`. Wall time and peak memory per analysis; the figures should grow with the events.
#
#   bench/threads.sh                # 3001 and 6001 threads
#   THREADS="1001 3001" bench/threads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/bench/out
mkdir -p "$out"
cargo build --release -q -p racepred-cli
bin=$root/target/release/racepred
for n in ${THREADS:-3001 6001}; do
    t=$out/threads-$n.std
    if [ ! -f "$t" ]; then
        for ((i = 1; i < n; i++)); do
            echo "T0|fork(T$i)|1"
            printf 'T%d|acq(L)|2\nT%d|w(x)|3\nT%d|rel(L)|4\nT%d|acq(M)|5\nT%d|r(y)|6\nT%d|rel(M)|7\n' \
                "$i" "$i" "$i" "$i" "$i" "$i"
            echo "T0|join(T$i)|8"
        done >"$t"
    fi
    events=$(wc -l <"$t")
    for a in hb wcp; do
        /usr/bin/time -f "$n threads, $events events, $a: %e s, %M KB" \
            "$bin" analyze -a "$a" "$t" >/dev/null || true
    done
done
