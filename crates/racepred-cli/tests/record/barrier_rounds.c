/* Two threads meet at a barrier ROUNDS times; between two meetings one writes `x` and the
 * other reads it, unordered: one race per round. A thread that leaves a round late must not
 * be taken to synchronise with the other's arrival at the next round. */
#include <pthread.h>
#include <stdio.h>
#define ROUNDS 2000
static pthread_barrier_t bar;
static int x;
static void *writer(void *arg) {
  (void)arg;
  for (int r = 0; r < ROUNDS; r++) {
    pthread_barrier_wait(&bar);
    x = r; /* BARRIER-RACE-WRITE */
  }
  pthread_barrier_wait(&bar);
  return 0;
}
int main(void) {
  pthread_t t;
  long s = 0;
  pthread_barrier_init(&bar, 0, 2);
  pthread_create(&t, 0, writer, 0);
  for (int r = 0; r < ROUNDS; r++) {
    pthread_barrier_wait(&bar);
    s += x; /* BARRIER-RACE-READ */
  }
  pthread_barrier_wait(&bar);
  pthread_join(t, 0);
  printf("%ld\n", s > 0);
  return 0;
}
