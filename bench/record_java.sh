#!/usr/bin/env bash
# Overhead of `racepred record -- java`: bench/java/Sum.java (4 threads summing a shared
# array, a monitor every 16 elements) run natively, recorded, and recorded with values
# (`record --values`), for a few pass counts.
#
#   bench/record_java.sh [-n RUNS] [WORKDIR]
#
# Times are wall-clock seconds, best of RUNS (default 3), JVM start included; peak RSS from
# GNU time. Prints a markdown table: passes, native, recorded (x native), peak RSS, the
# trace's events and size, and the agent's own "to write" time (merging and writing at exit);
# then the same for --values. $PASSES (default "10 40 160") chooses the pass counts.
#
# Environment: RACEPRED (default target/release/racepred, built if missing). The agent is
# built into WORKDIR by java/agent/build.sh (needs a JDK and libasm-java; exit 77 without).

set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/common.sh"
bench_setup bench-record-java "$@"
mkdir -p "$W/classes"
if [ ! -x "$RACEPRED" ]; then
    (cd "$ROOT" && cargo build --release -q -p racepred-cli) || exit 1
fi
bash "$ROOT/java/agent/build.sh" "$W/racepred-agent.jar" || exit $?
javac -d "$W/classes" "$ROOT/bench/java/Sum.java" || exit 1

# best SECONDS and peak KB of RUNS runs of a command (its stderr kept in $W/err).
best() {
    local b="" m=0
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$W/time" "$@" > /dev/null 2> "$W/err" || { cat "$W/err" >&2; return 1; }
        read -r s k < "$W/time"
        if [ -z "$b" ] || awk "BEGIN{exit !($s < $b)}"; then b=$s; fi
        [ "$k" -gt "$m" ] && m=$k
    done
    echo "$b $m"
}

echo "| passes | mode | native s | recorded s | x native | peak RSS recorded | events | trace | writing at exit |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for passes in ${PASSES:-10 40 160}; do
    read -r n nk < <(best java -cp "$W/classes" Sum $passes)
    for mode in plain values; do
        flags=()
        [ "$mode" = values ] && flags=(--values)
        read -r r rk < <(best "$RACEPRED" record "${flags[@]}" --agent "$W/racepred-agent.jar" -o "$W/sum.rpb" -- java -cp "$W/classes" Sum $passes)
        events=$(sed -n 's/.*recorded \([0-9]*\) events.*/\1/p' "$W/err")
        wsec=$(sed -n 's/.*(\([0-9.]*\) s to write).*/\1/p' "$W/err")
        size=$(du -h "$W/sum.rpb" | cut -f1)
        x=$(awk "BEGIN{printf \"%.1f\", $r / $n}")
        echo "| $passes | $mode | $n | $r | $x | $((rk / 1024)) MB | $events | $size | $wsec s |"
    done
done
