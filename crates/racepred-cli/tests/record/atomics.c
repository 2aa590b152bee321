// Race-free with C11 atomics: message passing through a release store / acquire load, a
// spin lock built on atomic_flag, an acq_rel counter, and a release/acquire fence pair
// around relaxed accesses.
#include <pthread.h>
#include <stdatomic.h>

int data, data2, guarded;
atomic_int ready, ready2, hits;
atomic_flag lock = ATOMIC_FLAG_INIT;

void *producer(void *arg) {
  data = 7;
  atomic_store_explicit(&ready, 1, memory_order_release);
  data2 = 9;
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&ready2, 1, memory_order_relaxed);
  return arg;
}

void *consumer(void *arg) {
  while (!atomic_load_explicit(&ready, memory_order_acquire)) {
  }
  int v = data;
  while (!atomic_load_explicit(&ready2, memory_order_relaxed)) {
  }
  atomic_thread_fence(memory_order_acquire);
  v += data2;
  return (void *)(long)v;
}

void *locker(void *arg) {
  for (int i = 0; i < 100; i++) {
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
    }
    guarded++;
    atomic_flag_clear_explicit(&lock, memory_order_release);
    atomic_fetch_add_explicit(&hits, 1, memory_order_acq_rel);
    int expected = atomic_load(&hits);
    atomic_compare_exchange_strong(&hits, &expected, expected);
  }
  return arg;
}

int main(void) {
  pthread_t p, c, l1, l2;
  pthread_create(&c, NULL, consumer, NULL);
  pthread_create(&p, NULL, producer, NULL);
  pthread_create(&l1, NULL, locker, NULL);
  pthread_create(&l2, NULL, locker, NULL);
  void *r;
  pthread_join(p, NULL);
  pthread_join(c, &r);
  pthread_join(l1, NULL);
  pthread_join(l2, NULL);
  return (long)r == 16 && guarded == 200 && atomic_load(&hits) == 200 ? 0 : 1;
}
