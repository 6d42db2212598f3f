/* The object stamps behind every allocator workload's "valid": a stamped object verifies
 * over its size and any prefix (what realloc keeps); a changed byte in any stamped word,
 * another tag, or a block copied to another offset fails; tags differ per stream and
 * counter; wl_check counts failures and wl_report then reports the run as not valid
 * (exit status 1). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "workload.h"

static long threads = 1, seed = 3;
static wl_option options[] = {
    {"threads", &threads, 1, 4, "threads"},
    {"seed", &seed, 0, 100, "seed"},
};
static const wl_program program = {"stamps", "test", "seed", options, 2};

int main(void) {
  static const size_t sizes[] = {1, 7, 8, 9, 63, 64, 65, 127, 200, 4096, 5000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t size = sizes[i];
    unsigned char *p = calloc(1, size + 64);
    uint64_t tag = wl_tag(1, i);
    wl_stamp(p, size, tag);
    CHECKF(wl_verify(p, size, tag), "size %zu", size);
    for (size_t prefix = 0; prefix <= size; prefix += 5)
      CHECKF(wl_verify(p, prefix, tag), "size %zu prefix %zu", size, prefix);
    CHECKF(!wl_verify(p, size, tag + 1), "size %zu: another tag verifies", size);
    /* Every byte of every stamped word matters. */
    for (size_t off = 0; off < size; off += 64) {
      size_t n = size - off < 8 ? size - off : 8;
      for (size_t k = 0; k < n; k++) {
        p[off + k] ^= 0x10;
        CHECKF(!wl_verify(p, size, tag), "size %zu: flipped byte %zu unnoticed", size, off + k);
        p[off + k] ^= 0x10;
      }
    }
    CHECK(wl_verify(p, size, tag));
    if (size >= 128) { /* lines differ: the second line copied over the first is caught */
      memcpy(p, p + 64, 8);
      CHECKF(!wl_verify(p, size, tag), "size %zu: moved line unnoticed", size);
    }
    free(p);
  }
  CHECK(wl_tag(1, 0) != wl_tag(1, 1));
  CHECK(wl_tag(1, 0) != wl_tag(2, 0));

  bench_rng rng;
  bench_rng_seed(&rng, 1, 0);
  for (int i = 0; i < 1000; i++) {
    size_t s = wl_size_between(&rng, 5, 9);
    CHECK(s >= 5 && s <= 9);
  }

  /* A failed check makes the report say valid:false and return 1. The report goes to
   * stdout; send it to /dev/null for this. */
  unsigned char buf[16] = {0};
  CHECK(wl_check("fresh object", buf, 16, wl_tag(1, 1)) == false);
  fflush(stdout);
  int saved = dup(1);
  CHECK(freopen("/dev/null", "w", stdout) != NULL);
  int status = wl_report(&program, 1.0, 10, NULL, NULL, true);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  CHECKF(status == 1, "status %d", status);
  return check_exit();
}
