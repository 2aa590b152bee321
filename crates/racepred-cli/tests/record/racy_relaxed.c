// A data race despite atomics: the flag is relaxed, so reading `data` after seeing it set
// is not ordered after the write (no release/acquire, no fence).
#include <pthread.h>
#include <stdatomic.h>

int data;
atomic_int flag;

void *producer(void *arg) {
  data = 1; // RACE-WRITE
  atomic_store_explicit(&flag, 1, memory_order_relaxed);
  return arg;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, producer, NULL);
  while (!atomic_load_explicit(&flag, memory_order_relaxed)) {
  }
  int v = data; // RACE-READ
  pthread_join(t, NULL);
  return v == 1 ? 0 : 1;
}
