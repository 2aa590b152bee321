#!/usr/bin/env bash
# pbzip2 1.1.13, traced end to end: fetch Debian's source (without touching the system's apt
# configuration), build it with `g++ -fsanitize=thread -g -O1`, record compressions and
# decompressions of a generated input with `racepred record`, check every round trip,
# validate every trace, analyse each with hb, shb, wcp (racy accesses) and hbp, shbp (race
# pairs), print the races by location, and compare them with the explained ones
# (tests/real/pbzip2.expected; docs/recording.md, "pbzip2, traced end to end").
#
#   tests/real/pbzip2.sh [WORKDIR]        # default WORKDIR: ${TMPDIR:-/tmp}/racepred-pbzip2
#
# Exit status: 0 all well; 77 skipped (no apt-get, no network, no g++ / libtsan / libbz2-dev:
# the reason is printed as `skipped: …`); 1 a recording failed, a round trip differs, a
# trace does not validate, or a race was reported that is not explained.
#
# A race that depends on the schedule may or may not be reported in a given run: the check
# is "reported ⊆ explained", and explained pairs not reported this time are listed.
#
# Environment:
#   RACEPRED            the racepred binary (default: target/release, then target/debug of this
#                       tree, then PATH). Its runtime libracepred_rt.so is found beside it; when
#                       the binary sits in a cargo target dir (…/debug, …/release), the runtime
#                       is (re)built there first with `cargo build -p racepred-rt [--release]`,
#                       as crates/racepred-cli/tests/record.rs does. RACEPRED_RT overrides.
#   PBZIP2_MIRROR       Debian mirror (default http://deb.debian.org/debian)
#   PBZIP2_INPUT_BYTES  size of the generated input (default 4000000; decompression uses
#                       threads only for compressed files of 1 MB and more)
#   PBZIP2_KEEP_TRACES  1 (default) keeps WORKDIR/traces/*.rpb; 0 deletes each after analysis
#
# WORKDIR keeps the downloaded source and the build between runs (bench/record.sh reuses it).
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
W=${1:-${TMPDIR:-/tmp}/racepred-pbzip2}
mkdir -p "$W" && W=$(cd "$W" && pwd) || { echo "FAIL: cannot create $W" >&2; exit 1; }
mirror=${PBZIP2_MIRROR:-http://deb.debian.org/debian}
bytes=${PBZIP2_INPUT_BYTES:-4000000}
keep=${PBZIP2_KEEP_TRACES:-1}
expected=$here/pbzip2.expected
version=1.1.13
src=$W/pbzip2-$version

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- racepred and its runtime ----------------------------------------------------------
R=${RACEPRED:-}
if [ -z "$R" ]; then
    for c in "$root/target/release/racepred" "$root/target/debug/racepred"; do
        [ -x "$c" ] && { R=$c; break; }
    done
fi
[ -n "$R" ] || R=$(command -v racepred) ||
    fail "no racepred binary: run \`cargo build --release\` or set RACEPRED"
R=$(cd "$(dirname "$R")" && pwd)/$(basename "$R")
[ -x "$R" ] || fail "RACEPRED=$R is not executable"
bindir=$(dirname "$R")
if [ -n "${RACEPRED_RT:-}" ]; then
    [ -f "$RACEPRED_RT" ] || fail "RACEPRED_RT=$RACEPRED_RT does not exist"
else
    case $bindir in
    */release | */debug)
        cargo=${CARGO:-cargo}
        if command -v "$cargo" >/dev/null; then
            rel=()
            case $bindir in */release) rel=(--release) ;; esac
            (cd "$root" && "$cargo" build -q -p racepred-rt "${rel[@]}") ||
                fail "cargo build -p racepred-rt ${rel[*]} failed"
        fi
        ;;
    esac
    [ -f "$bindir/libracepred_rt.so" ] ||
        fail "no $bindir/libracepred_rt.so: build it with \`cargo build -p racepred-rt\` (--release for a release racepred) or set RACEPRED_RT"
fi

# --- toolchain -------------------------------------------------------------------------
command -v apt-get >/dev/null || skip "no apt-get (needed to fetch pbzip2's Debian source)"
command -v g++ >/dev/null || skip "no g++"
command -v gcc >/dev/null || skip "no gcc"
mkdir -p "$W/probe"
printf '#include <bzlib.h>\nint main(void) { return BZ2_bzlibVersion() == 0; }\n' >"$W/probe/p.cc"
g++ -fsanitize=thread -o "$W/probe/p" "$W/probe/p.cc" -lbz2 >"$W/probe/log" 2>&1 ||
    skip "\`g++ -fsanitize=thread … -lbz2\` does not build (g++, libtsan or libbz2-dev missing): $(head -c 300 "$W/probe/log")"

# --- source ----------------------------------------------------------------------------
tarball=$W/src/pbzip2_$version.orig.tar.gz
if [ ! -s "$tarball" ]; then
    mkdir -p "$W/src" "$W/apt/lists/partial" "$W/apt/cache/archives/partial"
    echo "deb-src $mirror bookworm main" >"$W/apt/sources.list"
    O=(-o "Dir::Etc::SourceList=$W/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$W/apt/lists" -o "Dir::Cache=$W/apt/cache"
        -o Acquire::Retries=0 -o Acquire::http::Timeout=30)
    echo "fetching pbzip2 $version (Debian bookworm source) from $mirror"
    if ! apt-get "${O[@]}" update >"$W/apt/update.log" 2>&1 ||
        grep -q '^[WE]: Failed to fetch' "$W/apt/update.log"; then
        skip "cannot fetch the Debian source index from $mirror (no network?): $(grep -m1 '^[WE]:' "$W/apt/update.log")"
    fi
    if ! (cd "$W/src" && apt-get "${O[@]}" source --download-only "pbzip2=$version-1") \
        >"$W/apt/source.log" 2>&1 || [ ! -s "$tarball" ]; then
        skip "cannot download pbzip2_$version's source: $(grep -m1 '^E:' "$W/apt/source.log")"
    fi
fi
if [ ! -f "$src/pbzip2.cpp" ]; then
    tar -xzf "$tarball" -C "$W" || fail "cannot unpack $tarball"
fi

# --- build -----------------------------------------------------------------------------
pb=$src/pbzip2.tsan
if [ ! -x "$pb" ] || [ "$pb" -ot "$src/pbzip2.cpp" ]; then
    echo "building pbzip2 with g++ -fsanitize=thread -g -O1"
    (cd "$src" && g++ -fsanitize=thread -g -O1 -w -pthread -D_LARGEFILE64_SOURCE \
        -D_FILE_OFFSET_BITS=64 -DUSE_STACKSIZE_CUSTOMIZATION \
        pbzip2.cpp BZ2StreamScanner.cpp ErrorContext.cpp -o pbzip2.tsan -lbz2 -lpthread) \
        >"$W/build.log" 2>&1 || skip "pbzip2 does not build: $(tail -c 400 "$W/build.log")"
fi

# --- input -----------------------------------------------------------------------------
# A seeded mix of words, numbers and random tokens (bzip2 ratio about 2.2), and the same
# compressed by libbz2 into one stream of 900k blocks (as `bzip2 -9`), which pbzip2 splits
# into parts per block and whose blocks decompress in several output parts.
T=$W/traces
mkdir -p "$T"
cat >"$W/gen.c" <<'EOF'
#include <bzlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned long long s;
static unsigned next(void) {
  s = s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)(s >> 33);
}
int main(int argc, char **argv) {
  static const char *w[] = {"race", "thread", "lock", "mutex", "signal", "queue", "block",
    "buffer", "compress", "stream", "the", "of", "and", "to", "a", "in", "is", "that", "for",
    "it", "with", "as", "on", "be", "at", "by", "this", "had", "not", "are", "but", "from",
    "or", "have", "an", "they", "which", "one"};
  static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
  if (argc > 1 && strcmp(argv[1], "--bz2") == 0) { /* stdin -> one bzip2 stream on stdout */
    int e;
    static char buf[1 << 16];
    size_t n;
    BZFILE *b = BZ2_bzWriteOpen(&e, stdout, 9, 0, 0);
    while (e == BZ_OK && (n = fread(buf, 1, sizeof buf, stdin)) > 0) BZ2_bzWrite(&e, b, buf, n);
    BZ2_bzWriteClose(&e, b, 0, 0, 0);
    return e != BZ_OK;
  }
  unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 4000000, i = 0;
  s = argc > 2 ? strtoull(argv[2], 0, 10) : 42;
  while (i < n) {
    unsigned r = next();
    if (r % 5 == 0) {
      int k = 4 + r % 9;
      while (k--) { putchar(al[next() % 64]); i++; }
    } else if (r % 7 == 0) {
      i += printf("%u", next() % 1000000);
    } else {
      const char *x = w[r % (sizeof w / sizeof *w)];
      while (*x) putchar(*x++), i++;
    }
    putchar(r % 11 == 0 ? '\n' : ' ');
    i++;
  }
  return 0;
}
EOF
gcc -O2 -o "$W/gen" "$W/gen.c" -lbz2 || fail "cannot build the input generator"
"$W/gen" "$bytes" 42 >"$T/in.txt" && "$W/gen" --bz2 <"$T/in.txt" >"$T/single.bz2" ||
    fail "cannot generate the input"

# --- record, validate, analyse ---------------------------------------------------------
: >"$T/races.tsv"
: >"$T/runs.txt"
# races MODE REPORT: appends the races of the text reports in REPORT to races.tsv as
# MODE ANALYSIS KIND LOCATION [LOCATION] (locations relative to the source directory).
races() {
    awk -v mode="$1" -v strip="$src/" '
        function rel(l) { return index(l, strip) == 1 ? substr(l, length(strip) + 1) : l }
        /^[a-z-]+: / { an = substr($1, 1, length($1) - 1); next }
        /^ +[0-9]+x +[rw]\(/ { print mode "\t" an "\t" substr($2, 1, 1) "\t" rel($4) "\t-"; next }
        /^ +[0-9]+x +(write-write|write-read|read-write) / { print mode "\t" an "\t" $2 "\t" rel($5) "\t" rel($7) }
    ' "$2" >>"$T/races.tsv"
}
# run NAME EXIT STDIN STDOUT ARGS…: record pbzip2 ARGS (in $T) into NAME.rpb; its exit
# status must be EXIT; validate; analyse; append the races to races.tsv as
# MODE ANALYSIS KIND LOCATION [LOCATION].
run() {
    local name=$1 want=$2 in=$3 out=$4 rc
    shift 4
    (cd "$T" && "$R" record -o "$name.rpb" -- "$pb" "$@" <"$in" >"$out" 2>"$name.log")
    rc=$?
    [ "$rc" = "$want" ] ||
        fail "$name: \`pbzip2 $*\` under racepred record exited $rc, expected $want: $(tail -n 5 "$T/$name.log")"
    local code=$rc
    grep -q '^racepred: recorded' "$T/$name.log" || fail "$name: no trace written: $(tail -n 5 "$T/$name.log")"
    "$R" validate "$T/$name.rpb" >"$T/$name.validate" 2>&1 ||
        fail "$name: the trace does not validate: $(head -n 5 "$T/$name.validate")"
    "$R" analyze -a hb -a shb -a wcp -a hbp -a shbp "$T/$name.rpb" >"$T/$name.races" 2>&1
    rc=$?
    [ "$rc" -le 1 ] || fail "$name: racepred analyze failed: $(head -n 5 "$T/$name.races")"
    races "$name" "$T/$name.races"
    local stats ev th n
    stats=$("$R" stats "$T/$name.rpb")
    ev=$(awk '$1 == "events" { print $2 }' <<<"$stats")
    th=$(awk '$1 == "threads" { print $2 }' <<<"$stats")
    n=$(awk -v m="$name" '$1 == m' "$T/races.tsv" | wc -l)
    printf '%-24s exit %s  %8s events  %2s threads  %2s race lines  pbzip2 %s\n' \
        "$name" "$code" "$ev" "$th" "$n" "$*" | tee -a "$T/runs.txt"
    [ "$keep" = 1 ] || rm -f "$T/$name.rpb"
}
same() { cmp -s "$T/$1" "$T/in.txt" || fail "$2: the output differs from the input"; }

cp /dev/null "$T/empty"
run compress-p2 0 empty c-p2.bz2 -p2 -c -k in.txt
run compress-p4 0 empty c-p4.bz2 -p4 -b1 -c -k in.txt
run compress-p4-m1 0 empty c-p4-m1.bz2 -p4 -b1 -m1 -c -k in.txt
run compress-p4-stdin 0 in.txt c-p4-stdin.bz2 -p4 -b1 -c
run decompress-p2 0 empty d-p2.out -d -p2 -c -k c-p2.bz2 && same d-p2.out decompress-p2
run decompress-p4 0 empty d-p4.out -d -p4 -c -k c-p4.bz2 && same d-p4.out decompress-p4
run decompress-p4-m1 0 empty d-p4-m1.out -d -p4 -m1 -c -k c-p4-m1.bz2 && same d-p4-m1.out decompress-p4-m1
run decompress-p4-stdin 0 c-p4-stdin.bz2 d-p4-stdin.out -d -p4 -c && same d-p4-stdin.out decompress-p4-stdin
run decompress-p4-single 0 empty d-p4-single.out -d -p4 -c -k single.bz2 && same d-p4-single.out decompress-p4-single
run decompress-p4-single-m1 0 empty d-p4-single-m1.out -d -p4 -m1 -c -k single.bz2 &&
    same d-p4-single-m1.out decompress-p4-single-m1
run test-p4 0 empty test-p4.out -t -p4 c-p4.bz2
# A damaged block: a consumer reports the error, the terminator thread ends the process
# while the other threads still run; pbzip2 exits 1.
cp "$T/c-p4.bz2" "$T/corrupt.bz2"
printf 'XXXXXXXXXXXXXXXX' | dd of="$T/corrupt.bz2" bs=1 seek=900000 conv=notrunc status=none
run decompress-p4-corrupt 1 empty d-p4-corrupt.out -d -p4 -c -k corrupt.bz2
# When this schedule shows the race with exit's destruction of the global vector, the
# free's stack names the destructor that freed the slots (std::vector's, which exit ran).
if grep -q 'new_allocator.h:158:26' "$T/decompress-p4-corrupt.races"; then
    grep -q 'called from [^ ]*new_allocator.h:158:26 in std::vector<.*>::~vector()' \
        "$T/decompress-p4-corrupt.races" ||
        fail "decompress-p4-corrupt: the delete's stack does not name std::vector's destructor: $(grep -m3 'called from' "$T/decompress-p4-corrupt.races")"
    echo "decompress-p4-corrupt: the delete's stack names std::vector's destructor"
fi

# The analysis inside the program (`record --online fasttrack`): its racy accesses go into
# the same check (mode `online-fasttrack`).
(cd "$T" && "$R" record --online fasttrack -o online.races -- "$pb" -d -p4 -m1 -c -k c-p4-m1.bz2 \
    >online.out 2>online.log) || fail "online: \`racepred record --online fasttrack\` failed: $(tail -n 5 "$T/online.log")"
grep -q '^fasttrack: ' "$T/online.races" || fail "online: no report in $T/online.races"
same online.out online-fasttrack
races online-fasttrack "$T/online.races"
printf '%-24s %s\n' online-fasttrack "$(head -n 1 "$T/online.races")" | tee -a "$T/runs.txt"

# --- summary and check -----------------------------------------------------------------
# Columns: location, location (or `*` first: any location paired with the second), verdict,
# and optionally the one recorded mode the line is for.
grep -v '^#' "$expected" | awk 'NF >= 3 { print $1 "\t" $2 "\t" $3 "\t" $4 }' >"$T/expected.tsv"
echo
echo "races by location pair (pair analyses hbp, shbp; mode: analyses):"
awk -F'\t' '$5 != "-" {
        k = $4 " -> " $5 " (" $3 ")"
        if (!(k in seen)) { seen[k] = 1; order[++n] = k }
        if (!((k, $1) in m)) { m[k, $1] = $2; modes[k] = modes[k] " " $1 ":" } else m[k, $1] = m[k, $1] "," $2
    }
    END {
        if (n == 0) print "  (none)"
        for (i = 1; i <= n; i++) {
            k = order[i]; line = ""; c = split(modes[k], ms, " ")
            for (j = 1; j <= c; j++) { md = substr(ms[j], 1, length(ms[j]) - 1); line = line "  " md ":" m[k, md] }
            print "  " k ";" line
        }
    }' "$T/races.tsv"
echo "racy accesses (racy-event analyses hb, shb, wcp; mode: analyses; partner from pbzip2.expected):"
awk -F'\t' 'NR == FNR { p[$1] = p[$1] " " $2; p[$2] = p[$2] " " $1; next }
    $5 == "-" {
        k = $3 " " $4
        if (!(k in seen)) { seen[k] = 1; order[++n] = k; loc[k] = $4 }
        if (!((k, $1) in m)) { m[k, $1] = $2; modes[k] = modes[k] " " $1 } else m[k, $1] = m[k, $1] "," $2
    }
    END {
        if (n == 0) print "  (none)"
        for (i = 1; i <= n; i++) {
            k = order[i]; line = ""; c = split(modes[k], ms, " ")
            for (j = 1; j <= c; j++) line = line "  " ms[j] ":" m[k, ms[j]]
            print "  " k ";" line "  [with" (loc[k] in p ? p[loc[k]] : " ?") "]"
        }
    }' "$T/expected.tsv" "$T/races.tsv"

awk -F'\t' 'NR == FNR {
        if ($1 == "*") { any[$2 "|" $4] = 1; next }
        pair[$1 "|" $2] = 1; pair[$2 "|" $1] = 1; at[$1] = 1; at[$2] = 1; next
    }
    $5 != "-" && !(($4 "|" $5) in pair) && !(($4 "|" $1) in any) && !(($5 "|" $1) in any) {
        print "  " $1 ": " $2 " " $3 " " $4 " -> " $5
    }
    $5 == "-" && !($4 in at) && !(($4 "|" $1) in any) { print "  " $1 ": " $2 " " $3 " at " $4 }' \
    "$T/expected.tsv" "$T/races.tsv" | sort -u >"$T/unexplained.txt"
awk -F'\t' 'NR == FNR { if ($5 != "-") { got[$4 "|" $5] = 1; got[$5 "|" $4] = 1 } else got[$4] = 1; next }
    !(($1 "|" $2) in got) && !($1 in got) && !($2 in got) { print "  " $1 " <-> " $2 " (" $3 ")" }' \
    "$T/races.tsv" "$T/expected.tsv" >"$T/absent.txt"
if [ -s "$T/absent.txt" ]; then
    echo "explained pairs not reported in this run, neither as a pair nor as a racy access at either location (they depend on the schedule):"
    cat "$T/absent.txt"
fi
if [ -s "$T/unexplained.txt" ]; then
    echo "UNEXPLAINED races (not in $expected):"
    cat "$T/unexplained.txt"
    fail "$(wc -l <"$T/unexplained.txt") unexplained race report(s); traces and reports in $T"
fi
echo "ok: $(wc -l <"$T/runs.txt") recordings of pbzip2 $version validate and round-trip; every reported race is explained (reports in $T/*.races)"
