#!/usr/bin/env bash
# End-to-end CLI benchmark: wall time, events/s and peak memory of `racepred` per analysis, on
# generated traces of 10^5–10^7 events (STD and binary; `stats` also from RoadRunner and CSV) and on the largest real traces of
# ../shared/corpus/, and — when ../shared/peers/rapid is there — RAPID's figures for the same
# engines on the same STD files in the same run, with the ratio.
#
#   bench/run.sh                 # everything (RAPID included: about 35 minutes, with
#                                # bench/syncp.sh at the end)
#   bench/run.sh --quick         # 10^5 and 10^6 only, no corpus, no RAPID
#   RAPID=0 bench/run.sh         # without RAPID
#   ANALYSES="hb shb" bench/run.sh
#   JOBS=4 bench/run.sh          # shards of the sharded analyses (default: the cores)
#   REPEAT=5 bench/run.sh        # each racepred line the median of 5 runs (RAPID: RAPID_REPEAT)
#
# Traces are generated into bench/out/ (git-ignored; corpus copies there are never committed).
# Timings are wall-clock seconds from the page cache (each file is read once before it is
# timed): of one run, or the median of REPEAT runs (RAPID_REPEAT for RAPID's; default 1),
# since single runs on a shared machine can move by a third. Compare figures only within one
# run of this script. Peak memory is the maximum resident set size (/usr/bin/time) over the
# runs. RAPID runs on Java with -Xmx16g (RAPID_XMX); its WCP runs only up to RAPID_WCP_MAX
# events (default 10^6: it needs 3.8 GB there).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/bench/out
mkdir -p "$out"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
sizes="100000 1000000 10000000"
[ $quick = 1 ] && sizes="100000 1000000"
analyses=${ANALYSES:-"hb fasttrack shb wcp lockset tsan-hybrid w3po"}
corpus=${CORPUS:-$root/../shared/corpus}
rapid=${RAPID_BIN:-$root/../shared/peers/rapid/rapid}
use_rapid=${RAPID:-1}
[ $quick = 1 ] && use_rapid=0
[ -x "$rapid" ] && command -v java >/dev/null || use_rapid=0
rapid_wcp_max=${RAPID_WCP_MAX:-1000000}
big_traces="dacapo_lusearch_q2_t2 jgf_crypt_n200000_t4 jgf_raytracer_w10_t4"
# `--jobs`: the analyses split by variable over threads, timed again with JOBS shards.
jobs=${JOBS:-$(nproc)}
sharded="lockset tsan-hybrid w3po"

cargo build --release -q -p racepred-cli
bin=$root/target/release/racepred

# Extra options of an analysis (W3PO in its linear mode).
opts_of() {
    case $1 in
    w3po) echo "--history 4" ;;
    *) echo "" ;;
    esac
}

# RAPID's engine for an analysis, if it has one.
rapid_engine() {
    case $1 in
    hb) echo HB ;;
    fasttrack) echo HBEpoch ;;
    shb) echo SHB ;;
    wcp) echo WCP ;;
    lockset) echo LockSet ;;
    *) echo "" ;;
    esac
}

repeat=${REPEAT:-1}
rapid_repeat=${RAPID_REPEAT:-1}
[ "$repeat" -ge 1 ] 2>/dev/null && [ "$rapid_repeat" -ge 1 ] 2>/dev/null || {
    echo "REPEAT and RAPID_REPEAT must be whole numbers, at least 1 (got '$repeat', '$rapid_repeat')" >&2
    exit 2
}

# measure CMD...: sets $secs (the median wall time of $repeat runs; $runs overrides the
# count) and $mib (the largest peak). Exit status 1 (races found) is expected.
measure() {
    local tf s e kib=0 k all="" max=0
    for ((k = 0; k < ${runs:-$repeat}; k++)); do
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
        all="$all $((e - s))"
        [ "${kib:-0}" -gt "$max" ] && max=$kib
    done
    secs=$(echo "$all" | tr ' ' '\n' | sed '/^$/d' | sort -n |
        awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1e9 }')
    mib=$(awk -v k="$max" 'BEGIN { printf "%.1f", k / 1024 }')
}

# row LABEL EVENTS: prints the last measurement.
row() {
    awk -v l="$1" -v n="$2" -v s="$secs" -v m="$mib" 'BEGIN {
        r = (s > 0) ? n / s / 1e6 : 0;
        printf "%-52s %10d ev %8.3f s %9.2f M ev/s %8.1f MiB\n", l, n, s, r, m }'
}

# compare LABEL EVENTS ANALYSIS STDFILE: racepred on the STD file, then RAPID's engine on it.
compare() {
    local label=$1 n=$2 a=$3 file=$4 engine ours_s ours_m
    engine=$(rapid_engine "$a")
    [ "$use_rapid" = 1 ] && [ -n "$engine" ] || return 0
    if [ "$a" = wcp ] && [ "$n" -gt "$rapid_wcp_max" ]; then
        echo "  (RAPID $engine skipped on $label: over RAPID_WCP_MAX=$rapid_wcp_max events)"
        return 0
    fi
    # shellcheck disable=SC2046
    measure "$bin" analyze -a "$a" $(opts_of "$a") "$file"
    ours_s=$secs ours_m=$mib
    runs=$rapid_repeat measure "$rapid" "$engine" "$file"
    row "  RAPID $engine $label" "$n"
    awk -v l="$label" -v a="$a" -v os="$ours_s" -v om="$ours_m" -v rs="$secs" -v rm="$mib" 'BEGIN {
        printf "  => %-14s %-28s racepred %7.3f s %7.1f MiB | RAPID %8.3f s %8.1f MiB | %6.1fx faster, %5.1fx less memory\n",
            a, l, os, om, rs, rm, (os > 0 ? rs / os : 0), (om > 0 ? rm / om : 0) }'
}

[ "$repeat" -gt 1 ] && echo "(racepred: medians of $repeat runs; RAPID: of $rapid_repeat)"
echo "== generated traces (8 threads, 1000 variables, 20 locks)"
for n in $sizes; do
    std=$out/gen8_$n.std
    rpb=$out/gen8_$n.rpb
    [ -f "$std" ] || "$bin" generate --events "$n" --threads 8 --vars 1000 --locks 20 --seed 1 -o "$std"
    [ -f "$rpb" ] || "$bin" convert "$std" "$rpb"
    cat "$std" "$rpb" >/dev/null # page cache
    measure "$bin" stats "$std"
    row "stats gen8_$n.std" "$n"
    measure "$bin" stats "$rpb"
    row "stats gen8_$n.rpb" "$n"
    # The other text readers, on the same events (CSV: a location per row).
    for ext in rr csv; do
        f=$out/gen8_$n.$ext
        [ -f "$f" ] || "$bin" convert "$std" "$f"
        cat "$f" >/dev/null # page cache
        measure "$bin" stats "$f"
        row "stats gen8_$n.$ext" "$n"
    done
    for a in $analyses; do
        for f in "$std" "$rpb"; do
            # shellcheck disable=SC2046
            measure "$bin" analyze -a "$a" $(opts_of "$a") "$f"
            row "analyze -a $a $(basename "$f")" "$n"
        done
        if [ "$n" = 10000000 ] || { [ "$a" = wcp ] && [ "$n" = "$rapid_wcp_max" ]; }; then
            compare "gen8_$n.std" "$n" "$a" "$std"
        fi
    done
    if [ "$n" = 10000000 ]; then
        # shellcheck disable=SC2086
        measure "$bin" analyze $(for a in hb fasttrack shb; do printf -- '-a %s ' $a; done) "$std"
        row "analyze -a hb -a fasttrack -a shb gen8_$n.std" "$n"
        if [ "$jobs" -gt 1 ]; then
            for a in $sharded; do
                for f in "$std" "$rpb"; do
                    # shellcheck disable=SC2046
                    measure "$bin" analyze -a "$a" $(opts_of "$a") -j "$jobs" "$f"
                    row "analyze -a $a -j $jobs $(basename "$f")" "$n"
                done
            done
        fi
    fi
done

if [ $quick = 0 ] && [ -d "$corpus" ]; then
    echo "== largest real traces ($corpus): racepred reads the .std.xz (decompression included);"
    echo "   RAPID reads a decompressed copy in bench/out/ (git-ignored, never committed)"
    for name in $big_traces; do
        f=$corpus/$name.std.xz
        [ -f "$f" ] || continue
        n=$("$bin" stats --json "$f" | awk -F': ' '/"events"/ {gsub(",", "", $2); print $2}')
        cat "$f" >/dev/null
        measure "$bin" stats "$f"
        row "stats $name.std.xz" "$n"
        for a in $analyses; do
            # shellcheck disable=SC2046
            measure "$bin" analyze -a "$a" $(opts_of "$a") "$f"
            row "analyze -a $a $name.std.xz" "$n"
        done
        if [ "$jobs" -gt 1 ]; then
            for a in $sharded; do
                # shellcheck disable=SC2046
                measure "$bin" analyze -a "$a" $(opts_of "$a") -j "$jobs" "$f"
                row "analyze -a $a -j $jobs $name.std.xz" "$n"
            done
        fi
        if [ "$use_rapid" = 1 ]; then
            plain=$out/corpus_$name.std
            [ -f "$plain" ] || xz -dc "$f" >"$plain"
            cat "$plain" >/dev/null
            for a in $analyses; do
                compare "$name.std" "$n" "$a" "$plain"
            done
        fi
    done
fi

# The whole-trace sound predictors (syncp, osr) beside RAPID's SyncPreserving and OSR, and
# `racepred check`, on four corpus traces (bench/syncp.sh): both, or those $ANALYSES names.
sound=""
for a in syncp osr; do
    if [ -z "${ANALYSES:-}" ] || [[ " $ANALYSES " == *" $a "* ]]; then
        sound="$sound $a"
    fi
done
if [ $quick = 0 ] && [ -d "$corpus" ] && [ -n "$sound" ]; then
    RAPID=$use_rapid ANALYSES="${sound# }" "$root/bench/syncp.sh"
fi
