// A thread cancelled while it waits on a condition variable: the wait re-acquires the
// mutex, then the thread's cleanup handler unlocks it. Race-free. With `timed`, the wait
// is a pthread_cond_timedwait.
#include <pthread.h>
#include <string.h>
#include <time.h>

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t c = PTHREAD_COND_INITIALIZER;
int waiting, data, timed;

void unlock(void *arg) {
  data++;
  pthread_mutex_unlock(&m);
  (void)arg;
}

void *waiter(void *arg) {
  pthread_mutex_lock(&m);
  waiting = 1;
  data++;
  pthread_cleanup_push(unlock, NULL);
  for (;;) {
    if (timed) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 3600;
      pthread_cond_timedwait(&c, &m, &ts);
    } else {
      pthread_cond_wait(&c, &m);
    }
  }
  pthread_cleanup_pop(0);
  return arg;
}

int main(int argc, char **argv) {
  timed = argc > 1 && strcmp(argv[1], "timed") == 0;
  pthread_t t;
  pthread_create(&t, NULL, waiter, NULL);
  // Once `waiting` is seen under the mutex, the waiter is inside its wait.
  for (;;) {
    pthread_mutex_lock(&m);
    int w = waiting;
    pthread_mutex_unlock(&m);
    if (w) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  pthread_cancel(t);
  void *res;
  pthread_join(t, &res);
  pthread_mutex_lock(&m);
  data++;
  pthread_mutex_unlock(&m);
  return res == PTHREAD_CANCELED && data == 3 ? 0 : 1;
}
