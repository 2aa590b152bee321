#!/usr/bin/env bash
# End-to-end CLI benchmark: times `racepred` on generated traces of 10^5–10^7 events (STD and
# binary) and on the real traces in ../shared/corpus/, printing events/s and peak memory.
#
#   bench/run.sh                 # everything (several minutes)
#   bench/run.sh --quick         # 10^5 and 10^6 only, no corpus
#   ANALYSES="hb fasttrack" bench/run.sh   # also time these analyses
#
# Traces are generated into bench/out/ (git-ignored). Timings are wall-clock seconds of one
# run from the page cache (each file is read once before it is timed); compare figures only
# within one run of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/bench/out
mkdir -p "$out"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
sizes="100000 1000000 10000000"
[ $quick = 1 ] && sizes="100000 1000000"
analyses=${ANALYSES:-}
corpus=${CORPUS:-$root/../shared/corpus}

cargo build --release -q -p racepred-cli
bin=$root/target/release/racepred

# time_cmd LABEL EVENTS CMD...: prints label, wall seconds, M events/s, peak RSS MiB.
# Exit status 1 (races found) is expected; the output goes to /dev/null.
time_cmd() {
    local label=$1 events=$2
    shift 2
    local tf s e secs kib=0
    tf=$(mktemp)
    s=$(date +%s%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%M" -o "$tf" "$@" >/dev/null 2>&1 || true
        kib=$(tail -n 1 "$tf")
    else
        "$@" >/dev/null 2>&1 || true
    fi
    e=$(date +%s%N)
    rm -f "$tf"
    secs=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", (e - s) / 1e9 }')
    awk -v l="$label" -v n="$events" -v s="$secs" -v k="$kib" 'BEGIN {
        r = (s > 0) ? n / s / 1e6 : 0;
        printf "%-48s %12d events %8.3f s %9.2f M events/s %8.1f MiB peak\n", l, n, s, r, k / 1024 }'
}

echo "== generated traces (4 threads, 1000 variables, 8 locks, 10% sync)"
for n in $sizes; do
    std=$out/gen_$n.std
    bin_=$out/gen_$n.rpb
    [ -f "$std" ] || "$bin" generate --events "$n" --threads 4 --vars 1000 --locks 8 --sync 0.1 --seed 1 -o "$std"
    [ -f "$bin_" ] || "$bin" convert "$std" "$bin_"
    cat "$std" "$bin_" >/dev/null # page cache
    time_cmd "stats gen_$n.std" "$n" "$bin" stats "$std"
    time_cmd "stats gen_$n.rpb" "$n" "$bin" stats "$bin_"
    for a in $analyses; do
        time_cmd "analyze -a $a gen_$n.rpb" "$n" "$bin" analyze -a "$a" "$bin_"
    done
done

if [ $quick = 0 ] && [ -d "$corpus" ]; then
    echo "== real traces ($corpus): reading the xz-compressed STD (includes decompression),"
    echo "   then analyses on a binary copy in bench/out/ (git-ignored; never committed)"
    for f in "$corpus"/*.std.xz; do
        name=$(basename "$f" .std.xz)
        rpb=$out/corpus_$name.rpb
        n=$("$bin" stats --json "$f" | awk -F': ' '/"events"/ {gsub(",", "", $2); print $2}')
        time_cmd "stats $name.std.xz" "$n" "$bin" stats "$f"
        [ -f "$rpb" ] || "$bin" convert "$f" "$rpb"
        cat "$rpb" >/dev/null
        time_cmd "stats $name.rpb" "$n" "$bin" stats "$rpb"
        for a in $analyses; do
            time_cmd "analyze -a $a $name.rpb" "$n" "$bin" analyze -a "$a" "$rpb"
        done
    done
fi
