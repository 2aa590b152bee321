// A race two calls deep on each side: the reports of the recorded trace show each racing
// access's call sites.
#include <pthread.h>
#include <stdio.h>

int x;

__attribute__((noinline)) void bump(void) {
  x++; // RACE-BUMP
}

__attribute__((noinline)) void update(void) {
  bump(); // CALL-BUMP
}

__attribute__((noinline)) void *worker(void *arg) {
  update(); // CALL-UPDATE
  return arg;
}

__attribute__((noinline)) void touch(void) {
  x++; // RACE-TOUCH
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  touch(); // CALL-TOUCH
  pthread_join(t, NULL);
  printf("%d\n", x);
  return 0;
}
