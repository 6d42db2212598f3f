/* The Syncchar recorder's per-thread side (tm_syncchar.h): times of every top-level block,
 * address sets of the sampled ones, records into a per-thread buffer. */
#include "tm/tm_syncchar.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tm/tm_backend.h"
#include "tm/tm_options.h"
#include "util/message.h"
#include "util/options.h"

/* Words of a thread's record buffer; a record that does not fit flushes it first. */
#define BUFFER_WORDS ((size_t)1 << 16)
#define SECTION_HEADER_WORDS 8
_Static_assert(SECTION_HEADER_WORDS + 2 * TM_SC_SET_MAX <= BUFFER_WORDS,
               "the largest SECTION record fits in a buffer");

struct tm_syncchar_thread {
  unsigned id; /* from 1, in the order threads first began a block */
  uint64_t rng;
  /* The running block: its site, the begin of its first attempt, its current attempt's
   * begin and the moment the backend had begun it, whether it is sampled. */
  uintptr_t site, pending_site;
  uint64_t block_begin, attempt_begin, attempt_begun;
  bool sampled;
  bool truncated;
  /* The attempt's units, appended as met (duplicates removed at the end); last_*: the
   * newest, which consecutive accesses repeat most. */
  uint64_t *reads, *writes;
  size_t nreads, nwrites;
  uint64_t last_read, last_write;
  /* Counters over every block (the THREAD record). */
  uint64_t sections, sampled_sections, aborts, acq_ns, held_ns, first_ns, last_ns;
  unsigned block_aborts; /* aborted attempts of the block now running */
  uint64_t record_ns;    /* spent writing SECTION records: not the program's own time */
  uint64_t *buf;
  size_t used;
  tm_syncchar_thread *next; /* every recorder, for the flush at process exit */
};

bool tm_syncchar_on;
__thread tm_syncchar_thread *tm_syncchar_self __attribute__((tls_model("initial-exec")));
static __thread tm_syncchar_thread *thread_recorder;

static unsigned unit_shift;
static unsigned sample_percent;
static bool record_objects;
static unsigned thread_count;
static pthread_mutex_t recorders_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_syncchar_thread *recorders;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void flush(tm_syncchar_thread *r) {
  tm_syncchar_trace_write(r->buf, r->used);
  r->used = 0;
}

/* Room for `n` words (at most BUFFER_WORDS) in the buffer, flushing it when needed. */
static uint64_t *reserve(tm_syncchar_thread *r, size_t n) {
  if (r->used + n > BUFFER_WORDS) flush(r);
  uint64_t *w = &r->buf[r->used];
  r->used += n;
  return w;
}

static void write_thread_record(tm_syncchar_thread *r) {
  uint64_t *w = reserve(r, 10);
  w[0] = TM_SC_RECORD_THREAD | (uint64_t)(10 * 8) << 32;
  w[1] = r->id;
  w[2] = r->sections;
  w[3] = r->sampled_sections;
  w[4] = r->aborts;
  w[5] = r->acq_ns;
  w[6] = r->held_ns;
  w[7] = r->first_ns;
  w[8] = r->last_ns;
  w[9] = r->record_ns;
}

/* Every recorder's records at process exit (the exited threads' buffers are empty). The
 * threads still running then lose nothing they finished before their buffer was read. */
static void flush_all_at_exit(void) {
  pthread_mutex_lock(&recorders_lock);
  for (tm_syncchar_thread *r = recorders; r; r = r->next) {
    if (!r->buf) continue;
    write_thread_record(r);
    flush(r);
  }
  pthread_mutex_unlock(&recorders_lock);
}

static void hook_into_runtime(void);

void tm_syncchar_init(const char *backend_name) {
  if (!txalloc_opt(TXALLOC_OPT_SYNCCHAR)) return;
  char path[4096];
  txalloc_option_format((size_t)TXALLOC_OPT_SYNCCHAR, path, sizeof path);
  unsigned unit = (unsigned)txalloc_opt(TXALLOC_OPT_SYNCCHAR_UNIT);
  unsigned stm_shift = (unsigned)txalloc_opt(TXALLOC_OPT_SHIFT);
  unit_shift = unit == 0 ? 3 : unit == 1 ? 6 : stm_shift;
  sample_percent = (unsigned)txalloc_opt(TXALLOC_OPT_SYNCCHAR_SAMPLE);
  record_objects = txalloc_opt(TXALLOC_OPT_SYNCCHAR_OBJECTS) != 0;
  if (!tm_syncchar_trace_open(path, unit, unit_shift, stm_shift, sample_percent,
                              (unsigned)txalloc_opt(TXALLOC_OPT_SYNCCHAR_WINDOW), backend_name,
                              now_ns())) {
    txalloc_message("syncchar: cannot open %s; nothing is recorded", path);
    return;
  }
  tm_syncchar_trace_write_maps();
  atexit(flush_all_at_exit);
  hook_into_runtime();
  __atomic_store_n(&tm_syncchar_on, true, __ATOMIC_RELEASE);
}

static tm_syncchar_thread *recorder(void) {
  tm_syncchar_thread *r = thread_recorder;
  if (TM_LIKELY(r != NULL)) return r;
  r = calloc(1, sizeof *r);
  uint64_t *buf = malloc(BUFFER_WORDS * sizeof *buf);
  uint64_t *reads = malloc(TM_SC_SET_MAX * sizeof *reads);
  uint64_t *writes = malloc(TM_SC_SET_MAX * sizeof *writes);
  if (!r || !buf || !reads || !writes) tm_fatal("syncchar: out of memory for a recorder");
  r->buf = buf;
  r->reads = reads;
  r->writes = writes;
  pthread_mutex_lock(&recorders_lock);
  r->id = ++thread_count;
  r->next = recorders;
  recorders = r;
  pthread_mutex_unlock(&recorders_lock);
  r->rng = 0x9E3779B97F4A7C15ull * r->id;
  thread_recorder = r;
  return r;
}

void tm_syncchar_site(void *site) { recorder()->pending_site = (uintptr_t)site; }

static bool draw_sample(tm_syncchar_thread *r) {
  if (sample_percent >= 100) return true;
  r->rng ^= r->rng << 13;
  r->rng ^= r->rng >> 7;
  r->rng ^= r->rng << 17;
  return r->rng % 100 < sample_percent;
}

static void before_begin(tm_tx *tx, bool fresh) {
  tm_syncchar_thread *r = recorder();
  uint64_t t = now_ns();
  if (fresh) {
    r->block_aborts = 0;
    r->block_begin = t;
    r->sampled = draw_sample(r);
#ifdef TM_HAVE_FAST_ENTRY_
    tm_context_ *ctx = tx->levels[1]->ctx;
    r->site = ctx ? (uintptr_t)ctx->regs_[7] : r->pending_site;
#else
    (void)tx;
    r->site = r->pending_site;
#endif
  }
  r->attempt_begin = t;
  r->nreads = r->nwrites = 0;
  r->last_read = r->last_write = UINT64_MAX;
  r->truncated = false;
  tm_syncchar_self = NULL; /* the backend's own begin is not the block's */
}

static void after_begin(void) {
  tm_syncchar_thread *r = thread_recorder;
  r->attempt_begun = now_ns();
  if (r->sampled) {
    /* Every access of this attempt reaches the front-end (tm_access.c). */
    tm_fast_view_ = TM_VIEW_OFF_;
    tm_syncchar_self = r;
  }
}

/* The recorder wraps the backend's begins (tm_be, at initialisation) and hears commits as
 * a registered callback, so that blocks pay nothing for it while it is off. */
static void (*backend_begin_first)(tm_tx *tx, int flags);
static void (*backend_begin_again)(tm_tx *tx, int flags);

static void begin_first_recorded(tm_tx *tx, int flags) {
  before_begin(tx, true);
  backend_begin_first(tx, flags);
  after_begin();
}

static void begin_again_recorded(tm_tx *tx, int flags) {
  before_begin(tx, false);
  backend_begin_again(tx, flags);
  after_begin();
}

static void add_unit(tm_syncchar_thread *r, uint64_t unit, bool write) {
  if (write) {
    if (unit == r->last_write) return;
    r->last_write = unit;
    if (r->nwrites == TM_SC_SET_MAX) {
      r->truncated = true;
      return;
    }
    r->writes[r->nwrites++] = unit;
  } else {
    if (unit == r->last_read) return;
    r->last_read = unit;
    if (r->nreads == TM_SC_SET_MAX) {
      r->truncated = true;
      return;
    }
    r->reads[r->nreads++] = unit;
  }
}

void tm_syncchar_access(uintptr_t addr, unsigned size, bool write) {
  tm_syncchar_thread *r = tm_syncchar_self;
  uint64_t first = (uint64_t)addr >> unit_shift, last = ((uint64_t)addr + size - 1) >> unit_shift;
  add_unit(r, first << unit_shift, write);
  if (last != first) add_unit(r, last << unit_shift, write);
}

/* Sorts v[0, n): quicksort (median of three) down to runs of 16, then one insertion pass;
 * inline comparisons, several times faster than qsort's callback on the list's long read
 * sets. */
static void sort_units(uint64_t *v, size_t n) {
  while (n > 16) {
    uint64_t a = v[0], b = v[n / 2], c = v[n - 1];
    uint64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    size_t i = 0, j = n - 1;
    for (;;) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i >= j) break;
      uint64_t t = v[i];
      v[i++] = v[j];
      v[j--] = t;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse into the smaller part, loop on the larger. */
    if (j + 1 < n - j - 1) {
      sort_units(v, j + 1);
      v += j + 1;
      n -= j + 1;
    } else {
      sort_units(v + j + 1, n - j - 1);
      n = j + 1;
    }
  }
  for (size_t i = 1; i < n; i++) {
    uint64_t x = v[i];
    size_t k = i;
    for (; k > 0 && v[k - 1] > x; k--) v[k] = v[k - 1];
    v[k] = x;
  }
}

static size_t sort_unique(uint64_t *v, size_t n) {
  if (n < 2) return n;
  sort_units(v, n);
  size_t k = 1;
  for (size_t i = 1; i < n; i++)
    if (v[i] != v[k - 1]) v[k++] = v[i];
  return k;
}

/* Drops from the sorted reads the units also written: the address set is reads + writes. */
static size_t minus(uint64_t *reads, size_t nr, const uint64_t *writes, size_t nw) {
  size_t k = 0, j = 0;
  for (size_t i = 0; i < nr; i++) {
    while (j < nw && writes[j] < reads[i]) j++;
    if (j < nw && writes[j] == reads[i]) continue;
    reads[k++] = reads[i];
  }
  return k;
}

/* The block ended: counters for every block, a SECTION record for a sampled one. */
static void end_block(tm_syncchar_thread *r, tm_tx *tx, unsigned retries, unsigned flags) {
  uint64_t t = now_ns();
  uint64_t acq = r->attempt_begun - r->attempt_begin, held = t - r->attempt_begun;
  r->sections++;
  r->acq_ns += acq;
  r->held_ns += held;
  if (!r->first_ns) r->first_ns = r->block_begin;
  r->last_ns = t;
  tm_syncchar_self = NULL;
  if (!r->sampled) return;
  r->sampled_sections++;
  size_t nw = sort_unique(r->writes, r->nwrites);
  size_t nr = minus(r->reads, sort_unique(r->reads, r->nreads), r->writes, nw);
  size_t n = SECTION_HEADER_WORDS + nr + nw;
  if (r->truncated) flags |= TM_SC_FLAG_TRUNCATED;
  if (tx->levels[1]->flags & TM_FLAG_READ_ONLY) flags |= TM_SC_FLAG_READ_ONLY;
  if (tx->irrevocable) flags |= TM_SC_FLAG_IRREVOCABLE;
  uint64_t *w = reserve(r, n);
  w[0] = TM_SC_RECORD_SECTION | (uint64_t)(n * 8) << 32;
  w[1] = r->id | (uint64_t)flags << 32;
  w[2] = r->site;
  w[3] = r->block_begin;
  w[4] = acq;
  w[5] = held;
  w[6] = retries;
  w[7] = nr | (uint64_t)nw << 32;
  memcpy(&w[8], r->reads, nr * sizeof *w);
  memcpy(&w[8 + nr], r->writes, nw * sizeof *w);
  r->record_ns += now_ns() - t;
}

void tm_syncchar_abort(tm_tx *tx, bool cancel) {
  tm_syncchar_thread *r = thread_recorder;
  r->aborts++;
  r->block_aborts++;
  if (cancel) end_block(r, tx, r->block_aborts - 1, TM_SC_FLAG_CANCELLED);
  tm_syncchar_self = NULL;
}

static void on_commit(void *ctx, unsigned depth) {
  (void)ctx;
  tm_syncchar_thread *r = thread_recorder;
  if (depth == 1 && r) end_block(r, tm_self, r->block_aborts, 0);
}

static void hook_into_runtime(void) {
  backend_begin_first = tm_be.begin_first;
  backend_begin_again = tm_be.begin_again;
  tm_be.begin_first = begin_first_recorded;
  tm_be.begin_again = begin_again_recorded;
  static const tm_callbacks commits = {.on_commit = on_commit};
  if (tm_register_callbacks(&commits) != 0) tm_fatal("syncchar: the callback table is full");
}

void tm_syncchar_alloc(void *ptr, size_t size, void *site) {
  if (!record_objects) return;
  uint64_t *w = reserve(recorder(), 5);
  w[0] = TM_SC_RECORD_ALLOC | (uint64_t)(5 * 8) << 32;
  w[1] = thread_recorder->id | (uint64_t)(size < UINT32_MAX ? size : UINT32_MAX) << 32;
  w[2] = (uintptr_t)ptr;
  w[3] = (uintptr_t)site;
  w[4] = now_ns();
}

void tm_syncchar_free(void *ptr) {
  if (!record_objects || !ptr) return;
  uint64_t *w = reserve(recorder(), 4);
  w[0] = TM_SC_RECORD_FREE | (uint64_t)(4 * 8) << 32;
  w[1] = thread_recorder->id;
  w[2] = (uintptr_t)ptr;
  w[3] = now_ns();
}

/* The recorder stays on the list (its buffer empty) until process exit: a descriptor is
 * reused by the next thread, a recorder is not, so each thread keeps its own id. */
void tm_syncchar_thread_exit(void) {
  tm_syncchar_thread *r = thread_recorder;
  if (!r) return;
  pthread_mutex_lock(&recorders_lock);
  write_thread_record(r);
  flush(r);
  free(r->reads);
  free(r->writes);
  free(r->buf);
  r->buf = r->reads = r->writes = NULL;
  pthread_mutex_unlock(&recorders_lock);
  thread_recorder = NULL;
  tm_syncchar_self = NULL;
}
