#!/usr/bin/env bash
# JavaGrande's multithreaded benchmarks (section 2 and 3, as bundled with RoadRunner:
# benchmarks/*/original.jar), traced end to end with `racepred record -- java`: each runs
# with 2 threads on a smaller input than its size A (tests/real/javagrande/JgfDriver.java
# sets it; the sizes of the traces in ../shared/corpus), every trace must validate, and each
# is analysed with hb, shb and wcp; the racy locations are printed per benchmark and
# explained in docs/recording.md ("JavaGrande, traced end to end").
#
#   tests/real/javagrande.sh [WORKDIR]     # default WORKDIR: ${TMPDIR:-/tmp}/racepred-jgf
#
# Exit status: 0 all well; 77 skipped (no RoadRunner benchmarks, no JDK or ASM: the reason
# is printed as `skipped: …`); 1 a recording failed, a trace does not validate or an
# analysis failed.
#
# Environment:
#   ROADRUNNER  a copy of RoadRunner's repository holding benchmarks/*/original.jar: a work
#               tree, or a git directory (the jars are read from its HEAD). Nothing is
#               downloaded: without it the script is skipped.
#   RACEPRED    the racepred binary (default: target/release, then target/debug of this tree)
#   JGF_VALUES  1: record with --values too and validate those traces (default 0)
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
W=${1:-${TMPDIR:-/tmp}/racepred-jgf}
mkdir -p "$W" && W=$(cd "$W" && pwd) || { echo "FAIL: cannot create $W" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

rr=${ROADRUNNER:-}
[ -n "$rr" ] || skip "set ROADRUNNER to a copy of RoadRunner's repository (benchmarks/*/original.jar)"
jar_of() { # BENCH OUT: copies benchmarks/BENCH/original.jar to OUT
    if [ -f "$rr/benchmarks/$1/original.jar" ]; then
        cp "$rr/benchmarks/$1/original.jar" "$2"
    else
        git --git-dir="$rr" show "HEAD:benchmarks/$1/original.jar" > "$2" 2>/dev/null \
            || git -C "$rr" show "HEAD:benchmarks/$1/original.jar" > "$2" 2>/dev/null
    fi
}
command -v javac >/dev/null || skip "no javac (install a JDK)"
RACEPRED=${RACEPRED:-}
if [ -z "$RACEPRED" ]; then
    for b in "$root/target/release/racepred" "$root/target/debug/racepred"; do
        [ -x "$b" ] && { RACEPRED=$b; break; }
    done
fi
[ -n "$RACEPRED" ] || skip "no racepred binary (cargo build --release -p racepred-cli)"
RACEPRED=$(realpath "$(command -v "$RACEPRED")") || { echo "FAIL: no $RACEPRED" >&2; exit 1; }
agent=$W/racepred-agent.jar
bash "$root/java/agent/build.sh" "$agent" >/dev/null 2>"$W/agent.err"
case $? in 0) ;; 77) skip "$(cat "$W/agent.err")" ;; *) cat "$W/agent.err" >&2; exit 1 ;; esac

# bench  class  input size (the first entry of its `datasizes`)
benches="crypt crypt.JGFCryptBench 200000
lufact lufact.JGFLUFactBench 150
moldyn moldyn.JGFMolDynBench 3
montecarlo montecarlo.JGFMonteCarloBench 200
raytracer raytracer.JGFRayTracerBench 10
series series.JGFSeriesBench 10000
sor sor.JGFSORBench 100"

fail=0
while read -r b cls size; do
    d=$W/$b
    mkdir -p "$d/driver"
    jar_of "$b" "$d/$b.jar" && [ -s "$d/$b.jar" ] \
        || skip "$rr has no benchmarks/$b/original.jar"
    javac -d "$d/driver" -cp "$d/$b.jar" "$here/javagrande/JgfDriver.java" || exit 1
    # montecarlo reads Data/hitData from the working directory.
    (cd "$d" && unzip -oq "$b.jar" 'Data/*' 2>/dev/null)
    modes="plain"
    [ "${JGF_VALUES:-0}" = 1 ] && modes="plain values"
    for mode in $modes; do
        flags=()
        [ "$mode" = values ] && flags=(--values)
        t=$d/$b.$mode.rpb
        if ! (cd "$d" && "$RACEPRED" record "${flags[@]}" --agent "$agent" -o "$t" -- \
                java -cp "$b.jar:driver" JgfDriver "$cls" 2 "$size" > "$d/$mode.out" 2> "$d/$mode.err"); then
            echo "FAIL: $b ($mode): recording failed"; cat "$d/$mode.err"; fail=1; continue
        fi
        if ! "$RACEPRED" validate "$t" > "$d/$mode.validate" 2>&1; then
            echo "FAIL: $b ($mode): trace not well-formed"; head -5 "$d/$mode.validate"; fail=1; continue
        fi
        events=$(sed -n 's/.*recorded \([0-9]*\) events.*/\1/p' "$d/$mode.err")
        echo "== $b ($mode): $events events, validates"
        [ "$mode" = values ] && continue
        "$RACEPRED" analyze -a hb -a shb -a wcp "$t" > "$d/report.txt" 2>&1
        code=$?
        if [ "$code" -gt 1 ]; then
            echo "FAIL: $b: analyze exited $code"; tail -5 "$d/report.txt"; fail=1; continue
        fi
        # One line per analysis, then its racy locations.
        grep -E '^(hb|shb|wcp):|^ +[0-9]+x ' "$d/report.txt" | sed 's/  (first:.*//'
    done
done <<< "$benches"
exit $fail
