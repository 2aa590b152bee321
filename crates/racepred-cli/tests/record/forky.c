// A process that forks: the child (which inherits the runtime and its buffers) writes its
// own trace beside the parent's; only the child races.
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int x;

void *worker(void *arg) {
  x++; // RACE-CHILD (in the child, against its main thread)
  return arg;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  pid_t p = fork();
  if (p == 0) {
    pthread_create(&t, NULL, worker, NULL);
    x++; // RACE-CHILD-MAIN
    pthread_join(t, NULL);
    return 0;
  }
  waitpid(p, NULL, 0);
  x++;
  printf("%d\n", x);
  return 0;
}
