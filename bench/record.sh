#!/usr/bin/env bash
# Overhead of `racepred record` and `racepred record --online`: the same programs and inputs
# run natively (no instrumentation), under gcc's ThreadSanitizer (the real libtsan.so.2),
# recorded (the trace written as the program runs), and with FastTrack and PACER at 1%
# running online.
#
#   bench/record.sh [-n RUNS] [WORKDIR]
#
# Programs: `sum`, a C program of 4 threads summing arrays (50 passes over 4 x 100 000
# ints, a mutex between passes): almost every instruction an instrumented access, the worst
# case for any runtime; `barnes`, a Barnes-Hut-like n-body loop (2 048 bodies, 4 worker
# threads, 6 steps: main builds a quadtree, the workers walk it for forces and move their
# bodies, barriers between the phases); pbzip2 (from Debian's source, built by
# tests/real/pbzip2.sh into WORKDIR; skipped if it cannot be fetched) compressing and
# decompressing a 20 MB text with 2 threads. Then peak memory alone: `sum` with 250 passes
# (10^8 instrumented reads), and `sparse`, one write per 4 KiB page of 512 MiB. Times are
# wall-clock seconds, best of RUNS (default 3); peak RSS from GNU time (bash 5 for
# $EPOCHREALTIME). Prints a markdown table per program: seconds, x native, x tsan, peak
# RSS, and for `record` the trace's events and size. Where the program's instrumentation
# calls only plain hooks (accesses, calls, returns), a row "empty hooks" runs the
# ThreadSanitizer binary against a libtsan.so.2 whose every hook returns at once: the cost
# of the instrumentation's calls alone, which no runtime can go below.
#
# Environment: RACEPRED (default target/release/racepred, built if missing).

set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/common.sh"
bench_setup bench-record "$@"
if [ ! -x "$RACEPRED" ] || [ ! -f "$(dirname "$RACEPRED")/libracepred_rt.so" ]; then
    (cd "$ROOT" && cargo build --release -q) || exit 1
fi
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)"; exit 1; }
export TSAN_OPTIONS=${TSAN_OPTIONS:-exitcode=0:report_signal_unsafe=0}

# best SECONDS and its peak RSS (KiB) of RUNS runs of: CMD... (stdin from $IN, stdout to $OUT);
# wall time from bash's microsecond clock (GNU time's is in hundredths), RSS from GNU time.
measure() {
    local best="" rss=""
    local t0 t1 s m
    for _ in $(seq "$RUNS"); do
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%M" -o "$W/time.txt" "$@" <"$IN" >"$OUT" 2>"$W/err.txt" || true
        t1=$EPOCHREALTIME
        s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        m=$(tail -1 "$W/time.txt")
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
            rss=$m
        fi
    done
    echo "$best $rss"
}

# A libtsan.so.2 whose every hook returns at once, for PROG (built with -fsanitize=thread):
# prints the directory holding it, or nothing if PROG imports a hook that must do its work
# (an atomic, a memcpy, an interposed pthread call) or the stub does not build. The program
# run against it pays the instrumentation's calls and nothing else: no runtime can cost less.
empty_hooks() {
    local prog=$1 dir="$W/empty-hooks-$(basename "$1")" sym
    local plain='^__tsan_((unaligned_|volatile_|unaligned_volatile_)?(read|write)[0-9]+(_pc)?|(read|write)_range(_pc)?|func_(entry|exit)|init|vptr_(read|update)|ignore_thread_(begin|end))$'
    mkdir -p "$dir"
    : >"$dir/stub.c"
    for sym in $(nm -D --undefined-only "$prog" | awk '$2 ~ /^__tsan_/ { print $2 }'); do
        [[ $sym =~ $plain ]] || return 0
        echo "void $sym(void) {}" >>"$dir/stub.c"
    done
    gcc -O2 -shared -fPIC "$dir/stub.c" -o "$dir/libtsan.so.2" 2>/dev/null && echo "$dir"
}

# table TITLE NATIVE-CMD TSAN-CMD (arrays passed by name)
table() {
    local title=$1 native=$2 tsan=$3
    local -n nat=$native ts=$tsan
    echo
    echo "### $title"
    echo
    echo "| configuration | seconds | × native | × tsan | peak RSS | notes |"
    echo "|---|---|---|---|---|---|"
    read -r n_s n_m < <(measure "${nat[@]}")
    read -r t_s t_m < <(measure "${ts[@]}")
    row() { # name seconds rss notes
        local x1 x2
        x1=$(awk -v a="$2" -v b="$n_s" 'BEGIN { printf "%.1f", a / b }')
        x2=$(awk -v a="$2" -v b="$t_s" 'BEGIN { printf "%.2f", a / b }')
        echo "| $1 | $2 | $x1 | $x2 | $(($3 / 1024)) MiB | $4 |"
    }
    row "native (no -fsanitize)" "$n_s" "$n_m" ""
    local stub
    stub=$(empty_hooks "${ts[0]}")
    if [ -n "$stub" ]; then
        read -r e_s e_m < <(measure env LD_LIBRARY_PATH="$stub" "${ts[@]}")
        row "empty hooks (the -fsanitize=thread binary, every hook returning at once)" "$e_s" "$e_m" "the floor"
    fi
    row "gcc ThreadSanitizer" "$t_s" "$t_m" "race detection"
    read -r r_s r_m < <(measure "$RACEPRED" record -o "$W/t.rpb" -- "${ts[@]}")
    local ev size
    ev=$("$RACEPRED" stats "$W/t.rpb" 2>/dev/null | awk '$1 == "events" { print $2 }')
    size=$(du -m "$W/t.rpb" | cut -f1)
    row "racepred record" "$r_s" "$r_m" "$ev events, $size MB trace"
    read -r f_s f_m < <(measure "$RACEPRED" record --online fasttrack -o "$W/ft.txt" -- "${ts[@]}")
    row "record --online fasttrack" "$f_s" "$f_m" "$(head -1 "$W/ft.txt" | sed 's/ of .*//')"
    read -r p_s p_m < <(measure "$RACEPRED" record --online pacer --rate 0.01 -o "$W/pacer.txt" -- "${ts[@]}")
    row "record --online pacer --rate 0.01" "$p_s" "$p_m" "$(head -1 "$W/pacer.txt" | sed 's/ of .*//')"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); runs: best of $RUNS; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- sum.c --------------------------------------------------------------------------------
cat >"$W/sum.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 4
#define LEN 100000
#define PASSES 50
static long total;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *worker(void *arg) {
  long id = (long)arg, s = 0;
  int *a = malloc(LEN * sizeof *a);
  for (int i = 0; i < LEN; i++) a[i] = i ^ id;
  for (int p = 0; p < PASSES; p++) {
    for (int i = 0; i < LEN; i++) s += a[i];
    pthread_mutex_lock(&m);
    total += s & 0xff;
    pthread_mutex_unlock(&m);
  }
  free(a);
  return 0;
}
int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], 0);
  printf("%ld\n", total);
  return 0;
}
EOF
gcc -O1 -g "$W/sum.c" -o "$W/sum-native" -lpthread &&
    gcc -fsanitize=thread -O1 -g "$W/sum.c" -o "$W/sum-tsan" -lpthread || exit 1
IN=/dev/null OUT=/dev/null
# shellcheck disable=SC2034
SUM_NATIVE=("$W/sum-native") SUM_TSAN=("$W/sum-tsan")
table "sum: 4 threads, 2·10^7 instrumented reads" SUM_NATIVE SUM_TSAN

# --- barnes.c -----------------------------------------------------------------------------
cat >"$W/barnes.c" <<'EOF'
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 4
#define BODIES 2048
#define STEPS 6
typedef struct { double x, y, vx, vy, m; } Body;
typedef struct Cell { double x0, y0, size, cx, cy, m; int body; struct Cell *kid[4]; } Cell;
static Body b[BODIES];
static Cell *pool;
static int used;
static Cell *root;
static pthread_barrier_t bar;
static Cell *cell(double x0, double y0, double size) {
  Cell *c = &pool[used++];
  c->x0 = x0, c->y0 = y0, c->size = size, c->cx = c->cy = c->m = 0, c->body = -1;
  for (int i = 0; i < 4; i++) c->kid[i] = 0;
  return c;
}
static void insert(Cell *c, int i, int depth) {
  int leaf = c->body >= 0, empty = c->m == 0;
  c->cx = (c->cx * c->m + b[i].x * b[i].m) / (c->m + b[i].m);
  c->cy = (c->cy * c->m + b[i].y * b[i].m) / (c->m + b[i].m);
  c->m += b[i].m;
  if (empty) {
    c->body = i;
    return;
  }
  if (depth > 40) return;
  double h = c->size / 2;
  int ks[2] = {leaf ? c->body : -1, i};
  c->body = -2;
  for (int j = 0; j < 2; j++) {
    int k = ks[j];
    if (k < 0) continue;
    int q = (b[k].x >= c->x0 + h) + 2 * (b[k].y >= c->y0 + h);
    if (!c->kid[q]) c->kid[q] = cell(c->x0 + h * (q & 1), c->y0 + h * (q >> 1), h);
    insert(c->kid[q], k, depth + 1);
  }
}
static void force(Cell *c, int i, double *ax, double *ay) {
  if (!c || c->m == 0 || c->body == i) return;
  double dx = c->cx - b[i].x, dy = c->cy - b[i].y, d = sqrt(dx * dx + dy * dy) + 0.01;
  if (c->body >= 0 || c->size / d < 0.5) {
    *ax += c->m * dx / (d * d * d), *ay += c->m * dy / (d * d * d);
    return;
  }
  for (int q = 0; q < 4; q++) force(c->kid[q], i, ax, ay);
}
static void *worker(void *arg) {
  long id = (long)arg;
  for (int s = 0; s < STEPS; s++) {
    pthread_barrier_wait(&bar); /* main built the tree */
    for (int i = id; i < BODIES; i += THREADS) {
      double ax = 0, ay = 0;
      force(root, i, &ax, &ay);
      b[i].vx += ax * 1e-4, b[i].vy += ay * 1e-4;
    }
    pthread_barrier_wait(&bar); /* forces done */
    for (int i = id; i < BODIES; i += THREADS) b[i].x += b[i].vx * 1e-3, b[i].y += b[i].vy * 1e-3;
    pthread_barrier_wait(&bar); /* bodies moved */
  }
  return 0;
}
int main(void) {
  pthread_t t[THREADS];
  pool = malloc(sizeof(Cell) * BODIES * 48);
  srand(1);
  for (int i = 0; i < BODIES; i++)
    b[i] = (Body){rand() / (double)RAND_MAX, rand() / (double)RAND_MAX, 0, 0, 1};
  pthread_barrier_init(&bar, 0, THREADS + 1);
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
  for (int s = 0; s < STEPS; s++) {
    used = 0;
    root = cell(-1, -1, 3);
    for (int i = 0; i < BODIES; i++)
      if (b[i].x > -1 && b[i].x < 2 && b[i].y > -1 && b[i].y < 2) insert(root, i, 0);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], 0);
  printf("%.6f %.6f\n", b[0].x, b[0].y);
  return 0;
}
EOF
gcc -O1 -g "$W/barnes.c" -o "$W/barnes-native" -lpthread -lm &&
    gcc -fsanitize=thread -O1 -g "$W/barnes.c" -o "$W/barnes-tsan" -lpthread -lm || exit 1
# shellcheck disable=SC2034
B_NATIVE=("$W/barnes-native") B_TSAN=("$W/barnes-tsan")
table "barnes: 2 048 bodies, 4 threads, 6 steps" B_NATIVE B_TSAN

# --- pbzip2 -------------------------------------------------------------------------------
if RACEPRED=$RACEPRED PBZIP2_KEEP_TRACES=0 bash "$ROOT/tests/real/pbzip2.sh" "$W/pbzip2" >"$W/pbzip2.log" 2>&1; then
    S=$W/pbzip2/pbzip2-1.1.13
    FLAGS=(-g -O1 -w -pthread -D_LARGEFILE64_SOURCE -D_FILE_OFFSET_BITS=64 -DUSE_STACKSIZE_CUSTOMIZATION)
    (cd "$S" && g++ "${FLAGS[@]}" pbzip2.cpp BZ2StreamScanner.cpp ErrorContext.cpp \
        -o "$W/pbzip2-native" -lbz2 -lpthread) || exit 1
    for _ in $(seq 5); do cat "$W/pbzip2/traces/in.txt"; done >"$W/big.txt"
    "$W/pbzip2-native" -p2 -c <"$W/big.txt" >"$W/big.txt.bz2"
    IN=$W/big.txt OUT=/dev/null
    # shellcheck disable=SC2034
    C_NATIVE=("$W/pbzip2-native" -p2 -c) C_TSAN=("$S/pbzip2.tsan" -p2 -c)
    table "pbzip2 -p2 -c: compress 20 MB" C_NATIVE C_TSAN
    IN=$W/big.txt.bz2
    # shellcheck disable=SC2034
    D_NATIVE=("$W/pbzip2-native" -p2 -d -c) D_TSAN=("$S/pbzip2.tsan" -p2 -d -c)
    table "pbzip2 -p2 -d -c: decompress to 20 MB" D_NATIVE D_TSAN
else
    echo
    echo "pbzip2: $(tail -1 "$W/pbzip2.log")"
fi

# --- memory alone ---------------------------------------------------------------------------
# peak RSS (MiB) of one run of CMD...
peak() {
    /usr/bin/time -f "%M" -o "$W/time.txt" "$@" </dev/null >/dev/null 2>"$W/err.txt" || true
    echo $(($(tail -1 "$W/time.txt") / 1024))
}
sed 's/#define PASSES 50/#define PASSES 250/' "$W/sum.c" >"$W/sum250.c"
gcc -fsanitize=thread -O1 -g "$W/sum250.c" -o "$W/sum250-tsan" -lpthread || exit 1
cat >"$W/sparse.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#define SIZE (512L << 20)
int main(void) {
  char *p = malloc(SIZE);
  for (long i = 0; i < SIZE; i += 4096) p[i] = (char)i;
  long s = 0;
  for (long i = 0; i < SIZE; i += 4096) s += p[i];
  printf("%ld\n", s);
  return 0;
}
EOF
gcc -O1 -g "$W/sparse.c" -o "$W/sparse-native" &&
    gcc -fsanitize=thread -O1 -g "$W/sparse.c" -o "$W/sparse-tsan" || exit 1
echo
echo "### peak memory (one run each)"
echo
echo "| program | native | gcc ThreadSanitizer | racepred record | record --online fasttrack |"
echo "|---|---|---|---|---|"
echo "| sum, 250 passes (10^8 reads) | - | $(peak "$W/sum250-tsan") MiB | $(peak "$RACEPRED" record -o "$W/t250.rpb" -- "$W/sum250-tsan") MiB | $(peak "$RACEPRED" record --online fasttrack -o "$W/ft250.txt" -- "$W/sum250-tsan") MiB |"
rm -f "$W/t250.rpb"
echo "| sparse: a write per 4 KiB page of 512 MiB | $(peak "$W/sparse-native") MiB | $(peak "$W/sparse-tsan") MiB | $(peak "$RACEPRED" record -o "$W/sp.rpb" -- "$W/sparse-tsan") MiB | $(peak "$RACEPRED" record --online fasttrack -o "$W/sp.txt" -- "$W/sparse-tsan") MiB |"
