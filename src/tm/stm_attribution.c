/* False-conflict attribution (docs/stm.md, "Conflict attribution").
 *
 * A conflict abort is TRUE when a word-granular STM of the same design would have aborted
 * too (the other transaction wrote a word we accessed), FALSE when the other transaction
 * wrote only other words that map to the same lock (same stripe, or another stripe that
 * the hash folds onto the lock), UNKNOWN when this cannot be decided soundly.
 *
 * Lock conflicts: the lock word points to the owner's newest entry for the lock; its chain
 * lists every word the owner wrote under it. The walk is re-checked: the lock word and the
 * owner's attempt counter must be unchanged afterwards, or the result is UNKNOWN.
 *
 * Validation failures: a per-lock record, written by each committer while it still holds
 * the lock, names the words it wrote and the version it replaced. When the record is the
 * one for the version we now see and it replaced exactly the version we read (one commit
 * in between), the classification is exact; otherwise UNKNOWN. A record holds 6 words; a
 * commit that wrote more under one lock marks the record as overflowed (a match is still
 * TRUE, no match is UNKNOWN). Records are seqlock-protected (version 0 while written). */
#include <sys/mman.h>

#include "tm/stm_access.h"

#define CHAIN_WALK_MAX 64
#define RECORD_WORDS 6

void tm_attribution_init(void) {
  if (!tm_cfg.attribution) return;
  size_t bytes = ((size_t)1 << tm_cfg.ort_log2) * sizeof(tm_ort_record);
  void *p =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) tm_fatal("cannot allocate the conflict-attribution records");
  tm_cfg.records = p;
}

/* Collects up to `max` distinct words of the chain starting at head (another thread's,
 * read with relaxed atomics). Returns the count; *complete is false when the walk was cut. */
static unsigned chain_words(const tm_wentry *head, uintptr_t *words, unsigned max, bool *complete) {
  unsigned n = 0, steps = 0;
  *complete = true;
  for (const tm_wentry *e = head; e; e = __atomic_load_n(&e->next, __ATOMIC_RELAXED)) {
    if (++steps > CHAIN_WALK_MAX) {
      *complete = false;
      break;
    }
    uintptr_t w = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
    unsigned k = 0;
    while (k < n && words[k] != w) k++;
    if (k < n) continue;
    if (n == max) {
      *complete = false;
      break;
    }
    words[n++] = w;
  }
  return n;
}

tm_conflict_class tm_classify_locked(const uint64_t *lock, uint64_t l, uintptr_t w) {
  if (!tm_cfg.attribution) return TM_CLASS_UNKNOWN;
  const tm_wentry *head = lock_head(l);
  tm_tx *owner = __atomic_load_n(&head->tx, __ATOMIC_RELAXED);
  if (!owner) return TM_CLASS_UNKNOWN;
  uint64_t attempt = __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
  uintptr_t words[CHAIN_WALK_MAX];
  bool complete;
  unsigned n = chain_words(head, words, CHAIN_WALK_MAX, &complete);
  bool found = false;
  for (unsigned k = 0; k < n; k++) found |= words[k] == w;
  if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l ||
      __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE) != attempt)
    return TM_CLASS_UNKNOWN;
  if (found) return TM_CLASS_TRUE;
  return complete ? TM_CLASS_FALSE : TM_CLASS_UNKNOWN;
}

/* True when one of the words we read under r's lock at r's version is in `words`. */
static bool reads_hit(const tm_tx *tx, const tm_rentry *r, const uintptr_t *words, unsigned n) {
  for (size_t i = 0; i < tx->rn; i++) {
    const tm_rentry *e = &tx->rset[i];
    if (e->lock != r->lock || e->seen != r->seen) continue;
    for (unsigned k = 0; k < n; k++)
      if (words[k] == e->addr) return true;
  }
  return false;
}

/* Classifies by the record of the commit that produced lock word `version`. */
static tm_conflict_class classify_by_record(const tm_tx *tx, const tm_rentry *r, uint64_t version) {
  const tm_ort_record *rec = &tm_cfg.records[tm_ort_index(r->lock)];
  uint64_t v1 = __atomic_load_n(&rec->version, __ATOMIC_ACQUIRE);
  if (v1 != version || v1 == 0) return TM_CLASS_UNKNOWN;
  uint64_t prev = __atomic_load_n(&rec->prev, __ATOMIC_ACQUIRE);
  uintptr_t words[RECORD_WORDS];
  unsigned n = 0;
  for (; n < RECORD_WORDS; n++) {
    words[n] = __atomic_load_n(&rec->words[n], __ATOMIC_ACQUIRE);
    if (!words[n]) break;
  }
  if (__atomic_load_n(&rec->version, __ATOMIC_ACQUIRE) != v1) return TM_CLASS_UNKNOWN;
  if ((prev & ~UINT64_C(1)) != r->seen) return TM_CLASS_UNKNOWN; /* several commits since */
  if (reads_hit(tx, r, words, n)) return TM_CLASS_TRUE;
  return (prev & 1) ? TM_CLASS_UNKNOWN : TM_CLASS_FALSE;
}

tm_conflict_class tm_classify_validation(const tm_tx *tx, size_t index) {
  if (!tm_cfg.attribution) return TM_CLASS_UNKNOWN;
  const tm_rentry *r = &tx->rset[index];
  uint64_t l = __atomic_load_n(r->lock, __ATOMIC_ACQUIRE);
  if (!(l & 1)) return classify_by_record(tx, r, l);
  const tm_wentry *head = lock_head(l);
  uint64_t saved = __atomic_load_n(&head->saved, __ATOMIC_RELAXED);
  if (owned_by(tx, l) || saved != r->seen) {
    /* Another transaction committed over the version we read (and we, or someone else,
     * locked the stripe since): that commit is described by the record of `saved`. */
    if (__atomic_load_n(r->lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
    return classify_by_record(tx, r, saved);
  }
  /* The owner holds the lock over the version we read: its pending writes are the cause. */
  tm_tx *owner = __atomic_load_n(&head->tx, __ATOMIC_RELAXED);
  if (!owner) return TM_CLASS_UNKNOWN;
  uint64_t attempt = __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(r->lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
  uintptr_t words[CHAIN_WALK_MAX];
  bool complete;
  unsigned n = chain_words(head, words, CHAIN_WALK_MAX, &complete);
  if (__atomic_load_n(r->lock, __ATOMIC_ACQUIRE) != l ||
      __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE) != attempt)
    return TM_CLASS_UNKNOWN;
  if (reads_hit(tx, r, words, n)) return TM_CLASS_TRUE;
  return complete ? TM_CLASS_FALSE : TM_CLASS_UNKNOWN;
}

void tm_record_commit(uint64_t *lock, const tm_wentry *head, uint64_t prev, uint64_t version) {
  tm_ort_record *rec = &tm_cfg.records[tm_ort_index(lock)];
  uintptr_t words[RECORD_WORDS];
  bool complete = true;
  unsigned n = head ? chain_words(head, words, RECORD_WORDS, &complete) : 0;
  __atomic_store_n(&rec->version, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&rec->prev, prev | (complete ? 0 : 1), __ATOMIC_RELEASE);
  for (unsigned k = 0; k < RECORD_WORDS; k++)
    __atomic_store_n(&rec->words[k], k < n ? words[k] : 0, __ATOMIC_RELEASE);
  __atomic_store_n(&rec->version, version, __ATOMIC_RELEASE);
}
