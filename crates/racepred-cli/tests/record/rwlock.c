// Race-free: readers read a table under a read lock while writers update it under the
// write lock (also through trywrlock and timedrdlock).
#include <pthread.h>
#include <time.h>

enum { READERS = 3, WRITERS = 2, ROUNDS = 100, N = 16 };
int table[N];
long seen;
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

void *reader(void *arg) {
  long local = 0;
  for (int i = 0; i < ROUNDS; i++) {
    if (i % 2) {
      pthread_rwlock_rdlock(&rw);
    } else {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 10;
      pthread_rwlock_timedrdlock(&rw, &ts);
    }
    for (int k = 0; k < N; k++) local += table[k];
    pthread_rwlock_unlock(&rw);
  }
  pthread_mutex_lock(&seen_lock);
  seen += local;
  pthread_mutex_unlock(&seen_lock);
  return arg;
}

void *writer(void *arg) {
  for (int i = 0; i < ROUNDS; i++) {
    if (i % 2) {
      pthread_rwlock_wrlock(&rw);
    } else {
      while (pthread_rwlock_trywrlock(&rw) != 0) {
      }
    }
    for (int k = 0; k < N; k++) table[k]++;
    pthread_rwlock_unlock(&rw);
  }
  return arg;
}

int main(void) {
  pthread_t r[READERS], w[WRITERS];
  for (int i = 0; i < WRITERS; i++) pthread_create(&w[i], NULL, writer, NULL);
  for (int i = 0; i < READERS; i++) pthread_create(&r[i], NULL, reader, NULL);
  for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);
  for (int i = 0; i < READERS; i++) pthread_join(r[i], NULL);
  return table[0] == WRITERS * ROUNDS && seen >= 0 ? 0 : 1;
}
