/* The allocation profile in a bench program: linking bench_profile marks the thread
 * runners' parallel region, and bench_json_alloc_profile writes the counts. A known
 * sequence: one sequential allocation of 100 bytes; on each of two threads started by
 * bench_run_threads, three allocations of 40 bytes freed again outside transactions and one
 * transaction that allocates 10 bytes and frees them. Run with TXALLOC_PROFILE=1, the same
 * counts appear in the table at exit (ctest matches it), plus the sequential free made after
 * the JSON was written. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_profile.h"
#include "check.h"
#include "txalloc/txmem.h"

static void worker(int index, void *arg) {
  (void)index, (void)arg;
  void *p[3];
  for (int i = 0; i < 3; i++) p[i] = txmem_malloc(40);
  for (int i = 0; i < 3; i++) txmem_free(p[i]);
  txmem_tx_begin(1);
  txmem_free(txmem_malloc(10));
  txmem_tx_commit(1);
}

static const char *const expected[] = {
    "\"seq\":{\"mallocs\":1,\"frees\":0,\"bytes\":100,\"sizes\":{\"16\":0,\"32\":0,\"64\":0,"
    "\"128\":1,\"256\":0,\"1024\":0,\"4096\":0,\"larger\":0}}",
    "\"par\":{\"mallocs\":6,\"frees\":6,\"bytes\":240,\"sizes\":{\"16\":0,\"32\":0,\"64\":6,"
    "\"128\":0,\"256\":0,\"1024\":0,\"4096\":0,\"larger\":0}}",
    "\"tx\":{\"mallocs\":2,\"frees\":2,\"bytes\":20,\"sizes\":{\"16\":2,\"32\":0,\"64\":0,"
    "\"128\":0,\"256\":0,\"1024\":0,\"4096\":0,\"larger\":0}}",
};

int main(void) {
  void *seq = txmem_malloc(100);
  bench_run_threads(2, worker, NULL);

  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  CHECK(mem != NULL);
  bench_json j;
  bench_json_begin(&j, mem);
  bench_json_alloc_profile(&j);
  bench_json_finish(&j);
  fclose(mem);
  CHECKF(strstr(text, "{\"alloc_profile\":{\"seq\":") == text, "%s", text);
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    CHECKF(strstr(text, expected[i]) != NULL, "missing %s in %s", expected[i], text);
  free(text);
  txmem_free(seq);
  return check_exit();
}
