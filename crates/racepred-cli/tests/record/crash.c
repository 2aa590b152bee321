// A data race, then a crash: the trace is written on the way out (SIGSEGV).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

int counter;

void *worker(void *arg) {
  counter++; // RACE-WORKER
  return arg;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  counter++; // RACE-MAIN
  pthread_join(t, NULL);
  fflush(stdout);
  raise(SIGSEGV);
  return 0;
}
