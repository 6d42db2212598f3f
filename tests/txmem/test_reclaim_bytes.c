/* A reclamation pass comes after 64 deferred frees (SCAN_BATCH in txmem_epoch.c) or after
 * 1 MiB of them (SCAN_BATCH_BYTES), whichever is first: a few large objects do not wait in
 * the limbo for the 64th free. One thread, so nothing holds a pass back and every pass
 * empties the limbo:
 *   1. after a flush, small frees wait (the count is not reached);
 *   2. one free of 2 MiB passes the byte mark: the pass releases it and the small ones;
 *   3. frees of 192 KiB: the limbo never holds 1 MiB + 192 KiB or more, and empties at
 *      least every sixth free.
 * Before the byte mark existed, step 2 left 2 MiB and step 3 up to 63 x 192 KiB waiting. */
#include <stdio.h>
#include <unistd.h>

#include "txmem_test.h"

#define MIB ((size_t)1 << 20)

/* One committed transaction freeing one object of `size` bytes allocated before it;
 * returns the limbo afterwards. */
static txmem_stats commit_free(size_t size) {
  void *p = txmem_malloc(size);
  CHECK(p != NULL);
  txmem_tx_begin(1);
  txmem_free(p);
  txmem_tx_commit(1);
  txmem_stats s;
  txmem_stats_get(&s);
  return s;
}

int main(void) {
  test_set_option("safe_reuse", "1");
  alarm(60);
  txmem_flush(); /* an empty limbo: the next pass is 64 frees or 1 MiB away */

  txmem_stats s;
  for (int i = 1; i <= 3; i++) {
    s = commit_free(64);
    CHECKF(s.limbo_objects == (uint64_t)i, "step 1: limbo %llu after %d small frees",
           (unsigned long long)s.limbo_objects, i);
  }

  s = commit_free(2 * MIB);
  CHECKF(s.limbo_objects == 0 && s.limbo_bytes == 0,
         "step 2: a 2 MiB free left %llu objects, %llu bytes in the limbo",
         (unsigned long long)s.limbo_objects, (unsigned long long)s.limbo_bytes);

  int since_empty = 0, longest = 0;
  uint64_t most_bytes = 0;
  for (int i = 0; i < 40; i++) {
    s = commit_free(192 << 10);
    if (s.limbo_bytes > most_bytes) most_bytes = s.limbo_bytes;
    since_empty = s.limbo_objects ? since_empty + 1 : 0;
    if (since_empty > longest) longest = since_empty;
  }
  CHECKF(most_bytes < MIB + (192 << 10), "step 3: the limbo held %llu bytes",
         (unsigned long long)most_bytes);
  CHECKF(longest <= 5, "step 3: %d frees in a row left the limbo non-empty", longest);
  CHECK(s.reclaimed > 0);
  return check_exit();
}
