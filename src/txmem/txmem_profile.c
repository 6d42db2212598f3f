/* The allocation profile by region (include/txalloc/txmem.h): the parallel-region marks,
 * the calls a program reports from outside this layer, the sum over the thread records, and
 * the table printed at exit with TXALLOC_PROFILE=1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "txmem/txmem_internal.h"
#include "txmem/txmem_options.h"
#include "util/message.h"

_Atomic unsigned txmem_parallel_open;

/* Index: the bit length of (size - 1) | 15; up to 16 bytes is 4. */
const uint8_t txmem_profile_bucket_of_bits[65] = {
    [0 ... 4] = 0, [5] = 1,  [6] = 2,  [7] = 3,  [8] = 4,
    [9] = 5,       [10] = 5, [11] = 6, [12] = 6, [13 ... 64] = 7,
};

static const size_t bucket_limit[TXMEM_PROFILE_BUCKETS] = {16,  32,   64,   128,
                                                           256, 1024, 4096, SIZE_MAX};

size_t txmem_profile_bucket_limit(unsigned b) {
  return b < TXMEM_PROFILE_BUCKETS ? bucket_limit[b] : 0;
}

const char *txmem_region_name(txmem_region r) {
  switch (r) {
  case TXMEM_REGION_SEQ: return "seq";
  case TXMEM_REGION_PAR: return "par";
  case TXMEM_REGION_TX: return "tx";
  case TXMEM_REGION_COUNT: break;
  }
  return "unknown";
}

void txmem_parallel_begin(void) { atomic_fetch_add(&txmem_parallel_open, 1); }

void txmem_parallel_end(void) {
  unsigned open = atomic_load(&txmem_parallel_open);
  /* more ends than begins would make every later call parallel: ignore the extra one */
  while (open && !atomic_compare_exchange_weak(&txmem_parallel_open, &open, open - 1)) {
  }
}

/* Malloc and free calls made outside this layer: counted as this layer's own calls outside
 * transactions are (txmem.c), in the thread's counters, registering the thread first. */
void txmem_profile_note_malloc(size_t size) {
  txmem_thread *t = &txmem_tls;
  if (TXMEM_UNLIKELY(!t->rec)) txmem_thread_setup(t);
  txmem_profile_count_malloc(&t->prof, txmem_profile_outside(), size);
}

void txmem_profile_note_free(const void *ptr) {
  if (!ptr) return;
  txmem_thread *t = &txmem_tls;
  if (TXMEM_UNLIKELY(!t->rec)) txmem_thread_setup(t);
  txmem_profile_count_free(&t->prof);
}

static uint64_t load(const uint64_t *word) { return __atomic_load_n(word, __ATOMIC_RELAXED); }

void txmem_profile_get(txmem_profile *out) {
  if (txmem_tls.ready) txmem_hot_publish(&txmem_tls); /* the caller's own counts are exact */
  memset(out, 0, sizeof *out);
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    const txmem_profile_counts *c = &r->profile;
    for (int region = 0; region < TXMEM_REGION_COUNT; region++) {
      txmem_region_profile *p = &out->region[region];
      for (int b = 0; b < TXMEM_PROFILE_BUCKETS; b++) p->sizes[b] += load(&c->sizes[region][b]);
      if (region == TXMEM_REGION_TX) {
        p->frees += load(&r->counters[TXMEM_C_tx_frees]);
        p->bytes += load(&r->counters[TXMEM_C_speculative_bytes]);
      } else {
        p->frees += load(&c->frees[region]);
        p->bytes += load(&c->bytes[region]);
      }
    }
  }
  for (int region = 0; region < TXMEM_REGION_COUNT; region++) {
    txmem_region_profile *p = &out->region[region];
    for (int b = 0; b < TXMEM_PROFILE_BUCKETS; b++) p->mallocs += p->sizes[b];
  }
}

/* ---- The table at exit (option profile), written without allocating ---- */
static void put(int fd, const char *text, size_t n) { txalloc_write_all(fd, text, n); }

static const char *const bucket_heading[TXMEM_PROFILE_BUCKETS] = {"<=16",  "<=32", "<=64", "<=128",
                                                                  "<=256", "<=1K", "<=4K", ">4K"};

static void print_table(int fd) {
  txmem_profile p;
  txmem_profile_get(&p);
  char line[512];
  int n = snprintf(line, sizeof line, "txalloc: allocation profile by region (txmem calls)\n%-6s",
                   "region");
  for (unsigned b = 0; b < TXMEM_PROFILE_BUCKETS && n > 0 && (size_t)n < sizeof line; b++) {
    n += snprintf(line + n, sizeof line - (size_t)n, " %12s", bucket_heading[b]);
  }
  if (n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, " %12s %12s %16s\n", "mallocs", "frees",
                  "bytes");
  if (n > 0) put(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  for (int region = 0; region < TXMEM_REGION_COUNT; region++) {
    const txmem_region_profile *r = &p.region[region];
    n = snprintf(line, sizeof line, "%-6s", txmem_region_name((txmem_region)region));
    for (int b = 0; b < TXMEM_PROFILE_BUCKETS && n > 0 && (size_t)n < sizeof line; b++)
      n += snprintf(line + n, sizeof line - (size_t)n, " %12llu", (unsigned long long)r->sizes[b]);
    if (n > 0 && (size_t)n < sizeof line)
      n += snprintf(line + n, sizeof line - (size_t)n, " %12llu %12llu %16llu\n",
                    (unsigned long long)r->mallocs, (unsigned long long)r->frees,
                    (unsigned long long)r->bytes);
    if (n > 0) put(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
}

__attribute__((destructor)) static void txmem_profile_at_exit(void) {
  if (!atomic_load(&txmem_registry) || !txalloc_opt(TXALLOC_OPT_PROFILE)) return;
  print_table(2);
}
