/* htm-emul's write buffer: stores are held back until the commit, as a hardware TM holds
 * them in its L1 lines. Entries are words of 8 bytes in the descriptor's write set
 * (tm_wentry: addr = the word, value = its new bytes under mask), merged by byte mask as in
 * the STM. A word has at most one entry per nesting level: a store at a level that has none
 * appends one holding every byte buffered so far (a copy of the newest entry, then the
 * store), so the newest entry of a word always has all its buffered bytes, and rolling a
 * child back is a truncation. The level of an entry is where it lies: at or beyond the
 * current level's write-set mark (closed nesting), or anywhere (flat). An open-addressing
 * index maps each word to its newest entry (valid when its epoch is current). */
#include <sys/mman.h>

#include "tm/htm_emul_internal.h"

void htm_wbuf_thread_init(htm_thread *t) {
  size_t words = (size_t)htm_cfg.l1_sets * htm_cfg.l1_ways << (htm_cfg.line_shift - 3);
  size_t slots = 16;
  while (slots < 2 * words) slots *= 2;
  void *p = mmap(NULL, slots * sizeof *t->words, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) tm_fatal("htm-emul: cannot map a descriptor's write index");
  t->words = p;
  t->words_mask = slots - 1;
  t->words_epoch = 1;
}

static inline size_t word_hash(uintptr_t word) {
  return (size_t)(((word >> 3) * 0x9E3779B97F4A7C15ull) >> 32);
}

/* The index slot of the word: its own, or the free one where it would go. */
static htm_word_slot *word_slot(htm_thread *me, uintptr_t word) {
  for (size_t i = word_hash(word) & me->words_mask;; i = (i + 1) & me->words_mask) {
    htm_word_slot *s = &me->words[i];
    if (s->epoch != me->words_epoch || s->word == word) return s;
  }
}

tm_wentry *htm_wbuf_find(tm_tx *tx, htm_thread *me, uintptr_t word) {
  htm_word_slot *s = word_slot(me, word);
  return s->epoch == me->words_epoch ? &tx->wset[s->index] : NULL;
}

static size_t level_mark(const tm_tx *tx) {
  return tx->depth > 1 && tm_cfg.nesting == TM_NESTING_CLOSED ? tx->levels[tx->depth]->wset_mark
                                                              : 0;
}

void htm_wbuf_put(tm_tx *tx, htm_thread *me, uintptr_t word, uint64_t mask, uint64_t value) {
  htm_word_slot *s = word_slot(me, word);
  tm_wentry *e = NULL;
  if (s->epoch == me->words_epoch) {
    e = &tx->wset[s->index];
    if (s->index < level_mark(tx)) { /* the parent's: this level starts its own copy */
      if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) tm_fatal("a transaction wrote more than 2^20 times");
      tm_wentry *copy = &tx->wset[tx->wn];
      copy->addr = word;
      copy->value = e->value;
      copy->mask = e->mask;
      s->index = (uint32_t)tx->wn++;
      e = copy;
    }
  } else {
    if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) tm_fatal("a transaction wrote more than 2^20 times");
    e = &tx->wset[tx->wn];
    e->addr = word;
    e->value = 0;
    e->mask = 0;
    s->word = word;
    s->epoch = me->words_epoch;
    s->index = (uint32_t)tx->wn++;
  }
  e->value = (e->value & ~mask) | (value & mask);
  e->mask |= mask;
}

void htm_wbuf_truncate(tm_tx *tx, htm_thread *me, size_t mark) {
  tx->wn = mark;
  if (++me->words_epoch == 0) {
    for (size_t i = 0; i <= me->words_mask; i++) me->words[i].epoch = 0;
    me->words_epoch = 1;
  }
  for (size_t i = 0; i < mark; i++) { /* later entries of a word replace earlier ones */
    htm_word_slot *s = word_slot(me, tx->wset[i].addr);
    s->word = tx->wset[i].addr;
    s->epoch = me->words_epoch;
    s->index = (uint32_t)i;
  }
}

void htm_wbuf_write_back(const tm_tx *tx) {
  for (size_t i = 0; i < tx->wn; i++) {
    const tm_wentry *e = &tx->wset[i];
    if (e->mask == UINT64_MAX) {
      tm_plain_store(e->addr, 8, e->value);
      continue;
    }
    for (unsigned b = 0; b < 8; b++)
      if ((e->mask >> (8 * b)) & 0xff) tm_plain_store(e->addr + b, 1, (e->value >> (8 * b)) & 0xff);
  }
}
