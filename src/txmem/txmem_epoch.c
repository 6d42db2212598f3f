/* Safe reuse (McRT §4.2) without a daemon thread.
 *
 * txmem_g_epoch is McRT's currentFreeEpoch. A thread announces in its record the epoch its
 * top-level transaction began in, with a "running" bit (TXMEM_ANNOUNCE; 0 = no
 * announcement). The frees made visible by a committed transaction (or txmem_retire) go
 * to the tail of the thread's FIFO limbo; the thread's next scan tags every entry pushed
 * since its previous scan with E = fetch_add(txmem_g_epoch, 1). safeToFreeEpoch is computed on
 * demand by the freeing thread: the least epoch among the threads that may run a transaction that
 * could hold a pointer; an object tagged E is released when E is below it.
 *
 * Announcing with a full barrier (txmem_epoch_announce_fenced; every operation on
 * txmem_g_epoch and on announcements here is seq_cst):
 *  - The unlink of the object is visible (the commit happened) before the freer's
 *    fetch_add that produced E (the commit precedes the scan in the freer's program).
 *  - A transaction that began after loading txmem_g_epoch = a > E loaded it from a write
 *    at or after that fetch_add in txmem_g_epoch's modification order, so its load
 *    synchronises with the freer's release (release sequences continue through RMWs):
 *    every read it makes afterwards sees the unlink; it can never obtain a pointer to the
 *    object. This holds whatever its announcement shows, and epochs only grow, so a
 *    thread whose record shows an epoch > E never holds E back.
 *  - A transaction seen as not running by the freer's scan may be between loading
 *    txmem_g_epoch and announcing it. It announces (xchg), then loads txmem_g_epoch again
 *    and retries until both agree. Its announcement comes after the scan in the seq_cst
 *    order, hence after the fetch_add, so the re-load returns a value > E and the retry
 *    announces that value: case 2 again.
 *
 * Sticky announcements (option txmem_membarrier=1, where the kernel offers expedited
 * membarrier; ThreadSanitizer does not model membarrier, so its builds never use them).
 * The exchange cost about as much as an empty STM transaction. Instead, a top-level begin
 * stores (g_epoch, running) with a plain store, which the compiler keeps before the
 * transaction's loads but the CPU may delay (store buffer); the end clears the running
 * bit with a release store and keeps the epoch. A record thus shows an epoch no later
 * than the one its thread's transaction loaded. A scan reads each other record as:
 *  - epoch > E: not holding E (case 2: its transactions loaded an epoch > E);
 *  - epoch <= E, running: holding (perhaps too long: the true epoch may be later);
 *  - epoch <= E, not running, fence_next CONFIRMED: not holding. A scan flags a record
 *    with its own ticket before its membarrier (below) and turns the ticket into
 *    CONFIRMED (compare-and-swap) after the membarrier returned; the thread itself
 *    confirms its record at registration. Only the thread's own begin clears the flag: a
 *    begin that loads it nonzero clears it and announces with the exchange before it
 *    reads anything. A scan reads the flag before the announcement. If a begin loaded the
 *    flag nonzero, it comes after this scan's reads in the seq_cst order (its clear,
 *    drained by the exchange, was not visible to them) and re-loads an epoch > E (case 3).
 *    If it loaded the flag clear, it loaded it before the flag was set, hence before the
 *    flagging scan's membarrier, whose barrier on that thread made the begin's
 *    announcement visible before CONFIRMED was stored: this scan, reading CONFIRMED first,
 *    sees the announcement running (or a later one). A flag still carrying a ticket proves
 *    nothing to any scan but its setter (whose membarrier may not have returned: the
 *    announcement may still be in the store buffer), so other scans count such a record
 *    as unknown, below. (Skipping it, as the first version did for any nonzero flag, let
 *    a third thread's scan release an object a transaction had just begun to read.)
 *  - epoch <= E, not running, fence_next clear or a ticket: unknown, because a new
 *    transaction's store may still sit in its CPU's store buffer while the transaction
 *    reads. If such records are all that hold the oldest entry back, the scan flags them
 *    with a new ticket, runs membarrier(PRIVATE_EXPEDITED), which returns after every
 *    thread of the process passed a full barrier, confirms its flags, and reads the
 *    records again. A record still not running then is not holding: had its thread's
 *    store come before its barrier, it would be visible now (or a later store of that
 *    thread); if it came after, so do the transaction's loads (the compiler keeps them
 *    after the store), and they follow the unlink, which preceded the scan's membarrier.
 *    Its thread's later begins see fence_next until one of them clears it: later scans
 *    pass it with no membarrier.
 * So the barrier moves from every top-level begin to the scans held back by a thread
 * between transactions, once per such pause of that thread (its next begin pays an
 * exchange), and an idle thread never holds anyone back. Rare while threads keep running
 * transactions: a scan held back only on the batch it has just tagged waits for its next
 * scan instead (PASS_PATIENT), by which time such a thread announces a newer epoch.
 *
 * A record showing 0 is skipped. Under sticky announcements a thread therefore stores
 * (g_epoch, not running) with a seq_cst store when it registers, before its first
 * transaction: a scan that still reads 0 precedes that store in the seq_cst order, so
 * the thread's first begin loads an epoch > E (case 2). Exited threads store 0 after
 * their last transaction.
 *
 * Scans cost O(threads) and run only when the limbo grew by a batch since the last scan
 * (amortised O(1) per free). A scanning thread is outside any transaction and skips its
 * own record. An exited thread has no announcement.
 *
 * High-water mark (option txmem_limbo_max): when a thread's limbo exceeds it after a scan,
 * the thread (outside any transaction) calls the runtime's stale hook (ask old
 * transactions to validate and abort when doomed) and waits, yielding, until its limbo is
 * below half the mark. The wait ends as soon as every transaction that was running at the
 * scan that tagged the frees has ended: later ones announce epochs > E.
 *
 * Exited threads hand their limbo (tagged: their last scan publishes it) to a global orphan
 * list (under a mutex); scans of other threads that began after the tagging release the
 * orphans whose epoch became safe. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "txmem/txmem_direct.h"
#include "txmem/txmem_internal.h"
#include "util/message.h"

/* A pass runs when SCAN_BATCH entries or SCAN_BATCH_BYTES bytes were pushed since the last
 * one: the count amortises the scan over small frees, the bytes bound the space that waits
 * untagged for the thread's next free (a few large objects would otherwise wait until
 * the 64th free, a flush or the thread's exit). */
#define SCAN_BATCH 64
#define SCAN_BATCH_BYTES ((size_t)1 << 20)

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

uint64_t txmem_epoch_now(void) { return atomic_load(&txmem_g_epoch); }

void txmem_orphan_gauges(uint64_t *objects, uint64_t *bytes) {
  *objects = atomic_load_explicit(&g_orphan_count, memory_order_relaxed);
  *bytes = atomic_load_explicit(&g_orphan_bytes, memory_order_relaxed);
}

/* cold: run once, from the TM runtime's constructor, and kept with the other startup
 * code, away from the transactional paths (docs/allocator.md, "Code footprint"). */
__attribute__((cold)) void txmem_set_stale_hook(txmem_stale_hook hook, void *arg) {
  pthread_mutex_lock(&g_stale_lock);
  g_stale_hook = hook;
  g_stale_arg = arg;
  pthread_mutex_unlock(&g_stale_lock);
}

void txmem_epoch_announce_fenced(txmem_thread *t) {
  uint64_t e = atomic_load(&txmem_g_epoch);
  for (;;) {
    atomic_exchange(&t->rec->announce, TXMEM_ANNOUNCE(e, 1));
    uint64_t again = atomic_load(&txmem_g_epoch);
    if (TXMEM_LIKELY(again == e)) break;
    e = again;
  }
}

void txmem_epoch_announce_flagged(txmem_thread *t) {
  /* The clear must be visible before the transaction reads: the exchange drains it. The
   * store is seq_cst, so that the argument above ("comes after this scan's reads in the
   * seq_cst order") holds in the C11 model too, not only on x86; the path is rare. */
  atomic_store(&t->rec->fence_next, 0);
  txmem_epoch_announce_fenced(t);
}

/* Tickets of flagging scans: never 0 (clear) nor TXMEM_FENCE_CONFIRMED, and never repeated:
 * a 64-bit counter does not wrap in the life of a process (2^64 scans, each running a
 * membarrier). A repeated ticket would let a scan stalled before its confirm_flags confirm
 * another scan's flag before that scan's membarrier had returned. */
static _Atomic uint64_t g_fence_tickets = TXMEM_FENCE_TICKET0;
static uint64_t fence_ticket(void) { return atomic_fetch_add(&g_fence_tickets, 1); }

/* Least epoch among the other threads' records that show a running transaction
 * (*running) and among those that show an announcement without one and are not
 * CONFIRMED (*idle); UINT64_MAX when there is none. With a `ticket`, flags every record
 * counted in *idle with it. */
static void scan_records(const txmem_thread *t, uint64_t *running, uint64_t *idle,
                         uint64_t ticket) {
  *running = *idle = UINT64_MAX;
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    if (r == t->rec) continue; /* the scanning thread is outside any transaction */
    /* The flag before the announcement (see above). */
    uint64_t f = atomic_load(&r->fence_next);
    uint64_t a = atomic_load(&r->announce);
    if (!a) continue;
    if (TXMEM_ANNOUNCE_RUNNING(a)) {
      if (TXMEM_ANNOUNCE_EPOCH(a) < *running) *running = TXMEM_ANNOUNCE_EPOCH(a);
      continue;
    }
    if (f == TXMEM_FENCE_CONFIRMED) continue; /* its next begin is fenced */
    if (TXMEM_ANNOUNCE_EPOCH(a) < *idle) *idle = TXMEM_ANNOUNCE_EPOCH(a);
    if (ticket) atomic_store(&r->fence_next, ticket);
  }
}

/* After the membarrier that followed flagging with `ticket`: the flags still carrying it
 * (their threads have not begun since) become CONFIRMED. */
static void confirm_flags(uint64_t ticket) {
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    uint64_t expected = ticket;
    atomic_compare_exchange_strong(&r->fence_next, &expected, TXMEM_FENCE_CONFIRMED);
  }
}

/* Epochs below the result are safe to release: no running transaction can hold their
 * objects. `oldest` is the oldest epoch the caller wants to release. `patient`: the
 * caller would rather keep what only threads between transactions hold back until its
 * next scan than pass them now with membarrier (reclaim_pass says when). */
static uint64_t safe_epoch_bound(txmem_thread *t, uint64_t oldest, bool patient) {
  uint64_t running, idle;
  scan_records(t, &running, &idle, 0);
  /* Counting the idle records as holding is always safe: every record's epoch bounds
   * what its thread's transactions may hold (case 2). */
  if (idle >= running || idle > oldest || patient) return idle < running ? idle : running;
  /* Flag them first: their begins that the barrier does not show us see the flag. */
  uint64_t ticket = fence_ticket();
  scan_records(t, &running, &idle, ticket);
  /* Only threads between transactions (as far as this scan can tell) hold `oldest`
   * back: after membarrier their running bits are exact (see above). Records without
   * sticky announcements are never idle. */
#if !defined(__SANITIZE_THREAD__) && defined(SYS_membarrier)
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
    txalloc_message("txmem: membarrier failed after registration; cannot reclaim safely");
    abort();
  }
#else
  txalloc_message("txmem: sticky announcements without membarrier");
  abort();
#endif
  txmem_count(t, TXMEM_C_scan_barriers, 1);
  confirm_flags(ticket);
  scan_records(t, &running, &idle, 0);
  return running;
}

/* The limbo's size, published at every change (two stores: other threads' statistics see
 * it at once). */
static inline void limbo_size_gauges(txmem_thread *t) {
  txmem_record *r = t->rec;
  __atomic_store_n(&r->limbo_objects, t->limbo_len, __ATOMIC_RELAXED);
  __atomic_store_n(&r->limbo_bytes, t->limbo_bytes, __ATOMIC_RELAXED);
}

/* ... and its peak: at every pass (the limbo only grows between passes, so its length when
 * a pass begins is the largest since the one before) and with the hot counters. */
void txmem_limbo_gauges(txmem_thread *t) {
  limbo_size_gauges(t);
  txmem_record *r = t->rec;
  if (t->limbo_len > r->limbo_peak)
    __atomic_store_n(&r->limbo_peak, t->limbo_len, __ATOMIC_RELAXED);
}

/* Makes room for n more entries: grows the ring (a power of two) and unwraps it, entries
 * [head, cap) then [0, head). */
static __attribute__((noinline)) void limbo_reserve(txmem_thread *t, size_t n) {
  size_t old_cap = t->limbo_cap;
  size_t new_cap = old_cap ? old_cap * 2 : 256;
  while (new_cap - t->limbo_len < n) new_cap *= 2;
  txmem_limbo_entry *e = malloc(new_cap * sizeof *e);
  if (!e) txmem_contract_error("out of memory for the limbo", 0, t->depth);
  size_t first = old_cap - t->limbo_head;
  if (first > t->limbo_len) first = t->limbo_len;
  if (t->limbo_len) {
    memcpy(e, t->limbo + t->limbo_head, first * sizeof *e);
    memcpy(e + first, t->limbo, (t->limbo_len - first) * sizeof *e);
  }
  free(t->limbo);
  t->limbo = e;
  t->limbo_cap = new_cap;
  t->limbo_head = 0;
}

/* Appends ptrs[0..n) without an epoch yet (publish_limbo tags them before any pass reads
 * one), each with txmem_backend_usable's answers: the one lookup of the pointer, whose
 * verdict (TXMEM_REL_TXALLOC or TXMEM_REL_FOREIGN) the release follows. Returns their
 * bytes. The caller tests for a pass (limbo_due). */
static inline uint64_t limbo_append(txmem_thread *t, void *const *ptrs, size_t n) {
  if (TXMEM_UNLIKELY(t->limbo_cap - t->limbo_len < n)) limbo_reserve(t, n);
  txmem_limbo_entry *limbo = t->limbo;
  size_t mask = t->limbo_cap - 1, tail = t->limbo_head + t->limbo_len;
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    bool txalloc;
    size_t size = txmem_backend_usable(ptrs[i], &txalloc);
    limbo[(tail + i) & mask] = (txmem_limbo_entry){
        .ptr = ptrs[i], .size = size, .release = txalloc ? TXMEM_REL_TXALLOC : TXMEM_REL_FOREIGN};
    bytes += size;
  }
  t->limbo_len += n;
  t->limbo_unpublished += n;
  t->limbo_bytes += bytes;
  limbo_size_gauges(t);
  return bytes;
}

/* A pass is due: a batch accumulated, or the limbo passed the high-water mark
 * (limbo_next_scan <= limbo_max + 1, set by reclaim_pass). */
static inline bool limbo_due(const txmem_thread *t) {
  return t->limbo_len >= t->limbo_next_scan || t->limbo_bytes >= t->limbo_next_scan_bytes;
}

/* Tags the entries pushed since the last publication with E = fetch_add(g_epoch, 1): the
 * RMW follows the commits that unlinked them (their writes are visible before it), which
 * is all the safety argument asks of a tag. One RMW per scan instead of one per freeing
 * commit: g_epoch's cache line is the one every thread's begin reads. */
static uint64_t publish_limbo(txmem_thread *t) {
  if (!t->limbo_unpublished) return 0; /* tags start at 1 */
  uint64_t e = atomic_fetch_add(&txmem_g_epoch, 1);
  for (size_t i = t->limbo_len - t->limbo_unpublished; i < t->limbo_len; i++)
    t->limbo[(t->limbo_head + i) & (t->limbo_cap - 1)].epoch = e;
  t->limbo_unpublished = 0;
  return e;
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
      txmem_release_limbo(t, g_orphans[i].ptr, g_orphans[i].release);
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

/* How a reclamation pass behaves (flags). */
enum {
  /* Wait for the orphan list's lock instead of skipping the orphans when it is taken. */
  PASS_WAIT_ORPHANS = 1,
  /* When the only entries held back are the batch this pass has just tagged, and only
   * threads between transactions hold them, keep them for the next pass instead of
   * running membarrier. Such a thread has loaded the epoch before the tag, yet a thread
   * that keeps running transactions announces a newer one long before the next pass (a
   * batch later), which then releases the batch without a barrier: with two threads
   * running short transactions, about one pass in five met the other between two
   * transactions and paid a membarrier (an interprocessor interrupt) for it. A thread
   * that stays idle costs one barrier, at the next pass, as before. The batch waits
   * until this thread's next pass, flush or exit, however long that is: only batches of
   * at most PATIENT_MAX_BYTES may wait (space, not just objects, stays bounded). */
  PASS_PATIENT = 2,
};
#define PATIENT_MAX_BYTES ((size_t)256 << 10)

/* One reclamation pass: releases every limbo entry (and orphan) whose epoch is safe.
 * Returns the bound it used: entries of epochs below it are released. */
static uint64_t reclaim_pass(txmem_thread *t, unsigned flags) {
  uint64_t tagged_now = publish_limbo(t);
  uint64_t oldest = t->limbo_len ? t->limbo[t->limbo_head].epoch
                    : atomic_load_explicit(&g_orphan_count, memory_order_relaxed) ? UINT64_MAX
                                                                                  : 0;
  /* Only entries tagged before the scan may be released on its evidence: the argument
   * needs the scan to follow the fetch_add of each tag it judges. Own entries were tagged
   * above; an exiting thread may tag and orphan entries while this scan runs, and their
   * tags are >= this load's value. */
  uint64_t tagged_below = atomic_load(&txmem_g_epoch);
  /* oldest == tagged_now: the whole limbo is the batch just tagged. */
  bool patient = (flags & PASS_PATIENT) && tagged_now && oldest == tagged_now &&
                 t->limbo_bytes <= PATIENT_MAX_BYTES;
  uint64_t safe_below = safe_epoch_bound(t, oldest, patient);
  if (safe_below > tagged_below) safe_below = tagged_below;
  txmem_count(t, TXMEM_C_reclaim_scans, 1);
  /* The limbo only grew since the last pass: its peak is its length now (or earlier). */
  txmem_limbo_gauges(t);
  /* The ring in locals: the releases (txalloc_free, the process's free, the wrap-cache)
   * never touch the limbo. */
  txmem_limbo_entry *limbo = t->limbo;
  size_t mask = t->limbo_cap - 1, head = t->limbo_head, len = t->limbo_len, released = 0;
  uint64_t bytes = 0;
  /* FIFO: the epochs never decrease, so the first entry not yet safe ends the pass. */
  for (; released < len && limbo[head].epoch < safe_below; released++) {
    txmem_limbo_entry e = limbo[head];
    head = (head + 1) & mask;
    bytes += e.size;
    txmem_release_limbo(t, e.ptr, e.release);
  }
  t->limbo_head = head;
  t->limbo_len = len -= released;
  t->limbo_bytes -= bytes;
  txmem_count(t, TXMEM_C_reclaimed, released);
  release_orphans(t, safe_below, flags & PASS_WAIT_ORPHANS);
  /* One test per commit (limbo_due) covers the batch and the high-water mark. */
  t->limbo_next_scan =
      len + SCAN_BATCH <= txmem_cfg.limbo_max ? len + SCAN_BATCH : txmem_cfg.limbo_max + 1;
  t->limbo_next_scan_bytes = t->limbo_bytes + SCAN_BATCH_BYTES;
  txmem_limbo_gauges(t);
  return safe_below;
}

static void call_stale_hook(uint64_t epoch) {
  pthread_mutex_lock(&g_stale_lock);
  txmem_stale_hook hook = g_stale_hook;
  void *arg = g_stale_arg;
  pthread_mutex_unlock(&g_stale_lock);
  if (hook) hook(epoch, arg);
}

/* A pass is due (limbo_due): scan; wait when over the high-water mark. Called outside any
 * transaction (depth 0; the thread's scans skip its own record). */
static __attribute__((noinline)) void limbo_scan(txmem_thread *t) {
  /* Over the high-water mark, nothing may wait for a later pass. */
  reclaim_pass(t, t->limbo_len <= txmem_cfg.limbo_max ? PASS_PATIENT : 0);
  if (t->limbo_len <= txmem_cfg.limbo_max) return;
  txmem_count(t, TXMEM_C_forced_reclamations, 1);
  while (t->limbo_len > txmem_cfg.limbo_max / 2) {
    call_stale_hook(t->limbo[t->limbo_head].epoch + 1);
    sched_yield();
    reclaim_pass(t, 0);
  }
}

/* The commit's frees ptrs[0..n), any strategy and any pointer: released at once without
 * safe reuse, else appended to the limbo. Counts them; scans when a pass is due. */
static __attribute__((noinline)) void release_committed_slow(txmem_thread *t, void **ptrs,
                                                             size_t n) {
  uint64_t bytes = 0;
  if (!txmem_cfg.safe_reuse) {
    for (size_t i = 0; i < n; i++) {
      bool txalloc;
      bytes += txmem_backend_usable(ptrs[i], &txalloc);
      txmem_backend_release_as(t, ptrs[i], txalloc);
    }
  } else {
    bytes = limbo_append(t, ptrs, n);
  }
  t->hot[TXMEM_HOT_speculative_frees] += n;
  t->hot[TXMEM_HOT_deferred_bytes] += bytes;
  if (txmem_cfg.safe_reuse && limbo_due(t)) limbo_scan(t);
}

/* Stores the entry of ptr at ring position `at` when ptr lies in a chunk of txalloc's small
 * or medium blocks (txmem_direct_usable_block: one region-map lookup, no call), adding its
 * size to *bytes; false for any other pointer (nothing stored). */
static inline bool limbo_put_block(txmem_thread *t, size_t at, void *ptr, uint64_t *bytes) {
  size_t size;
  unsigned release = txmem_direct_usable_block(ptr, &size);
  if (TXMEM_UNLIKELY(release == TXMEM_REL_FOREIGN)) return false;
  /* No epoch yet: publish_limbo tags the entry before any pass reads it. */
  t->limbo[at & (t->limbo_cap - 1)] =
      (txmem_limbo_entry){.ptr = ptr, .size = size, .release = release};
  *bytes += size;
  return true;
}

/* Counts the n entries of `bytes` bytes that a commit appended. */
static inline void limbo_appended(txmem_thread *t, size_t n, uint64_t bytes) {
  t->limbo_len += n;
  t->limbo_unpublished += n;
  t->limbo_bytes += bytes;
  limbo_size_gauges(t);
  t->hot[TXMEM_HOT_speculative_frees] += n;
  t->hot[TXMEM_HOT_deferred_bytes] += bytes;
}

/* The common case makes no call but its tail calls, so it needs no stack frame: safe
 * reuse, the txalloc strategy, room in the ring. The pointers into txalloc's blocks up to
 * the first other one are appended here (one, a set's remove, is the usual case), the rest
 * through release_committed_slow; the entries before it stay appended and counted, in
 * order. */
void txmem_epoch_release_committed(txmem_thread *t, void **ptrs, size_t n) {
  if (TXMEM_UNLIKELY(!txmem_cfg.safe_reuse || !t->txalloc || t->limbo_cap - t->limbo_len < n)) {
    release_committed_slow(t, ptrs, n);
    return;
  }
  size_t tail = t->limbo_head + t->limbo_len, i = 0;
  uint64_t bytes = 0;
  while (i < n && limbo_put_block(t, tail + i, ptrs[i], &bytes)) i++;
  limbo_appended(t, i, bytes);
  if (TXMEM_UNLIKELY(i < n))
    release_committed_slow(t, ptrs + i, n - i);
  else if (TXMEM_UNLIKELY(limbo_due(t)))
    limbo_scan(t);
}

void txmem_epoch_retire_one(txmem_thread *t, void *ptr) {
  if (!txmem_cfg.safe_reuse) {
    txmem_backend_release(t, ptr);
    return;
  }
  limbo_append(t, &ptr, 1);
  if (limbo_due(t)) limbo_scan(t);
}

void txmem_epoch_flush(txmem_thread *t) {
  reclaim_pass(t, PASS_WAIT_ORPHANS);
  bool hooked = false;
  while (t->limbo_len || atomic_load_explicit(&g_orphan_count, memory_order_relaxed)) {
    if (!hooked) { /* ask doomed transactions to end: they may hold orphans too */
      call_stale_hook(t->limbo_len ? t->limbo[t->limbo_head].epoch + 1
                                   : atomic_load(&txmem_g_epoch));
      hooked = true;
    }
    sched_yield();
    reclaim_pass(t, PASS_WAIT_ORPHANS);
  }
}

void txmem_epoch_thread_exit(txmem_thread *t) {
  if (!t->limbo_len) return;
  reclaim_pass(t, 0);
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
  t->limbo_next_scan = t->limbo_next_scan_bytes = 0; /* as a new thread's: its first free scans */
  txmem_limbo_gauges(t);
}

/* fork: the forking thread holds both locks across the fork, so neither the orphan list
 * nor the stale hook is caught half-changed by another thread; the child re-initialises
 * them (it is their only thread), the parent releases them. Neither lock is held while
 * the other is taken. */
void txmem_epoch_atfork_prepare(void) {
  pthread_mutex_lock(&g_stale_lock);
  pthread_mutex_lock(&g_orphan_lock);
}
void txmem_epoch_atfork_parent(void) {
  pthread_mutex_unlock(&g_orphan_lock);
  pthread_mutex_unlock(&g_stale_lock);
}
void txmem_epoch_atfork_child(void) {
  pthread_mutex_init(&g_orphan_lock, NULL);
  pthread_mutex_init(&g_stale_lock, NULL);
}
