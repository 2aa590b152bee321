// A data race: both threads increment `counter` without a lock. With an argument
// (`crash`) the program then dies of SIGSEGV: its trace must still be written.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

int counter;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *worker(void *arg) {
  counter++; // RACE-WORKER
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  return arg;
}

int main(int argc, char **argv) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  counter++; // RACE-MAIN
  pthread_join(t, NULL);
  printf("%d\n", counter);
  if (argc > 1) {
    fflush(stdout);
    raise(SIGSEGV);
  }
  (void)argv;
  return 0;
}
