/* Safe reuse (McRT §4.2) without a daemon thread.
 *
 * txmem_g_epoch is McRT's currentFreeEpoch. A top-level transaction announces, in its thread's
 * record, the epoch it began in (active_epoch; 0 = none). A batch of frees made visible by
 * a committed transaction (or txmem_retire) is tagged with E = fetch_add(txmem_g_epoch, 1) and
 * put at the tail of the thread's FIFO limbo. safeToFreeEpoch is computed on demand by the
 * freeing thread: the least announced epoch among running transactions (or "infinity");
 * an object tagged E is released when E < that minimum.
 *
 * Why that is safe (all operations on txmem_g_epoch and active_epoch are seq_cst):
 *  - The unlink of the object is visible (the commit happened) before the freer's
 *    fetch_add that produced E.
 *  - A transaction that announced a > E loaded txmem_g_epoch from a write at or after that
 *    fetch_add in txmem_g_epoch's modification order, so its load synchronises with the freer's
 *    release (release sequences continue through RMWs): every read it makes afterwards sees
 *    the unlink; it can never obtain a pointer to the object.
 *  - A transaction seen as "not running" (0) by the freer's scan may be between loading
 *    txmem_g_epoch and announcing it. It announces, then loads txmem_g_epoch again and retries
 * until both agree. Its announcement comes after the scan in the seq_cst order, hence after the
 * fetch_add, so the re-load returns a value > E and the retry announces that value: case 2 again.
 * So no transaction that could hold a pointer to the object is running when it is released.
 *
 * Asymmetric variant (option txmem_membarrier=1, used where the kernel offers expedited
 * membarrier): the announcement is a plain store, so the only ordering the argument needs
 * that it loses — the announcing thread's store before its re-load of g_epoch (store-load)
 * — is restored on the reclaiming side: each scan first runs membarrier(PRIVATE_EXPEDITED),
 * which returns only after every thread of the process passed a full barrier. For a
 * transaction T and a scan S after the freer's fetch_add: if T's store was before T's
 * barrier, S reads it (the first two cases above); otherwise T's re-load comes after T's barrier,
 * which follows the fetch_add (the scan's own membarrier orders it), so the re-load returns
 * a value > E and T retries with it: T can never obtain a pointer to the object. This
 * moves the full barrier from every top-level begin to every scan (one per 64 deferred
 * frees at most). A membarrier costs ~0.3 us with one thread and microseconds with IPIs,
 * i.e. more per deferred free than the exchange per transaction saves unless transactions
 * rarely free: hence off by default. ThreadSanitizer does not model membarrier: its builds
 * keep the seq_cst exchange.
 * Scans cost O(threads) and run only when the limbo grew by a batch since the last scan
 * (amortised O(1) per free). An idle or exited thread announces 0 and holds nothing back.
 *
 * High-water mark (option txmem_limbo_max): when a thread's limbo exceeds it after a scan,
 * the thread (outside any transaction, its own announcement withdrawn) calls the runtime's
 * stale hook (ask old transactions to validate and abort when doomed) and waits, yielding,
 * until its limbo is below half the mark. The wait ends as soon as every transaction that
 * was running at the frees has ended: later ones announce epochs > E.
 *
 * Exited threads hand their limbo to a global orphan list (under a mutex); scans of other
 * threads release the orphans whose epoch became safe. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "txmem/txmem_internal.h"
#include "util/message.h"

#define SCAN_BATCH 64

_Atomic uint64_t txmem_g_epoch = 1;

static txmem_stale_hook g_stale_hook;
static void *g_stale_arg;
static pthread_mutex_t g_stale_lock = PTHREAD_MUTEX_INITIALIZER;

/* Orphans: limbo entries of exited threads. */
static pthread_mutex_t g_orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static txmem_limbo_entry *g_orphans;
static size_t g_orphan_len, g_orphan_cap;
static _Atomic size_t g_orphan_count; /* mirror of g_orphan_len for lock-free checks */
static _Atomic uint64_t g_orphan_bytes;

uint64_t txmem_epoch_now(void);
uint64_t txmem_epoch_now(void) { return atomic_load(&txmem_g_epoch); }

void txmem_orphan_gauges(uint64_t *objects, uint64_t *bytes);
void txmem_orphan_gauges(uint64_t *objects, uint64_t *bytes) {
  *objects = atomic_load_explicit(&g_orphan_count, memory_order_relaxed);
  *bytes = atomic_load_explicit(&g_orphan_bytes, memory_order_relaxed);
}

void txmem_set_stale_hook(txmem_stale_hook hook, void *arg) {
  pthread_mutex_lock(&g_stale_lock);
  g_stale_hook = hook;
  g_stale_arg = arg;
  pthread_mutex_unlock(&g_stale_lock);
}

/* With asym_fence, announcements are plain stores: before reading them, make every thread
 * of the process pass a full barrier (membarrier). */
static void scan_barrier(void) {
#if !defined(__SANITIZE_THREAD__) && defined(SYS_membarrier)
  if (txmem_cfg.asym_fence && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
    txalloc_message("txmem: membarrier failed after registration; cannot reclaim safely");
    abort();
  }
#endif
}

/* Least epoch announced by a running transaction; UINT64_MAX when none runs. */
static uint64_t oldest_running_epoch(void) {
  scan_barrier();
  uint64_t min = UINT64_MAX;
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    uint64_t a = atomic_load(&r->active_epoch);
    if (a && a < min) min = a;
  }
  return min;
}

static void limbo_gauges(txmem_thread *t) {
  txmem_record *r = t->rec;
  __atomic_store_n(&r->limbo_objects, t->limbo_len, __ATOMIC_RELAXED);
  __atomic_store_n(&r->limbo_bytes, t->limbo_bytes, __ATOMIC_RELAXED);
  if (t->limbo_len > r->limbo_peak)
    __atomic_store_n(&r->limbo_peak, t->limbo_len, __ATOMIC_RELAXED);
}

static void limbo_push(txmem_thread *t, void *ptr, size_t size, uint64_t epoch) {
  if (t->limbo_len == t->limbo_cap) {
    /* Grow the ring and unwrap it: entries [head, cap) then [0, head). */
    size_t old_cap = t->limbo_cap;
    size_t new_cap = old_cap ? old_cap * 2 : 256;
    txmem_limbo_entry *n = malloc(new_cap * sizeof *n);
    if (!n) txmem_contract_error("out of memory for the limbo", 0, t->depth);
    size_t first = old_cap - t->limbo_head;
    if (first > t->limbo_len) first = t->limbo_len;
    if (t->limbo_len) {
      memcpy(n, t->limbo + t->limbo_head, first * sizeof *n);
      memcpy(n + first, t->limbo, (t->limbo_len - first) * sizeof *n);
    }
    free(t->limbo);
    t->limbo = n;
    t->limbo_cap = new_cap;
    t->limbo_head = 0;
  }
  t->limbo[(t->limbo_head + t->limbo_len) & (t->limbo_cap - 1)] =
      (txmem_limbo_entry){ptr, size, epoch};
  t->limbo_len++;
  t->limbo_bytes += size;
}

static void release_orphans(txmem_thread *t, uint64_t safe_below, bool wait_for_lock) {
  if (!atomic_load_explicit(&g_orphan_count, memory_order_relaxed)) return;
  if (wait_for_lock)
    pthread_mutex_lock(&g_orphan_lock);
  else if (pthread_mutex_trylock(&g_orphan_lock) != 0)
    return;
  size_t w = 0, released = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < g_orphan_len; i++) {
    if (g_orphans[i].epoch < safe_below) {
      txmem_backend_release(t, g_orphans[i].ptr);
      bytes += g_orphans[i].size;
      released++;
    } else {
      g_orphans[w++] = g_orphans[i];
    }
  }
  g_orphan_len = w;
  atomic_store_explicit(&g_orphan_count, w, memory_order_relaxed);
  atomic_fetch_sub_explicit(&g_orphan_bytes, bytes, memory_order_relaxed);
  pthread_mutex_unlock(&g_orphan_lock);
  txmem_count(t, TXMEM_C_reclaimed, released);
}

/* One reclamation pass: releases every limbo entry (and orphan) whose epoch is safe.
 * Returns the oldest running epoch it saw. */
static uint64_t reclaim_pass(txmem_thread *t, bool wait_for_orphans) {
  uint64_t safe_below = oldest_running_epoch();
  txmem_count(t, TXMEM_C_reclaim_scans, 1);
  size_t released = 0;
  while (t->limbo_len) {
    txmem_limbo_entry *e = &t->limbo[t->limbo_head];
    if (e->epoch >= safe_below) break; /* FIFO: later entries are no older */
    txmem_backend_release(t, e->ptr);
    t->limbo_bytes -= e->size;
    t->limbo_head = (t->limbo_head + 1) & (t->limbo_cap - 1);
    t->limbo_len--;
    released++;
  }
  txmem_count(t, TXMEM_C_reclaimed, released);
  release_orphans(t, safe_below, wait_for_orphans);
  t->limbo_next_scan = t->limbo_len + SCAN_BATCH;
  limbo_gauges(t);
  return safe_below;
}

static void call_stale_hook(uint64_t epoch) {
  pthread_mutex_lock(&g_stale_lock);
  txmem_stale_hook hook = g_stale_hook;
  void *arg = g_stale_arg;
  pthread_mutex_unlock(&g_stale_lock);
  if (hook) hook(epoch, arg);
}

/* The limbo grew: scan when a batch accumulated; wait when over the high-water mark.
 * Called outside any transaction (depth 0, announcement withdrawn). */
static void limbo_grew(txmem_thread *t) {
  limbo_gauges(t);
  if (t->limbo_len < t->limbo_next_scan && t->limbo_len <= txmem_cfg.limbo_max) return;
  reclaim_pass(t, false);
  if (t->limbo_len <= txmem_cfg.limbo_max) return;
  txmem_count(t, TXMEM_C_forced_reclamations, 1);
  while (t->limbo_len > txmem_cfg.limbo_max / 2) {
    call_stale_hook(t->limbo[t->limbo_head].epoch + 1);
    sched_yield();
    reclaim_pass(t, false);
  }
}

void txmem_epoch_release_committed(txmem_thread *t, void **ptrs, size_t n) {
  uint64_t bytes = 0;
  if (!txmem_cfg.safe_reuse) {
    for (size_t i = 0; i < n; i++) {
      bytes += txmem_backend_usable(ptrs[i]);
      txmem_backend_release(t, ptrs[i]);
    }
  } else {
    uint64_t e = atomic_fetch_add(&txmem_g_epoch, 1);
    for (size_t i = 0; i < n; i++) {
      size_t size = txmem_backend_usable(ptrs[i]);
      bytes += size;
      limbo_push(t, ptrs[i], size, e);
    }
  }
  txmem_count(t, TXMEM_C_speculative_frees, n);
  txmem_count(t, TXMEM_C_deferred_bytes, bytes);
  if (txmem_cfg.safe_reuse) limbo_grew(t);
}

void txmem_epoch_retire_one(txmem_thread *t, void *ptr) {
  if (!txmem_cfg.safe_reuse) {
    txmem_backend_release(t, ptr);
    return;
  }
  uint64_t e = atomic_fetch_add(&txmem_g_epoch, 1);
  limbo_push(t, ptr, txmem_backend_usable(ptr), e);
  limbo_grew(t);
}

void txmem_epoch_flush(txmem_thread *t) {
  reclaim_pass(t, true);
  bool hooked = false;
  while (t->limbo_len || atomic_load_explicit(&g_orphan_count, memory_order_relaxed)) {
    if (!hooked && t->limbo_len) {
      call_stale_hook(t->limbo[t->limbo_head].epoch + 1);
      hooked = true;
    }
    sched_yield();
    reclaim_pass(t, true);
  }
}

void txmem_epoch_thread_exit(txmem_thread *t) {
  if (!t->limbo_len) return;
  reclaim_pass(t, false);
  if (t->limbo_len) {
    pthread_mutex_lock(&g_orphan_lock);
    if (g_orphan_len + t->limbo_len > g_orphan_cap)
      g_orphans =
          txmem_meta_grow(g_orphans, &g_orphan_cap, sizeof *g_orphans, g_orphan_len + t->limbo_len);
    for (size_t i = 0; i < t->limbo_len; i++)
      g_orphans[g_orphan_len++] = t->limbo[(t->limbo_head + i) & (t->limbo_cap - 1)];
    atomic_store_explicit(&g_orphan_count, g_orphan_len, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_orphan_bytes, t->limbo_bytes, memory_order_relaxed);
    pthread_mutex_unlock(&g_orphan_lock);
    txmem_count(t, TXMEM_C_orphaned, t->limbo_len);
  }
  t->limbo_len = 0;
  t->limbo_bytes = 0;
  t->limbo_head = 0;
  limbo_gauges(t);
}

/* The forking thread alone survives: locks another thread held at the fork are reset. */
void txmem_epoch_atfork_child(void) {
  pthread_mutex_init(&g_orphan_lock, NULL);
  pthread_mutex_init(&g_stale_lock, NULL);
}
