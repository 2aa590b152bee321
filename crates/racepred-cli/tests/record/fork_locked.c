// fork() while the forking thread holds a mutex: the child holds it too, and unlocks it.
// The child's trace must start by acquiring it (or its unlock would be ill-formed).
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int x;

int main(void) {
  pthread_mutex_lock(&m);
  x++;
  pid_t p = fork(); // FORK
  if (p == 0) {
    x++;
    pthread_mutex_unlock(&m);
    return 0;
  }
  pthread_mutex_unlock(&m);
  int st;
  waitpid(p, &st, 0);
  printf("%d\n", x);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
