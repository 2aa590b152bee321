// Race-free: a bounded queue with condition variables (wait and timedwait); the data
// passes from producer to consumers through the mutex.
#include <pthread.h>
#include <time.h>

enum { ITEMS = 300, SLOTS = 4, CONSUMERS = 2 };
int buf[SLOTS], head, tail, count, done;
long sum;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;

void *producer(void *arg) {
  for (int i = 1; i <= ITEMS; i++) {
    pthread_mutex_lock(&m);
    while (count == SLOTS) pthread_cond_wait(&not_full, &m);
    buf[tail] = i;
    tail = (tail + 1) % SLOTS;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&m);
  }
  pthread_mutex_lock(&m);
  done = 1;
  pthread_cond_broadcast(&not_empty);
  pthread_mutex_unlock(&m);
  return arg;
}

void *consumer(void *arg) {
  for (;;) {
    pthread_mutex_lock(&m);
    while (count == 0 && !done) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 1000000;
      if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
      pthread_cond_timedwait(&not_empty, &m, &ts);
    }
    if (count == 0 && done) {
      pthread_mutex_unlock(&m);
      return arg;
    }
    sum += buf[head];
    head = (head + 1) % SLOTS;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&m);
  }
}

int main(void) {
  pthread_t p, c[CONSUMERS];
  pthread_create(&p, NULL, producer, NULL);
  for (int i = 0; i < CONSUMERS; i++) pthread_create(&c[i], NULL, consumer, NULL);
  pthread_join(p, NULL);
  for (int i = 0; i < CONSUMERS; i++) pthread_join(c[i], NULL);
  return sum == (long)ITEMS * (ITEMS + 1) / 2 ? 0 : 1;
}
