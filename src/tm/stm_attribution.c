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
 * last commit under it. It is read between two loads of the lock word that return the same
 * unlocked version v (then it is v's summary: a later writer changes the lock word before
 * its summary). When its `prev` is the version we read (exactly one commit since our
 * read), the words it wrote are compared with the words we read under that version;
 * otherwise the abort is UNKNOWN. Word precision needs stripes of at most 16 words
 * (shift <= 7); two stripes aliasing onto one lock are told apart by a 16-bit tag (a tag
 * collision, probability 2^-16, can only turn a false conflict into a true one). */
#include "tm/stm_access.h"

#define CHAIN_WALK_MAX 64

/* True when we read word w under r's lock at r's version. */
static bool reads_hit_word(const tm_tx *tx, const tm_rentry *r, uintptr_t w) {
  uint64_t stripe = w >> tm_cfg.shift, bit = tm_word_bit(w);
  for (size_t i = 0; i < tx->rn; i++) {
    const tm_rentry *e = &tx->rset[i];
    if (e->lock == r->lock && e->seen == r->seen && (e->info >> 16) == stripe && (e->info & bit))
      return true;
  }
  return false;
}

static bool reads_hit_summary(const tm_tx *tx, const tm_rentry *r, uint64_t tag, uint64_t bits) {
  for (size_t i = 0; i < tx->rn; i++) {
    const tm_rentry *e = &tx->rset[i];
    if (e->lock == r->lock && e->seen == r->seen && tm_stripe_tag(e->info >> 16) == tag &&
        (e->info & bits))
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
  for (const tm_wentry *e = head; e; e = __atomic_load_n(&e->next, __ATOMIC_RELAXED)) {
    if (++steps > CHAIN_WALK_MAX) {
      complete = false;
      break;
    }
    uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
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
  if (!tm_cfg.attribution) return TM_CLASS_UNKNOWN;
  return classify_chain(lock, l, NULL, NULL, w);
}

/* Classifies by summary s of the last commit under r's lock. */
static tm_conflict_class classify_by_summary(const tm_tx *tx, const tm_rentry *r, uint64_t s) {
  if ((s >> 32) != ((r->seen >> 1) & 0xffffffffu)) return TM_CLASS_UNKNOWN;
  uint64_t tag = (s >> 16) & 0xffff, bits = s & 0xffff;
  if (tag == TM_TAG_MIXED) return TM_CLASS_UNKNOWN;
  if (bits == 0) return TM_CLASS_FALSE; /* a rollback: no word changed */
  return reads_hit_summary(tx, r, tag, bits) ? TM_CLASS_TRUE : TM_CLASS_FALSE;
}

tm_conflict_class tm_classify_validation(const tm_tx *tx, size_t index) {
  if (!tm_cfg.attribution) return TM_CLASS_UNKNOWN;
  const tm_rentry *r = &tx->rset[index];
  const uint64_t *summary = r->lock + 1;
  uint64_t l = __atomic_load_n(r->lock, __ATOMIC_ACQUIRE);
  if (!(l & 1)) {
    uint64_t s = __atomic_load_n(summary, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(r->lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
    return classify_by_summary(tx, r, s);
  }
  const tm_wentry *head = lock_head(l);
  uint64_t saved = __atomic_load_n(&head->saved, __ATOMIC_RELAXED);
  if (owned_by(tx, l) || saved != r->seen) {
    /* Someone committed over the version we read, then the stripe was locked again (by us
     * or another): the summary still describes that commit until the holder releases. */
    uint64_t s = __atomic_load_n(summary, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(r->lock, __ATOMIC_ACQUIRE) != l) return TM_CLASS_UNKNOWN;
    return classify_by_summary(tx, r, s);
  }
  /* The owner holds the lock over the version we read: its pending writes are the cause. */
  return classify_chain(r->lock, l, tx, r, 0);
}

void tm_record_commit(uint64_t *lock, const tm_wentry *head, uint64_t prev) {
  uint64_t tag = 0, bits = 0;
  if (head) {
    uint64_t stripe = head->addr >> tm_cfg.shift;
    tag = tm_cfg.shift > 7 ? TM_TAG_MIXED : tm_stripe_tag(stripe);
    unsigned steps = 0;
    for (const tm_wentry *e = head; e && tag != TM_TAG_MIXED; e = e->next) {
      if ((e->addr >> tm_cfg.shift) != stripe || ++steps > CHAIN_WALK_MAX) tag = TM_TAG_MIXED;
      bits |= tm_word_bit(e->addr);
    }
    if (tag == TM_TAG_MIXED) bits = 0xffff;
  }
  uint64_t s = (((prev >> 1) & 0xffffffffu) << 32) | (tag << 16) | (bits & 0xffff);
  __atomic_store_n(lock + 1, s, __ATOMIC_RELEASE);
}
