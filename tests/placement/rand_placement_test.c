/* rand_placement_test.c: run under LD_PRELOAD=build/librand-placement.so over glibc, with
 * RAND_PLACEMENT_UNITS set (ctest runs it at 4 and at 0). A plain C program: it checks that
 * the shim serves malloc, that every object stays valid and usable through free, realloc,
 * calloc and the aligned calls, and that consecutive objects of one size are spaced by
 * glibc's chunk size plus a pad that varies (units > 0) or never does (units = 0) and
 * never exceeds units x 16 bytes. Run again with the same seed, it pads the same way; with
 * another seed, differently. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define OBJECTS 256
#define SIZE 40

static void check_served_by_shim(void) {
  Dl_info info;
  void *sym = dlsym(RTLD_DEFAULT, "malloc");
  CHECK(sym && dladdr(sym, &info) && info.dli_fname);
  CHECKF(strstr(info.dli_fname, "librand-placement") != NULL, "malloc comes from %s",
         info.dli_fname);
}

/* Spacing of consecutive objects carved from glibc's top chunk: the chunk of a request of
 * SIZE + pad bytes is SIZE + 8 + pad rounded up to 16, and SIZE + 8 is a multiple of 16. */
static void check_spacing(unsigned units) {
  static char *objects[OBJECTS];
  for (int i = 0; i < OBJECTS; i++) {
    objects[i] = malloc(SIZE);
    CHECK(objects[i] != NULL);
    memset(objects[i], i & 0xff, SIZE);
  }
  long lo = -1, hi = -1;
  int adjacent = 0, distinct_steps = 0;
  long previous = -1;
  for (int i = 1; i < OBJECTS; i++) {
    long d = (long)((uintptr_t)objects[i] - (uintptr_t)objects[i - 1]);
    if (d <= 0 || d > 4096) continue; /* a chunk reused from a free list, not the top */
    adjacent++;
    CHECKF(d >= SIZE + 8 && (d - (SIZE + 8)) % 16 == 0, "spacing %ld", d);
    CHECKF(d - (SIZE + 8) <= (long)units * 16, "spacing %ld exceeds the bound", d);
    if (lo < 0 || d < lo) lo = d;
    if (d > hi) hi = d;
    if (previous >= 0 && d != previous) distinct_steps++;
    previous = d;
  }
  CHECKF(adjacent >= OBJECTS * 9 / 10, "only %d adjacent pairs", adjacent);
  if (units == 0)
    CHECKF(lo == hi, "spacing varies from %ld to %ld without padding", lo, hi);
  else
    CHECKF(distinct_steps > OBJECTS / 4, "spacing changed only %d times", distinct_steps);
  for (int i = 0; i < OBJECTS; i++) {
    for (int b = 0; b < SIZE; b++) CHECK(objects[i][b] == (char)(i & 0xff));
    CHECK(malloc_usable_size(objects[i]) >= SIZE);
    CHECK(malloc_usable_size(objects[i]) <= SIZE + 8 + units * 16);
  }
  for (int i = 0; i < OBJECTS; i++) free(objects[i]);
}

static void check_realloc(void) {
  char *p = realloc(NULL, 24);
  CHECK(p != NULL);
  for (int i = 0; i < 24; i++) p[i] = (char)i;
  p = realloc(p, 5000);
  CHECK(p != NULL && malloc_usable_size(p) >= 5000);
  for (int i = 0; i < 24; i++) CHECK(p[i] == (char)i);
  memset(p, 7, 5000);
  p = realloc(p, 10);
  CHECK(p != NULL && malloc_usable_size(p) >= 10);
  for (int i = 0; i < 10; i++) CHECK(p[i] == 7);
  free(p);
  CHECK(malloc_usable_size(NULL) == 0);
}

static void check_calloc(void) {
  unsigned char *z = calloc(100, 3);
  CHECK(z != NULL);
  for (int i = 0; i < 300; i++) CHECK(z[i] == 0);
  free(z);
  volatile size_t huge = SIZE_MAX / 2; /* hides the overflow from the compiler's check */
  errno = 0;
  CHECK(calloc(huge, 4) == NULL);
  CHECK(errno == ENOMEM);
}

static void check_aligned(void) {
  void *p = NULL;
  CHECK(posix_memalign(&p, 256, 100) == 0);
  CHECK(p && (uintptr_t)p % 256 == 0 && malloc_usable_size(p) >= 100);
  free(p);
  p = aligned_alloc(64, 128);
  CHECK(p && (uintptr_t)p % 64 == 0);
  memset(p, 1, 128);
  free(p);
  p = memalign(4096, 10);
  CHECK(p && (uintptr_t)p % 4096 == 0);
  free(p);
}

/* --pads: prints the pads of the first objects (glibc's usable size is the size asked for,
 * here SIZE plus the pad). */
static int print_pads(void) {
  char line[64 * 8] = "";
  for (int i = 0; i < 64; i++) {
    void *p = malloc(SIZE);
    char one[16];
    snprintf(one, sizeof one, "%zu ", malloc_usable_size(p) - SIZE);
    strcat(line, one);
  }
  puts(line);
  return 0;
}

/* The output of this program with --pads under seed `seed`. */
static void pads_of_run(const char *self, const char *seed, char *out, size_t cap) {
  char command[4200];
  snprintf(command, sizeof command, "RAND_PLACEMENT_SEED=%s '%s' --pads", seed, self);
  FILE *f = popen(command, "r");
  CHECK(f != NULL);
  size_t n = f ? fread(out, 1, cap - 1, f) : 0;
  out[n] = '\0';
  if (f) CHECK(pclose(f) == 0);
}

static void check_seed(void) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0);
  self[n > 0 ? n : 0] = '\0';
  static char first[4096], again[4096], other[4096];
  pads_of_run(self, "7", first, sizeof first);
  pads_of_run(self, "7", again, sizeof again);
  pads_of_run(self, "8", other, sizeof other);
  CHECKF(strlen(first) > 64 && strcmp(first, again) == 0, "seed 7 gave '%s', then '%s'", first,
         again);
  CHECKF(strcmp(first, other) != 0, "seeds 7 and 8 both gave '%s'", first);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--pads") == 0) return print_pads();
  const char *units_text = getenv("RAND_PLACEMENT_UNITS");
  CHECKF(units_text != NULL, "run under ctest, which sets RAND_PLACEMENT_UNITS");
  unsigned units = units_text ? (unsigned)atoi(units_text) : 4;
  check_served_by_shim();
  check_spacing(units);
  check_realloc();
  check_calloc();
  check_aligned();
  if (units > 0) check_seed();
  return check_exit();
}
