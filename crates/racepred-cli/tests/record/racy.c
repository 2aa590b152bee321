// A data race: both threads increment `counter` without a lock.
#include <pthread.h>
#include <stdio.h>

int counter;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *worker(void *arg) {
  counter++; // RACE-WORKER
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  return arg;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  counter++; // RACE-MAIN
  pthread_join(t, NULL);
  printf("%d\n", counter);
  return 0;
}
