/* The first allocations of a process coming from threads other than the main one, under
 * LD_PRELOAD=libtxalloc.so.
 *
 * Workload: main allocates nothing itself; it starts 16 threads that wait on a barrier
 * and then all make their first malloc at the same instant (thread-heap creation racing,
 * and possibly allocator initialisation if nothing allocated before — glibc's pthread
 * machinery may already have). Each thread allocates 2000 objects, also starts a
 * grandchild thread that allocates and frees, checks its objects are txalloc's and
 * intact, and exits with half of them live; main then frees those (remote frees into the
 * blocks of exited threads) and checks their contents. Repeated for 20 rounds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { T = 16, N = 2000, ROUNDS = 20 };

typedef int (*owner_of_fn)(const void *);
static owner_of_fn owner_of;
static pthread_barrier_t start;
static void *kept[T][N / 2];
static atomic_long bad;

static void *grandchild(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) {
    char *p = malloc((size_t)i + 1);
    if (!p || !owner_of(p))
      bad++;
    else
      p[i] = 1;
    free(p);
  }
  return NULL;
}

static void *run(void *arg) {
  int id = (int)(intptr_t)arg;
  pthread_barrier_wait(&start);
  unsigned char *objs[N];
  for (int i = 0; i < N; i++) {
    size_t size = (size_t)(i % 300) + 1;
    objs[i] = malloc(size);
    if (!objs[i]) {
      bad++;
      continue;
    }
    memset(objs[i], id * 7 + i, size);
  }
  pthread_t g;
  if (pthread_create(&g, NULL, grandchild, NULL) == 0) pthread_join(g, NULL);
  for (int i = 0; i < N; i++) {
    if (!objs[i]) continue;
    size_t size = (size_t)(i % 300) + 1;
    if (!owner_of(objs[i]) || objs[i][0] != (unsigned char)(id * 7 + i) ||
        objs[i][size - 1] != (unsigned char)(id * 7 + i))
      bad++;
    if (i % 2)
      free(objs[i]);
    else
      kept[id][i / 2] = objs[i];
  }
  return NULL;
}

int main(void) {
  owner_of = (owner_of_fn)dlsym(RTLD_DEFAULT, "txalloc_owner_of");
  CHECKF(owner_of != NULL, "txalloc_owner_of not found: is libtxalloc.so preloaded?");
  if (!owner_of) return check_exit();
  for (int r = 0; r < ROUNDS; r++) {
    pthread_t t[T];
    pthread_barrier_init(&start, NULL, T);
    for (int i = 0; i < T; i++)
      if (pthread_create(&t[i], NULL, run, (void *)(intptr_t)i) != 0) return 2;
    for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < T; i++)
      for (int k = 0; k < N / 2; k++) {
        unsigned char *p = kept[i][k];
        if (!p) continue;
        if (p[0] != (unsigned char)(i * 7 + 2 * k)) bad++;
        free(p);
        kept[i][k] = NULL;
      }
  }
  CHECKF(bad == 0, "%ld objects not txalloc's, corrupted or not allocated", (long)bad);
  return check_exit();
}
