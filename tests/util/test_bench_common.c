/* bench_common: the JSON writer's nesting, commas and escaping (parsed back with a
 * strict comparison against the expected text), the argument parsers' accepted ranges,
 * the RNG's determinism per (seed, stream), and that peak RSS (VmHWM) sees memory the
 * process touched. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "check.h"

int main(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  bench_json j;
  bench_json_begin(&j, mem);
  bench_json_str(&j, "workload", "t\"e\\s\nt");
  bench_json_object(&j, "params");
  bench_json_int(&j, "n", -3);
  bench_json_uint(&j, "u", 18446744073709551615ULL);
  bench_json_end(&j);
  bench_json_array(&j, "hist");
  bench_json_int(&j, NULL, 1);
  bench_json_object(&j, NULL);
  bench_json_bool(&j, "ok", true);
  bench_json_end(&j);
  bench_json_end(&j);
  bench_json_double(&j, "x", 0.5);
  bench_json_double(&j, "inf", 1.0 / 0.0);
  bench_json_finish(&j);
  fclose(mem);
  const char *expected = "{\"workload\":\"t\\\"e\\\\s\\nt\",\"params\":{\"n\":-3,"
                         "\"u\":18446744073709551615},\"hist\":[1,{\"ok\":true}],"
                         "\"x\":0.5,\"inf\":null}\n";
  CHECKF(strcmp(text, expected) == 0, "got %s", text);
  free(text);

  /* Without LD_PRELOAD the process's malloc is glibc's, or the sanitizer's own in the
   * sanitizer builds. */
  const char *name = bench_allocator_name();
  CHECKF(getenv("LD_PRELOAD") != NULL || strcmp(name, "glibc") == 0 || strcmp(name, "tsan") == 0 ||
             strcmp(name, "asan") == 0,
         "allocator %s", name);

  bench_rng a, b, c;
  bench_rng_seed(&a, 42, 0);
  bench_rng_seed(&b, 42, 0);
  bench_rng_seed(&c, 42, 1);
  int same = 1, differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = bench_rng_next(&a), y = bench_rng_next(&b), z = bench_rng_next(&c);
    same &= x == y;
    differ |= x != z;
  }
  CHECK(same);
  CHECK(differ);
  for (int i = 0; i < 10000; i++) CHECK(bench_rng_below(&a, 7) < 7);
  CHECK(bench_parse_long("--n", "0x10", 0, 100) == 16);
  CHECK(bench_parse_double("--d", "2.5", 0, 3) == 2.5);
  static const char *const names[] = {"list", "hash"};
  CHECK(bench_parse_choice("--s", "hash", names, 2) == 1);

  /* Peak RSS grows by what we touch: 48 MiB written page by page. */
  long before = bench_peak_rss_kib();
  CHECK(before > 0);
  size_t big = 48u << 20;
  volatile char *p = malloc(big);
  CHECK(p != NULL);
  for (size_t off = 0; p && off < big; off += 4096) p[off] = 1;
  long after = bench_peak_rss_kib();
  CHECKF(after >= before && after >= (long)(big >> 10), "before %ld after %ld KiB", before, after);
  free((void *)p);
  return check_exit();
}
