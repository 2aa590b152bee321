// A long run: four threads each make millions of accesses to their own array and update a
// shared total under a mutex between passes, so the trace is written while the program
// runs. One race: a fifth thread, which never synchronises, writes `early` first thing;
// main reads it late, after joining the first worker. At the end the program prints its
// own peak resident memory (VmHWM, kB), which holds everything the runtime keeps.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define LEN 4096
#define PASSES 600

static long total;
static int early;
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

static void *loner(void *arg) {
  early = 1; // RACE-EARLY
  int *a = malloc(LEN * sizeof *a);
  long s = 0;
  for (int i = 0; i < LEN; i++) a[i] = i;
  for (int p = 0; p < PASSES / 4; p++)
    for (int i = 0; i < LEN; i++) s += a[i];
  free(a);
  return (void *)(s & 1);
}

static long peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

int main(void) {
  pthread_t t[THREADS], l;
  pthread_create(&l, 0, loner, 0);
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
  // Late: after most of the run (main waits for the first worker).
  pthread_join(t[0], 0);
  int e = early; // RACE-LATE
  for (int i = 1; i < THREADS; i++) pthread_join(t[i], 0);
  pthread_join(l, 0);
  printf("%ld %d %ld\n", total, e, peak_kb());
  return 0;
}
