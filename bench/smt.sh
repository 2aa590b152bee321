#!/usr/bin/env bash
# Times the SMT predictor (`analyze -a mcm`) on the corpus traces and prints, per trace and
# window: wall time, queries per second, sat / unsat / timed-out / skipped / too-large
# counts, races (location pairs) per minute, and the shb racy locations for comparison.
#
# It also checks the promise of windows: every `shbp` race pair (SHB-unordered, a predictable
# race) whose two events lie in one window must have its location pair among `mcm`'s. The
# column in_window says found/total such location pairs; any missing one is listed after the
# row as MISSING (a finding: the predictor or its windows lost a race). A budget-bound run
# or a query that timed out may miss some legitimately; such rows say so.
#
#   bench/smt.sh [WINDOW...]            (default windows: 1000 10000)
#   BUDGET=300 TRACES="jgf_moldyn_mm3_t2 jgf_sor_n100_t4" bench/smt.sh 1000 10000
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
BUDGET=${BUDGET:-300}
WINDOWS=${*:-1000 10000}
cargo build --release -q
R=target/release/racepred
tmp=$(mktemp)
shbp=$(mktemp)
trap 'rm -f "$tmp" "$shbp"' EXIT
if [ -z "${TRACES:-}" ]; then
    TRACES=$(ls "$CORPUS"/*.std.xz | xargs -n1 basename | sed 's/\.std\.xz$//')
fi
printf '%-28s %6s %8s %7s %5s %6s %5s %7s %6s %8s %9s %9s\n' trace window wall_s queries/s sat unsat tmo skipped large races/min shb_locs in_window
for t in $TRACES; do
    f="$CORPUS/$t.std.xz"
    shb=$("$R" analyze -a shb --json --no-locations "$f" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["racy_locations"])' || true)
    "$R" analyze -a shbp --json --no-locations "$f" >"$shbp" 2>/dev/null || true
    for w in $WINDOWS; do
        start=$(date +%s.%N)
        "$R" analyze -a mcm --window "$w" --budget "$BUDGET" --json --no-locations "$f" >"$tmp" 2>/dev/null || true
        end=$(date +%s.%N)
        python3 - "$t" "$w" "$start" "$end" "$shb" "$tmp" "$shbp" <<'PY'
import json, sys
t, w, start, end, shb, path, shbp_path = sys.argv[1:]
wall = float(end) - float(start)
try:
    r = json.load(open(path))
except Exception:
    print(f"{t:<28} {w:>6} {wall:8.1f}  (no report)"); sys.exit()
x = r["extra"]
q = x["sat"] + x["unsat"] + x["timeout"]
races = r["summary"]["location_pairs"]
found = {frozenset((p["first_loc"], p["second_loc"])) for p in r["location_pairs"]}
try:
    s = json.load(open(shbp_path))
    W = int(w)
    inside = {frozenset((p["first_loc"], p["second_loc"]))
              for p in s["pairs"] if p["first"] // W == p["second"] // W}
    capped = s["summary"]["pairs"] > len(s["pairs"])
    check = f"{len(inside & found)}/{len(inside)}" + ("+" if capped else "")
    missing = sorted(tuple(sorted(m)) for m in inside - found)
except Exception:
    check, missing = "?", []
print(f"{t:<28} {w:>6} {wall:8.1f} {q/max(x['seconds'],1e-9):7.1f} {x['sat']:5} {x['unsat']:6} {x['timeout']:5} {x['skipped']:7} {x['too_large']:6} {races/max(wall,1e-9)*60:8.1f} {shb:>9} {check:>9}")
if missing:
    bound = x["timeout"] or any("budget ran out" in str(n) for n in r.get("notes", []))
    note = " (budget-bound or timed-out run)" if bound else ""
    print(f"  MISSING{note}: " + ", ".join("-".join(m) for m in missing[:10]) + (" ..." if len(missing) > 10 else ""))
PY
    done
done
