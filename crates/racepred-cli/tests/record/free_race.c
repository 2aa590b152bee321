// Races with free: a worker writes into a heap block that main then frees, and reads a
// block that main shrinks with realloc, with nothing ordering the worker's accesses before
// main's calls (the relaxed flag only makes this run's order deterministic; it orders
// nothing).
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

long *block, *grown;
long seen;
atomic_int flag;

void *worker(void *arg) {
  block[8] = 1; // RACE-USE
  seen = grown[4]; // RACE-READ
  atomic_store_explicit(&flag, 1, memory_order_relaxed);
  return arg;
}

int main(void) {
  block = malloc(16 * sizeof *block);
  grown = calloc(16, sizeof *grown);
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  while (!atomic_load_explicit(&flag, memory_order_relaxed)) {
  }
  free(block); // RACE-FREE
  long *shrunk = realloc(grown, 2 * sizeof *grown); // RACE-REALLOC
  pthread_join(t, NULL);
  free(shrunk);
  return 0;
}
