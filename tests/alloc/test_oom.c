/* Out of memory is NULL + ENOMEM, never a crash, and the allocator recovers.
 *
 * Workload, in a forked child whose address space is capped (RLIMIT_AS = what it uses
 * now + 256 MiB): (1) allocate 64 KiB..4 MiB objects (large and medium) until malloc
 * returns NULL: errno must be ENOMEM; (2) then small objects (48 B) until NULL, same check;
 * also calloc, realloc growth, posix_memalign (returns ENOMEM) and aligned_alloc under the
 * cap; (3) free everything (patterns checked first), txalloc_collect(), and allocate 64 MiB
 * again: it must succeed. The child reports through its exit status; the parent checks it.
 * Skipped under the sanitizers, whose own mappings do not survive an address-space cap. */
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
enum { MAX_OBJS = 1 << 20 };

static size_t address_space_now(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    if (fscanf(f, "%lu", &pages) != 1) pages = 0;
    fclose(f);
  }
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void **objs;
static size_t nobjs;

/* Allocates `size`-byte objects until NULL; returns 0 if the failure was ENOMEM. */
static int fill_until_null(size_t size, int *count) {
  *count = 0;
  for (;;) {
    if (nobjs == MAX_OBJS) return 3;
    errno = 0;
    void *p = txalloc_malloc(size);
    if (!p) return errno == ENOMEM ? 0 : 4;
    test_fill(p, size < 64 ? size : 64, (uint64_t)nobjs);
    objs[nobjs++] = p;
    (*count)++;
  }
}

static int child(void) {
  objs = calloc(MAX_OBJS, sizeof *objs);
  if (!objs) return 2;
  /* The cap comes after the allocator's initialisation and this table. */
  txalloc_free(txalloc_malloc(1));
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return 2;
  rlim_t cap = (rlim_t)(address_space_now() + ((size_t)256 << 20));
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < cap) cap = rl.rlim_max;
  rl.rlim_cur = cap; /* the hard limit stays: lowering the soft one is always allowed */
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 2;

  int n_large = 0, n_medium = 0, n_small = 0, rc;
  if ((rc = fill_until_null((size_t)4 << 20, &n_large)) != 0) return 10 + rc;
  if ((rc = fill_until_null(64 << 10, &n_medium)) != 0) return 20 + rc;
  if ((rc = fill_until_null(48, &n_small)) != 0) return 30 + rc;
  if (n_large == 0 || n_small == 0) return 40;

  /* Every entry point fails cleanly under the cap. */
  errno = 0;
  if (txalloc_calloc(1, (size_t)64 << 20) != NULL || errno != ENOMEM) return 50;
  errno = 0;
  if (txalloc_aligned_alloc((size_t)1 << 20, (size_t)64 << 20) != NULL || errno != ENOMEM)
    return 51;
  void *out = NULL;
  if (txalloc_posix_memalign(&out, 4096, (size_t)64 << 20) != ENOMEM || out != NULL) return 52;
  errno = 0;
  void *r = txalloc_realloc(objs[0], (size_t)128 << 20);
  if (r != NULL || errno != ENOMEM) return 53;

  /* Recover. */
  for (size_t i = 0; i < nobjs; i++) {
    size_t size = i < (size_t)n_large                      ? (size_t)4 << 20
                  : i < (size_t)n_large + (size_t)n_medium ? (size_t)64 << 10
                                                           : 48;
    if (!test_check(objs[i], size < 64 ? size : 64, (uint64_t)i)) return 60;
    txalloc_free(objs[i]);
  }
  txalloc_collect();
  void *big = txalloc_malloc((size_t)64 << 20);
  if (!big) return 70;
  memset(big, 1, (size_t)64 << 20);
  txalloc_free(big);
  fprintf(stderr, "child: %d large, %d medium, %d small objects before ENOMEM\n", n_large, n_medium,
          n_small);
  return 0;
}

#endif

int main(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  fprintf(stderr, "skipped under a sanitizer (address-space cap)\n");
  return check_exit();
#else
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) _exit(child());
  CHECKF(check_wait_child(pid, "out-of-memory child"),
         "exit codes: 1x/2x/3x fill phases, 5x entry points, 60 pattern, 70 recovery");
  return check_exit();
#endif
}
