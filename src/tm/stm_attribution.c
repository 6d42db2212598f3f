/* False-conflict attribution (docs/stm.md, "Conflict attribution").
 *
 * A conflict abort is TRUE when a word-granular STM of the same design would have aborted
 * too (the other transaction wrote a word we accessed), FALSE when the other transaction
 * wrote only other words that map to the same lock (other words of the stripe, or another
 * stripe the hash folds onto the lock), UNKNOWN when this cannot be decided soundly.
 *
 * Lock conflicts: the lock word points to the owner's newest entry for the lock; its chain
 * lists every word the owner wrote under it. The walk is re-checked: the lock word and the
 * owner's attempt counter must be unchanged afterwards, or the result is UNKNOWN.
 *
 * Validation failures: the summary word next to the lock (tm_internal.h) describes the
 * last few commits under it (a window of up to 8 commits after version `base`: the union
 * of the words they wrote, and the words of the newest). It is read between two loads of
 * the lock word that return the same value (no writer released in between). When the
 * window starts at the version we read, the union is compared with the words we read
 * under that version (exact); when we read inside the window, a hit on the newest
 * commit's words is TRUE (it came after our read), a miss on the union FALSE, anything
 * else UNKNOWN; when we read before the window, UNKNOWN. Word precision needs stripes of
 * at most 16 words (shift <= 7); stripes aliasing onto one lock are told apart by an
 * 8-bit tag (a collision can only turn a false conflict into a true one).
 */
#include "tm/stm_access.h"

#define CHAIN_WALK_MAX TM_CHAIN_WALK_MAX

/* True when we read word w under r's lock at r's version. */
static bool reads_hit_word(const tm_tx *tx, const tm_rentry *r, uintptr_t w) {
  const tm_lock_map map = tm_lock_map_now();
  const uint64_t *lock = tm_lock_of(&map, r->addr);
  for (size_t i = 0, n = tm_rn(tx); i < n; i++) {
    const tm_rentry *e = &tx->rset[i];
    if (e->addr == w && tm_same_version(e->seen, r->seen) && tm_lock_of(&map, e->addr) == lock)
      return true;
  }
  return false;
}

/* True when we read, under r's lock at r's version, a word of a stripe with tag `tag` whose
 * bit is in `bits`. */
static bool reads_hit_summary(const tm_tx *tx, const tm_rentry *r, uint64_t tag, uint64_t bits) {
  const tm_lock_map map = tm_lock_map_now();
  const uint64_t *lock = tm_lock_of(&map, r->addr);
  for (size_t i = 0, n = tm_rn(tx); i < n; i++) {
    const tm_rentry *e = &tx->rset[i];
    if (tm_same_version(e->seen, r->seen) && tm_lock_of(&map, e->addr) == lock &&
        tm_stripe_tag(e->addr >> stm_cfg.shift) == tag && (tm_word_bit(e->addr) & bits))
      return true;
  }
  return false;
}

/* Walks another thread's chain, calling the test on each word; re-checks the lock word and
 * the owner's attempt. Returns TRUE on a hit, FALSE when the whole chain missed. */
static tm_conflict_class classify_chain(const uint64_t *lock, uint64_t l, const tm_tx *tx,
                                        const tm_rentry *r, uintptr_t w) {
  const tm_wentry *head = lock_head(l);
  tm_tx *owner = __atomic_load_n(&head->tx, __ATOMIC_RELAXED);
  if (!owner) return TM_CLASS_UNKNOWN;
  uint64_t attempt = __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
  bool hit = false, complete = true;
  unsigned steps = 0;
  /* The walk's loads are acquire, so that the re-check below comes after them (a seqlock
   * reader's order; an acquire fence would do, but ThreadSanitizer does not model fences). */
  for (const tm_wentry *e = head; e; e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE)) {
    if (++steps > CHAIN_WALK_MAX) {
      complete = false;
      break;
    }
    uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
    if (r ? reads_hit_word(tx, r, a) : a == w) {
      hit = true;
      break;
    }
  }
  if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l ||
      __atomic_load_n(&owner->attempt, __ATOMIC_ACQUIRE) != attempt)
    return TM_CLASS_UNKNOWN;
  if (hit) return TM_CLASS_TRUE;
  return complete ? TM_CLASS_FALSE : TM_CLASS_UNKNOWN;
}

tm_conflict_class tm_classify_locked(const uint64_t *lock, uint64_t l, uintptr_t w) {
  if (!stm_cfg.attribution) return TM_CLASS_UNKNOWN;
  return classify_chain(lock, l, NULL, NULL, w);
}

/* The summary word's fields (tm_internal.h gives the layout). */
typedef struct summary_fields {
  uint64_t base, count, tag, all, last;
} summary_fields;

static summary_fields summary_unpack(uint64_t s) {
  return (summary_fields){.base = s >> 44,
                          .count = (s >> 40) & 15,
                          .tag = (s >> 32) & 0xff,
                          .all = (s >> 16) & 0xffff,
                          .last = s & 0xffff};
}

static uint64_t summary_pack(summary_fields f) {
  return ((f.base & TM_SUMMARY_BASE_MASK) << 44) | (f.count << 40) | (f.tag << 32) |
         ((f.all & 0xffff) << 16) | (f.last & 0xffff);
}

/* Classifies by summary word w, which covers the commits under r's lock after version
 * `base` (tm_record_commit, tm_internal.h). */
static tm_conflict_class classify_by_summary(const tm_tx *tx, const tm_rentry *r, uint64_t w) {
  summary_fields s = summary_unpack(w);
  uint64_t tag = s.tag, all = s.all, last = s.last;
  if (s.count == 0 || tag == TM_TAG_MIXED) return TM_CLASS_UNKNOWN;
  uint64_t d = ((tm_word_version(r->seen) & TM_SUMMARY_BASE_MASK) - s.base) & TM_SUMMARY_BASE_MASK;
  if (d > TM_SUMMARY_BASE_MASK / 2) return TM_CLASS_UNKNOWN; /* we read before the window */
  if (d == 0) /* the window is exactly the commits since our read */
    return reads_hit_summary(tx, r, tag, all) ? TM_CLASS_TRUE : TM_CLASS_FALSE;
  /* We read inside the window: the newest commit came after our read; the union covers
   * every commit since our read, and some before it. */
  if (reads_hit_summary(tx, r, tag, last)) return TM_CLASS_TRUE;
  return reads_hit_summary(tx, r, tag, all) ? TM_CLASS_UNKNOWN : TM_CLASS_FALSE;
}

tm_conflict_class tm_classify_validation(const tm_tx *tx, size_t index) {
  if (!stm_cfg.attribution) return TM_CLASS_UNKNOWN;
  const tm_rentry *r = &tx->rset[index];
  const uint64_t *lock = tm_ort_lock(r->addr), *summary = lock + 1;
  uint64_t l = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
  if (!(l & 1)) {
    uint64_t s = __atomic_load_n(summary, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
    return classify_by_summary(tx, r, s);
  }
  const tm_wentry *head = lock_head(l);
  uint64_t saved = __atomic_load_n(&head->saved, __ATOMIC_RELAXED);
  if (owned_by(tx, l) || !tm_same_version(saved, r->seen)) {
    /* Someone committed over the version we read, then the stripe was locked again (by us
     * or another): the summary still describes that commit until the holder releases. */
    uint64_t s = __atomic_load_n(summary, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
    return classify_by_summary(tx, r, s);
  }
  /* The owner holds the lock over the version we read: its pending writes are the cause. */
  return classify_chain(lock, l, tx, r, 0);
}

/* The stripe tag and word bitmap (*bits) of a chain of several entries under one lock:
 * TM_TAG_MIXED, with every bit, when its words lie in several stripes or the chain is
 * longer than CHAIN_WALK_MAX. */
static uint64_t chain_words(const tm_wentry *head, uint64_t *bits) {
  uint64_t stripe = head->addr >> stm_cfg.shift, tag = tm_stripe_tag(stripe), b = 0;
  unsigned steps = 0;
  for (const tm_wentry *e = head; e; e = e->next) {
    if ((e->addr >> stm_cfg.shift) != stripe || ++steps > CHAIN_WALK_MAX) {
      *bits = 0xffff;
      return TM_TAG_MIXED;
    }
    b |= tm_word_bit(e->addr);
  }
  *bits = b;
  return tag;
}

void tm_record_commit_general(uint64_t *lock, const tm_wentry *head, uint64_t prev) {
  uint64_t tag = 0, bits = 0; /* a rollback (head NULL): no word changed */
  if (head) {
    if (stm_cfg.shift > 7) { /* more than 16 words per stripe: no word precision */
      tag = TM_TAG_MIXED;
      bits = 0xffff;
    } else if (head->next == NULL) { /* one word under the lock */
      tag = tm_stripe_tag(head->addr >> stm_cfg.shift);
      bits = tm_word_bit(head->addr);
    } else {
      tag = chain_words(head, &bits);
    }
  }
  /* We hold the lock: the old summary covers the commits up to `prev`. Extend its window
   * when it describes the same stripe (or only rollbacks) and is not full; else restart
   * the window at `prev`. */
  summary_fields old = summary_unpack(__atomic_load_n(lock + 1, __ATOMIC_RELAXED)), s;
  bool same = old.all == 0 || bits == 0 || old.tag == tag;
  if (old.count > 0 && old.count < TM_SUMMARY_WINDOW && old.tag != TM_TAG_MIXED &&
      tag != TM_TAG_MIXED && same)
    s = (summary_fields){.base = old.base,
                         .count = old.count + 1,
                         .tag = bits ? tag : old.tag,
                         .all = old.all | bits,
                         .last = bits};
  else
    s = (summary_fields){
        .base = tm_word_version(prev), .count = 1, .tag = tag, .all = bits, .last = bits};
  __atomic_store_n(lock + 1, summary_pack(s), __ATOMIC_RELEASE);
}
