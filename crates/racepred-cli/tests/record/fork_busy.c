// fork() while other threads are inside the runtime: two threads loop on atomics and a
// mutex (each hook holds a runtime lock for a moment) while the main thread
// forks again and again. Every child must run to its end, and its trace must hold only
// what the child did after the fork: its own race on `y` between its main thread and a
// thread it starts. The parent's threads do not race.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FORKS = 20 };
atomic_int flag;
atomic_int stop;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
long counter;
int y;

void *busy(void *arg) {
  while (!atomic_load_explicit(&stop, memory_order_acquire)) {
    // A compare-exchange that fails: the runtime performs it under its lock of the
    // atomic's address and records nothing (a relaxed load), so the thread is inside the
    // runtime most of the time while the trace stays small.
    for (int i = 0; i < 1000; i++) {
      int expected = 1;
      atomic_compare_exchange_strong_explicit(&flag, &expected, 2, memory_order_acq_rel,
                                              memory_order_relaxed);
    }
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
  }
  return arg;
}

void *child_worker(void *arg) {
  y++; // CHILD-RACE-WORKER
  return arg;
}

int main(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, NULL);
  for (int i = 0; i < FORKS; i++) {
    pid_t p = fork();
    if (p == 0) {
      pthread_t c;
      pthread_create(&c, NULL, child_worker, NULL);
      y++; // CHILD-RACE-MAIN
      pthread_join(c, NULL);
      exit(0);
    }
    if (p < 0) return 2;
    int st;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 3;
  }
  atomic_store_explicit(&stop, 1, memory_order_release);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_mutex_lock(&m);
  printf("%d\n", counter > 0);
  pthread_mutex_unlock(&m);
  return 0;
}
