/* malloc-large: large and medium allocations (after the character of mimalloc-bench's
 * malloc-large; our own implementation). Each thread keeps a bounded live set of `live`
 * blocks; every operation picks a random slot, checks and frees the block in it (if any)
 * and mallocs a new one of a size uniform in [`min`, `max`] (64 KiB .. 4 MiB by default),
 * then touches it the way a program that fills a buffer would start to: one word per
 * page, so every page of the block is faulted in unless the allocator kept it resident.
 * Sizes in this range sit at or above most allocators' mmap thresholds and between their
 * size classes: the workload measures how a large block is obtained, recycled and given
 * back (mmap/munmap per block, page faults, cached spans). `--min 5242880 --max 26214400
 * --live 2` is the "5-25 MiB blocks allocated and freed in a loop" case. */
#include <stdlib.h>
#include <string.h>

#include "workload.h"

enum { PAGE = 4096 };

static long threads = 2, ops = 4000, live = 8, min_size = 64L << 10, max_size = 4L << 20, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"ops", &ops, 1, 1L << 40, "free + malloc + touch operations per thread"},
    {"live", &live, 1, 1L << 20, "blocks each thread keeps live (its slots)"},
    {"min", &min_size, 1, 1L << 34, "smallest block in bytes"},
    {"max", &max_size, 1, 1L << 34, "largest block in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "malloc-large",
    "Large and medium blocks: each thread replaces random blocks of a bounded live set with\n"
    "new ones of random size in [min, max] (64 KiB .. 4 MiB by default) and touches one word\n"
    "per page of each; --min/--max 5-25 MiB gives the large-block loop.",
    "ops", options, sizeof options / sizeof options[0]};

typedef struct block {
  unsigned char *data;
  size_t size;
  uint64_t tag;
} block;

typedef struct thread_totals {
  WL_OWN_LINE uint64_t mallocs, frees, pages;
  double bytes;
} thread_totals;

static uint64_t page_word(uint64_t tag, size_t offset) {
  return tag ^ (offset * 0x9e3779b97f4a7c15ULL);
}

/* One word at the start of every page of the block and the block's last word. */
static uint64_t touch(block *b) {
  uint64_t pages = 0;
  for (size_t off = 0; off + 8 <= b->size; off += PAGE, pages++) {
    uint64_t w = page_word(b->tag, off);
    memcpy(b->data + off, &w, 8);
  }
  if (b->size >= 8) {
    uint64_t w = page_word(b->tag, b->size - 8) ^ 1; /* differs from a page word there */
    memcpy(b->data + b->size - 8, &w, 8);
  }
  return pages;
}

static bool verify(const block *b) {
  if (b->size >= 8) {
    uint64_t w = page_word(b->tag, b->size - 8) ^ 1, got;
    memcpy(&got, b->data + b->size - 8, 8);
    if (got != w) return false;
  }
  for (size_t off = 0; off + 16 <= b->size; off += PAGE) { /* the last word may overlap */
    uint64_t got;
    memcpy(&got, b->data + off, 8);
    if (got != page_word(b->tag, off)) return false;
  }
  return true;
}

static void worker(int index, void *arg) {
  thread_totals *t = &((thread_totals *)arg)[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t stream = (uint64_t)index + 1, counter = 0;
  block *slots = wl_calloc((size_t)live, sizeof *slots);
  for (long i = 0; i < ops; i++) {
    block *b = &slots[bench_rng_below(&rng, (uint64_t)live)];
    if (b->data) {
      if (!verify(b)) wl_corrupt("large block before free", b->data, b->tag);
      free(b->data);
      t->frees++;
    }
    b->size = wl_size_between(&rng, min_size, max_size);
    b->data = wl_malloc(b->size);
    b->tag = wl_tag(stream, counter++);
    t->pages += touch(b);
    t->mallocs++;
    t->bytes += (double)b->size;
  }
  for (long i = 0; i < live; i++) {
    if (!slots[i].data) continue;
    if (!verify(&slots[i])) wl_corrupt("large block at the end", slots[i].data, slots[i].tag);
    free(slots[i].data);
    t->frees++;
  }
  free(slots);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "mallocs", sum->mallocs);
  bench_json_uint(j, "frees", sum->frees);
  bench_json_uint(j, "pages_touched", sum->pages);
  bench_json_double(j, "allocated_mib", sum->bytes / (1024.0 * 1024.0));
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  thread_totals sum = {0};
  for (long i = 0; i < threads; i++) {
    sum.mallocs += totals[i].mallocs, sum.frees += totals[i].frees;
    sum.pages += totals[i].pages, sum.bytes += totals[i].bytes;
  }
  free(totals);
  bool valid = sum.mallocs == (uint64_t)threads * (uint64_t)ops && sum.frees == sum.mallocs;
  /* ops: blocks allocated (each also touched and later freed) */
  return wl_report(&program, time_s, sum.mallocs, extra, &sum, valid);
}
