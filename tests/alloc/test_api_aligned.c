/* The aligned entry points: posix_memalign, aligned_alloc, memalign, valloc, pvalloc.
 *
 * Workload: for every power-of-two alignment from 1 to 4 MiB (1 MiB is the contract's
 * minimum, beyond is checked too) and sizes 0, 1, 16, alignment-1, alignment,
 * alignment+1 and 3*alignment (capped at 8 MiB), each entry point's pointer is checked
 * for alignment (and at least 16), usable size >= requested, pattern kept while all
 * objects of that alignment are live, and freed. Then the errors: posix_memalign
 * returns EINVAL (not via errno, *out untouched) for alignments 0, 3, 4 (< sizeof(void *)),
 * 24 and SIZE_MAX; memalign/aligned_alloc with a non-power-of-two alignment either fail
 * with EINVAL or round the alignment up (glibc does both, by version); huge sizes give
 * ENOMEM; valloc is page-aligned, pvalloc rounds the size up to a page. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { ENTRY_POSIX, ENTRY_ALIGNED_ALLOC, ENTRY_MEMALIGN, ENTRIES };
static const char *entry_name[ENTRIES] = {"posix_memalign", "aligned_alloc", "memalign"};

static void *aligned_by(int entry, size_t alignment, size_t size) {
  switch (entry) {
  case ENTRY_POSIX: {
    void *p = (void *)0x1;
    int rc = txalloc_posix_memalign(&p, alignment, size);
    CHECKF(rc == 0, "posix_memalign(%zu, %zu) = %d", alignment, size, rc);
    return rc == 0 ? p : NULL;
  }
  case ENTRY_ALIGNED_ALLOC: return txalloc_aligned_alloc(alignment, size);
  default: return txalloc_memalign(alignment, size);
  }
}

int main(void) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t max_alignment = (size_t)4 << 20;
  enum { PER_ALIGNMENT = ENTRIES * 7 };
  static struct {
    void *p;
    size_t size;
  } objs[PER_ALIGNMENT];

  for (size_t a = 1; a <= max_alignment; a <<= 1) {
    size_t sizes[7] = {0, 1, 16, a - 1, a, a + 1, 3 * a};
    int n = 0;
    for (int e = 0; e < ENTRIES; e++) {
      for (int k = 0; k < 7; k++) {
        size_t s = sizes[k] > ((size_t)8 << 20) ? (size_t)8 << 20 : sizes[k];
        /* posix_memalign requires a multiple of sizeof(void *). */
        size_t align = (e == ENTRY_POSIX && a < sizeof(void *)) ? sizeof(void *) : a;
        void *p = aligned_by(e, align, s);
        CHECKF(p != NULL, "%s(%zu, %zu) = NULL", entry_name[e], align, s);
        if (!p) continue;
        CHECKF(test_is_aligned(p, align) && test_is_aligned(p, 16), "%s(%zu, %zu) = %p",
               entry_name[e], align, s, p);
        size_t u = txalloc_usable_size(p);
        CHECKF(u >= s, "%s(%zu, %zu): usable %zu", entry_name[e], align, s, u);
        CHECK(txalloc_owner_of(p) != TXALLOC_NOT_OURS);
        test_fill(p, s, (uint64_t)(n + 1) * 1000003u + a);
        objs[n].p = p;
        objs[n].size = s;
        n++;
      }
    }
    for (int i = 0; i < n; i++) {
      CHECKF(test_check(objs[i].p, objs[i].size, (uint64_t)(i + 1) * 1000003u + a),
             "alignment %zu: object %p of size %zu corrupted", a, objs[i].p, objs[i].size);
      txalloc_free(objs[i].p);
    }
  }

  /* Many small over-aligned objects interleaved with plain ones: the aligned path must
   * not hand out an object that overlaps a neighbour. */
  enum { MIX = 2000 };
  static void *mix[MIX];
  for (int i = 0; i < MIX; i++) {
    size_t align = (size_t)32 << (i % 6); /* 32 .. 1024 */
    mix[i] = (i % 3) ? txalloc_memalign(align, 48 + (size_t)(i % 200))
                     : txalloc_malloc(48 + (size_t)(i % 200));
    CHECK(mix[i] != NULL);
    if (!mix[i]) continue;
    if (i % 3) CHECK(test_is_aligned(mix[i], align));
    test_fill(mix[i], 48, (uint64_t)i);
  }
  for (int i = 0; i < MIX; i++) {
    if (!mix[i]) continue;
    CHECKF(test_check(mix[i], 48, (uint64_t)i), "mixed object %d corrupted", i);
    txalloc_free(mix[i]);
  }

  /* posix_memalign errors: EINVAL returned, errno not the channel, *out untouched. */
  size_t bad[] = {0, 3, 4, 12, 24, 48, 1000, SIZE_MAX, ((size_t)1 << 20) + 8};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *out = (void *)0x1234;
    int rc = txalloc_posix_memalign(&out, bad[i], 64);
    CHECKF(rc == EINVAL, "posix_memalign(alignment %zu) = %d, want EINVAL", bad[i], rc);
    CHECK(out == (void *)0x1234);
  }
  /* memalign/aligned_alloc with an alignment that is not a power of two: glibc's
   * memalign (and aligned_alloc before 2.38) rounds the alignment up to a power of two,
   * glibc 2.38's aligned_alloc fails with EINVAL. Either is accepted; nothing else. */
  size_t bad_pow2[] = {3, 24, 48, 1000};
  for (size_t i = 0; i < sizeof bad_pow2 / sizeof bad_pow2[0]; i++) {
    size_t up = 1;
    while (up < bad_pow2[i]) up <<= 1;
    for (int e = ENTRY_ALIGNED_ALLOC; e <= ENTRY_MEMALIGN; e++) {
      errno = 0;
      void *p = aligned_by(e, bad_pow2[i], 64);
      CHECKF((p == NULL && errno == EINVAL) || (p != NULL && test_is_aligned(p, up)),
             "%s(%zu, 64) = %p errno %d", entry_name[e], bad_pow2[i], p, errno);
      txalloc_free(p);
    }
  }
  /* Huge size with a valid alignment: ENOMEM, not a crash. */
  {
    void *out = (void *)0x1234;
    int rc = txalloc_posix_memalign(&out, 64, SIZE_MAX - 4096);
    CHECKF(rc == ENOMEM, "posix_memalign(64, huge) = %d", rc);
    errno = 0;
    void *p = txalloc_aligned_alloc(4096, SIZE_MAX / 2);
    CHECK(p == NULL && errno == ENOMEM);
    errno = 0;
    p = txalloc_memalign((size_t)1 << 20, SIZE_MAX - (size_t)(1 << 19));
    CHECK(p == NULL && errno == ENOMEM);
  }

  /* valloc: page-aligned; pvalloc: page-aligned, size rounded up to a whole page. */
  size_t vsizes[] = {0, 1, 100, 4095, 4096, 4097, 100000, (size_t)3 << 20};
  for (size_t i = 0; i < sizeof vsizes / sizeof vsizes[0]; i++) {
    size_t s = vsizes[i];
    void *v = txalloc_valloc(s);
    CHECKF(v != NULL && test_is_aligned(v, page), "valloc(%zu) = %p", s, v);
    if (v) {
      CHECK(txalloc_usable_size(v) >= s);
      test_fill(v, s, 5);
      CHECK(test_check(v, s, 5));
    }
    void *pv = txalloc_pvalloc(s);
    size_t rounded = s == 0 ? page : (s + page - 1) / page * page;
    CHECKF(pv != NULL && test_is_aligned(pv, page), "pvalloc(%zu) = %p", s, pv);
    if (pv) {
      CHECKF(txalloc_usable_size(pv) >= rounded, "pvalloc(%zu): usable %zu < %zu", s,
             txalloc_usable_size(pv), rounded);
      test_fill(pv, rounded, 6); /* the whole rounded size is the caller's */
      CHECK(test_check(pv, rounded, 6));
    }
    txalloc_free(v);
    txalloc_free(pv);
  }
  return check_exit();
}
