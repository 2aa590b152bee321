/* Threads one after another, not joined until all have run: nothing but the order they
 * run in orders them, so they race, and the order the online analysis sees is the
 * program's. Each reads and writes the same data many times between its synchronisation
 * events, the repeats the hook skips for online FastTrack: its report (races, event
 * numbers, events, counters) is the same with and without skipping them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int shared[512];
static double grid[64][64];
static int ran, leave; /* touched only by uninstrumented code */

__attribute__((no_sanitize_thread)) static void set(int *p, int v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}
__attribute__((no_sanitize_thread)) static void await(int *p, int v) {
  while (__atomic_load_n(p, __ATOMIC_SEQ_CST) != v) {
  }
}

static void *work(void *arg) {
  long id = (long)arg;
  double s = 0;
  int *own = malloc(1000 * sizeof *own);
  for (int p = 0; p < 30; p++) {
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 1000; i++) own[i] = own[i] * k + i + p;
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j += 1 + (int)id) s += grid[i][j];
    for (int i = 0; i < 512; i += 1 + p % 3) shared[i] += (int)id; /* REPEATS-RACE */
    if (p % 7 == 0) {
      pthread_mutex_lock(&m);
      shared[1]++;
      pthread_mutex_unlock(&m);
    }
    if (p % 11 == 0) free(malloc(64));
  }
  grid[id][id] = s;
  free(own);
  /* Everything handed to the analysis before the next thread starts. */
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  set(&ran, (int)id + 1);
  await(&leave, 1);
  return 0;
}

int main(void) {
  pthread_t th[3];
  for (long t = 0; t < 3; t++) {
    pthread_create(&th[t], 0, work, (void *)t);
    await(&ran, (int)t + 1);
  }
  set(&leave, 1);
  for (int t = 0; t < 3; t++) pthread_join(th[t], 0);
  printf("%d\n", shared[0]);
  return 0;
}
