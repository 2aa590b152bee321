// Race-free: a counter under a mutex (plain, trylock and timedlock), a recursive mutex,
// a spin lock, heap blocks freed and reused by other threads, detached-free joins.
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum { THREADS = 4, ROUNDS = 200 };
long counter, spun, nested;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t rec;
pthread_spinlock_t spin;

void *worker(void *arg) {
  for (int i = 0; i < ROUNDS; i++) {
    if (i % 3 == 0) {
      pthread_mutex_lock(&m);
    } else if (i % 3 == 1) {
      while (pthread_mutex_trylock(&m) != 0) {
      }
    } else {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 10;
      pthread_mutex_timedlock(&m, &ts);
    }
    counter++;
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&rec);
    pthread_mutex_lock(&rec);
    nested++;
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    pthread_spin_lock(&spin);
    spun++;
    pthread_spin_unlock(&spin);
    // Private heap memory: freed blocks come back to other threads.
    int *p = malloc(sizeof *p * 8);
    for (int k = 0; k < 8; k++) p[k] = k;
    p = realloc(p, sizeof *p * 64);
    p[40] = 1;
    free(p);
  }
  return arg;
}

int main(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rec, &a);
  pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  return counter == THREADS * ROUNDS && spun == counter && nested == counter ? 0 : 1;
}
