/* A plain C program run under LD_PRELOAD=libtxalloc.so: the libc names (malloc, free,
 * calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size) and libc functions that allocate internally (strdup, asprintf,
 * fopen's buffer, qsort's scratch, getline, opendir) must all be served by txalloc.
 *
 * Without txalloc headers: txalloc_owner_of is looked up with dlsym; every pointer the
 * program gets must be classified as txalloc's. Fails if libtxalloc.so is not preloaded.
 * The semantics checked are the glibc rules the txalloc_ tests check on the static
 * library; here they are checked through the interposed names. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef int (*owner_of_fn)(const void *);
static owner_of_fn owner_of;

static int ours(const void *p) { return p && owner_of(p) != 0; }

static int cmp_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* Sizes the compiler cannot see, so that it does not warn about impossible requests. */
static volatile size_t huge = SIZE_MAX - 100, half = SIZE_MAX / 2;

int main(void) {
  owner_of = (owner_of_fn)dlsym(RTLD_DEFAULT, "txalloc_owner_of");
  CHECKF(owner_of != NULL, "txalloc_owner_of not found: is libtxalloc.so preloaded?");
  if (!owner_of) return check_exit();

  void *m = malloc(100);
  CHECK(ours(m) && ((uintptr_t)m & 15) == 0 && malloc_usable_size(m) >= 100);
  void *z = malloc(0);
  CHECK(ours(z));
  free(z);
  void *c = calloc(100, 10);
  CHECK(ours(c));
  int zero = 1;
  for (int i = 0; i < 1000; i++) zero &= ((unsigned char *)c)[i] == 0;
  CHECK(zero);
  errno = 0;
  CHECK(calloc(half, 4) == NULL && errno == ENOMEM);
  memset(m, 7, 100);
  void *r = realloc(m, 100000);
  CHECK(ours(r) && ((unsigned char *)r)[99] == 7);
  r = reallocarray(r, 1000, 200);
  CHECK(ours(r) && ((unsigned char *)r)[0] == 7);
  errno = 0;
  void *failed = reallocarray(r, huge, 2);
  CHECK(failed == NULL && errno == ENOMEM);
  if (failed) r = failed;
  CHECK(realloc(r, 0) == NULL);
  free(NULL);
  void *pm = NULL;
  CHECK(posix_memalign(&pm, 4096, 10) == 0 && ours(pm) && ((uintptr_t)pm & 4095) == 0);
  void *bad_alignment = NULL;
  CHECK(posix_memalign(&bad_alignment, 24, 10) == EINVAL && bad_alignment == NULL);
  void *aa = aligned_alloc(1 << 20, 1 << 20);
  CHECK(ours(aa) && ((uintptr_t)aa & ((1 << 20) - 1)) == 0);
  void *ma = memalign(256, 3);
  CHECK(ours(ma) && ((uintptr_t)ma & 255) == 0);
  void *va = valloc(5);
  CHECK(ours(va) && ((uintptr_t)va & 4095) == 0);
  void *pv = pvalloc(5);
  CHECK(ours(pv) && malloc_usable_size(pv) >= 4096);
  errno = 0;
  CHECK(malloc(huge) == NULL && errno == ENOMEM);
  free(c);
  free(pm);
  free(aa);
  free(ma);
  free(va);
  free(pv);

  /* libc's own allocations come from txalloc too. */
  char *s = strdup("txalloc");
  CHECK(ours(s) && strcmp(s, "txalloc") == 0);
  free(s);
  char *a = NULL;
  CHECK(asprintf(&a, "%d-%s-%.3f", 42, "x", 2.5) > 0 && ours(a) && strcmp(a, "42-x-2.500") == 0);
  free(a);
  FILE *f = tmpfile();
  CHECK(f != NULL);
  if (f) {
    for (int i = 0; i < 10000; i++) fprintf(f, "line %d\n", i);
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    long lines = 0;
    while (getline(&line, &cap, f) > 0) lines++;
    CHECK(lines == 10000 && ours(line));
    free(line);
    fclose(f);
  }
  DIR *d = opendir("/");
  CHECK(d != NULL && ours(d));
  if (d) closedir(d);
  enum { N = 200000 };
  int *v = malloc(N * sizeof *v);
  CHECK(ours(v));
  for (int i = 0; i < N; i++) v[i] = (int)((i * 2654435761u) % 1000003u);
  qsort(v, N, sizeof *v, cmp_int);
  int sorted = 1;
  for (int i = 1; i < N; i++) sorted &= v[i - 1] <= v[i];
  CHECK(sorted);
  free(v);

  /* A churn of many sizes through the interposed names. */
  static void *live[4096];
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 4096; i++) {
      size_t size = (size_t)((i * 7919 + round * 31) % 5000) + 1;
      live[i] = malloc(size);
      memset(live[i], i & 0xff, size < 32 ? size : 32);
    }
    int ok = 1;
    for (int i = 0; i < 4096; i++) {
      size_t size = (size_t)((i * 7919 + round * 31) % 5000) + 1;
      for (size_t k = 0; k < (size < 32 ? size : 32); k++)
        ok &= ((unsigned char *)live[i])[k] == (unsigned char)(i & 0xff);
      free(live[i]);
    }
    CHECK(ok);
  }
  return check_exit();
}
