// exec keeps the events before it: the program races (its main thread and a worker on
// `x`), then runs itself again with `after` by the exec function named by its argument;
// the new image races on `y`. With `fail`, the exec fails and the program races again on
// `z` afterwards.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
int x, y, z;

void *before(void *arg) {
  x++; // RACE-BEFORE-WORKER
  return arg;
}

void *after(void *arg) {
  y++; // RACE-AFTER-WORKER
  return arg;
}

void *after_failure(void *arg) {
  z++; // RACE-FAILED-WORKER
  return arg;
}

int main(int argc, char **argv) {
  pthread_t t;
  if (argc > 1 && strcmp(argv[1], "after") == 0) {
    pthread_create(&t, NULL, after, NULL);
    y++; // RACE-AFTER-MAIN
    pthread_join(t, NULL);
    printf("after\n");
    return 0;
  }
  pthread_create(&t, NULL, before, NULL);
  x++; // RACE-BEFORE-MAIN
  pthread_join(t, NULL);
  const char *how = argc > 1 ? argv[1] : "execv";
  char *const args[] = {argv[0], "after", NULL};
  fflush(stdout);
  if (strcmp(how, "fail") == 0) {
    // Seven arguments and more: the list goes on past the argument registers.
    execl("/nonexistent/racepred-exec-test", "a", "b", "c", "d", "e", "f", "g", (char *)0);
    if (errno != ENOENT) return 4;
    pthread_create(&t, NULL, after_failure, NULL);
    z++; // RACE-FAILED-MAIN
    pthread_join(t, NULL);
    printf("failed\n");
    return 0;
  }
  if (strcmp(how, "execv") == 0) execv(argv[0], args);
  if (strcmp(how, "execve") == 0) execve(argv[0], args, environ);
  if (strcmp(how, "execvp") == 0) execvp(argv[0], args);
  if (strcmp(how, "execvpe") == 0) execvpe(argv[0], args, environ);
  if (strcmp(how, "execl") == 0) execl(argv[0], argv[0], "after", "1", "2", "3", "4", (char *)0);
  if (strcmp(how, "execlp") == 0) execlp(argv[0], argv[0], "after", (char *)0);
  // The environment pointer after the list, on the stack.
  if (strcmp(how, "execle") == 0)
    execle(argv[0], argv[0], "after", "1", "2", "3", (char *)0, environ);
  if (strcmp(how, "fexecve") == 0) fexecve(open(argv[0], O_RDONLY), args, environ);
  if (strcmp(how, "execveat") == 0) execveat(AT_FDCWD, argv[0], args, environ, 0);
  perror("exec");
  return 3;
}
