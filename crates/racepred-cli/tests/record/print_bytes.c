// A racy program whose standard output is binary and known: bytes (i * 7) % 256 for i in
// 0..4096, written in pieces while a thread races with the main thread on `x`.
#include <pthread.h>
#include <stdio.h>

int x;

void *worker(void *arg) {
  x++; // RACE-WORKER
  return arg;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  for (int i = 0; i < 4096; i++) {
    if (i == 2048) x++; // RACE-MAIN
    putchar((i * 7) % 256);
  }
  pthread_join(t, NULL);
  return 0;
}
