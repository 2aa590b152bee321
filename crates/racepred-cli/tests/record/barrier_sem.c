// Race-free: phases separated by a barrier (each thread writes its slot, then reads the
// others'), a semaphore handing items from a producer to a consumer, and pthread_once.
#include <pthread.h>
#include <semaphore.h>

enum { THREADS = 4, PHASES = 20, ITEMS = 100 };
int slot[THREADS];
long total[THREADS];
pthread_barrier_t bar;
sem_t items, spaces;
int box;
long got;
pthread_once_t once = PTHREAD_ONCE_INIT;
int config;

void init_config(void) { config = 42; }

void *phase_worker(void *arg) {
  long me = (long)arg;
  pthread_once(&once, init_config);
  for (int p = 0; p < PHASES; p++) {
    slot[me] = p + (int)me + config;
    pthread_barrier_wait(&bar);
    for (int k = 0; k < THREADS; k++) total[me] += slot[k];
    pthread_barrier_wait(&bar);
  }
  return NULL;
}

void *producer(void *arg) {
  for (int i = 1; i <= ITEMS; i++) {
    sem_wait(&spaces);
    box = i;
    sem_post(&items);
  }
  return arg;
}

void *consumer(void *arg) {
  for (int i = 1; i <= ITEMS; i++) {
    if (i % 2) {
      while (sem_trywait(&items) != 0) {
      }
    } else {
      sem_wait(&items);
    }
    got += box;
    sem_post(&spaces);
  }
  return arg;
}

int main(void) {
  pthread_barrier_init(&bar, NULL, THREADS);
  sem_init(&items, 0, 0);
  sem_init(&spaces, 0, 1);
  pthread_t t[THREADS], p, c;
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, phase_worker, (void *)i);
  pthread_create(&p, NULL, producer, NULL);
  pthread_create(&c, NULL, consumer, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  return got == (long)ITEMS * (ITEMS + 1) / 2 && config == 42 ? 0 : 1;
}
