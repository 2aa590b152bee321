#!/usr/bin/env bash
# syncp and osr beside RAPID's SyncPreserving and OSR engines on the same STD files, in one
# run: racy events
# and racy lines of each (RAPID's notion: second events of races, their distinct locations),
# wall time and peak memory, and the ratios. Also `racepred check` on each trace (verdict
# counts and its time).
#
#   bench/syncp.sh                       # the four traces below (about 20 minutes with RAPID)
#   ANALYSES=syncp bench/syncp.sh        # one of the two
#   TRACES="jgf_moldyn_mm3_t2" bench/syncp.sh
#   RAPID=0 bench/syncp.sh               # racepred only
#
# Corpus traces are decompressed into bench/out/ (git-ignored, never committed); both tools
# read the same plain STD file from the page cache. RAPID runs with -Xmx16g (RAPID_XMX).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/bench/out
mkdir -p "$out"
corpus=${CORPUS:-$root/../shared/corpus}
rapid=${RAPID_BIN:-$root/../shared/peers/rapid/rapid}
use_rapid=${RAPID:-1}
[ -x "$rapid" ] && command -v java >/dev/null || use_rapid=0
analyses=${ANALYSES:-"syncp osr"}
traces=${TRACES:-"jgf_moldyn_mm3_t2 jgf_lufact_n150_t2 jgf_raytracer_w10_t2 dacapo_lusearch_q2_t2"}
cargo build --release -q -p racepred-cli
bin=$root/target/release/racepred

# Runs a command; prints "seconds peak_KB" and leaves its stdout in $out/last.out.
timed() {
    /usr/bin/time -f "%e %M" -o "$out/last.time" "$@" >"$out/last.out" 2>"$out/last.err" || true
    tail -1 "$out/last.time"
}

printf '%-24s %-10s %14s %8s %10s %8s %12s %10s\n' trace tool racy_events lines seconds MB time_ratio mem_ratio
for t in $traces; do
    std=$out/$t.std
    [ -f "$std" ] || xz -dc "$corpus/$t.std.xz" >"$std"
    cat "$std" >/dev/null
    for a in $analyses; do
        case $a in syncp) engine=SyncPreserving ;; osr) engine=OSR ;; esac
        read -r s m < <(timed "$bin" analyze -a "$a" --json "$std")
        read -r ev lines < <(python3 -c "
import json; r=json.load(open('$out/last.out'))
print(r['summary']['racy_events'], r['summary']['racy_locations'])")
        printf '%-24s %-10s %14s %8s %10s %8d\n' "$t" "$a" "$ev" "$lines" "$s" $((m / 1024))
        if [ "$use_rapid" = 1 ]; then
            read -r rs rm < <(timed "$rapid" "$engine" "$std")
            # SyncPreserving: "Number of 'racy' events found = N"; OSR: "Number of racy events: N".
            rev=$(sed -n -e "s/.*'racy' events found = //p" -e "s/^Number of racy events: //p" "$out/last.out" | tail -1)
            rlines=$(sed -n -e "s/.*'racy' lines found = //p" -e "s/^Number of racy locations: //p" "$out/last.out" | tail -1)
            ratio=$(python3 -c "print(f'{$rs/$s:.1f}x')")
            mratio=$(python3 -c "print(f'{$m/$rm:.3f}')")
            printf '%-24s %-10s %14s %8s %10s %8d %12s %10s\n' "$t" "RAPID-$engine" "$rev" "$rlines" "$rs" $((rm / 1024)) "$ratio" "$mratio"
        fi
    done
    read -r cs cm < <(timed "$bin" check --json "$corpus/$t.std.xz")
    verdicts=$(python3 -c "
import json; r=json.load(open('$out/last.out'))['summary']
print(f\"{r['location_pairs']} pairs: {r['race']} race, {r['no_race']} no race, {r['unknown']} unknown\")")
    printf '%-24s %-10s %s (%s s, %d MB, from .std.xz)\n' "$t" check "$verdicts" "$cs" $((cm / 1024))
done
