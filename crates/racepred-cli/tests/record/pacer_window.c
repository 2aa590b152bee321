/* Threads one after another (each created, then joined, by a function without
 * instrumented accesses: nothing runs beside a thread), so the analysed order is the
 * program's and online PACER's report is the same with and without its fast path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int shared[256];
static void *work(void *arg) {
  long id = (long)arg, s = 0;
  int *a = malloc(1000 * sizeof *a);
  for (int i = 0; i < 1000; i++) a[i] = i;
  for (int p = 0; p < 20; p++) {
    for (int i = 0; i < 1000; i++) s += a[(i * 7 + p) % 1000];
    for (int i = 0; i < 256; i += 3) shared[i] += (int)id;
    if (p % 5 == 0) {
      pthread_mutex_lock(&m);
      shared[1]++;
      pthread_mutex_unlock(&m);
    }
  }
  free(a);
  return (void *)s;
}
__attribute__((no_sanitize_thread)) static void *run(long t) {
  pthread_t th;
  void *r;
  pthread_create(&th, 0, work, (void *)t);
  pthread_join(th, &r);
  return r;
}
int main(void) {
  for (long t = 0; t < 3; t++) printf("%ld\n", (long)run(t));
  return 0;
}
