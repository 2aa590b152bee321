#!/usr/bin/env bash
# Answers digest: runs every analysis (and its pair-listing, streaming, history, sharded and
# tree-clock variants) over the example traces and, if given, a few corpus traces, and writes
# their JSON reports with timings removed, one line per run, so that two trees can be
# compared: a refactoring that changes no answer leaves the digest unchanged.
#
#   bench/answers.sh > /tmp/before.txt                       # tests/traces and examples
#   CORPUS=../shared/corpus bench/answers.sh > /tmp/a.txt    # plus a few small corpus traces
#   diff /tmp/before.txt /tmp/after.txt                      # no output: no answer changed
#
# RACEPRED (default target/release/racepred) is the binary to run. Corpus traces are read
# where they are; nothing derived from them is written into the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RACEPRED:-target/release/racepred}
corpus=${CORPUS:-}
corpus_traces=${CORPUS_TRACES:-"jgf_series_A_t2 jgf_moldyn_mm3_t2 jgf_sor_n100_t4 dacapo_avrora_s0.1_n2x2"}
# Written out (not taken from `--help`) so that the same runs happen before and after a change.
analyses=${ANALYSES:-"hb fasttrack hbp shb shbp wcp lockset tsan-hybrid w3po sshb rdit pacer syncp osr trf"}
smt="mcm recipe recipe-alt"

# The report without what depends on the clock: seconds and any *_ms / *_seconds / time field.
strip() {
    jq -c 'walk(if type == "object" then with_entries(select(.key
        | test("(^|_)(seconds|secs|time|ms|elapsed|duration)$") | not)) else . end)'
}

one() { # trace, then analyze options
    local trace=$1 out rc
    shift
    set +e
    out=$("$bin" analyze "$@" --json "$trace" 2>/dev/null)
    rc=$?
    set -e
    printf '%s %s rc=%s ' "$trace" "$*" "$rc"
    if [ -n "$out" ]; then printf '%s\n' "$out" | strip | tr -d '\n'; fi
    echo
}

variants() { # trace, analysis, small (1: run the SMT predictors too)
    local t=$1 a=$2
    one "$t" -a "$a"
    case $a in
        hb | fasttrack | hbp | shb | shbp | wcp | lockset | tsan-hybrid | w3po | syncp | osr)
            one "$t" -a "$a" --all-pairs ;;
    esac
    case $a in
        hb | fasttrack | hbp | shb | shbp | rdit) one "$t" -a "$a" --clock tree ;;
    esac
    case $a in
        hbp | shbp) one "$t" -a "$a" --streaming ;;
        w3po) one "$t" -a w3po --history 2 && one "$t" -a w3po -j 2 ;;
        lockset | tsan-hybrid) one "$t" -a "$a" -j 3 ;;
        pacer) one "$t" -a pacer --rate 0.3 --period 7 --seed 5 ;;
        rdit) one "$t" -a rdit --conservative ;;
    esac
}

traces=$(ls tests/traces/*.std examples/*.std tests/traces/formats/golden.*[a-z] | grep -v expected)
{
    for t in $traces; do
        for a in $analyses; do variants "$t" "$a"; done
        # several analyses in one pass (the fan-out driver)
        one "$t" -a hb -a lockset -a w3po -a shbp
        case $t in
            tests/traces/*.std | examples/*.std)
                for a in $smt; do one "$t" -a "$a" && one "$t" -a "$a" --all-pairs; done ;;
        esac
    done
    if [ -n "$corpus" ]; then
        for c in $corpus_traces; do
            t=$corpus/$c.std.xz
            [ -f "$t" ] || continue
            for a in $analyses; do
                [ "$a" = sshb ] && continue # a diagnosis of whole traces: minutes
                one "$t" -a "$a"
            done
            one "$t" -a lockset -a tsan-hybrid -a w3po --all-pairs
            one "$t" -a lockset -a tsan-hybrid -a w3po -j 2
        done
    fi
}
