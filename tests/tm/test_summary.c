/* The attribution summary written at each commit (src/tm/stm_internal.h, "Attribution"):
 * tm_record_commit's inline case (one word under the lock, stripes of at most 16 words),
 * which works on the packed summary word, must leave exactly the word that
 * tm_record_commit_general leaves, from every summary state: windows of every count
 * (0, growing, full, and counts no commit writes), the same stripe's tag or another's,
 * TM_TAG_MIXED, rollback-only windows (union 0). Run at shifts 3, 5 and 7 (CMakeLists.txt),
 * where a stripe has 1, 4 and 16 words; other shifts and rollbacks take the general
 * function in both. The same for chains of several entries (one stripe, several stripes,
 * words repeated, longer than TM_CHAIN_WALK_MAX). Also checks a few results by their meaning, so
 * that both cannot be wrong the same way. Deterministic: a fixed pseudo-random sequence. */
#include "tm/stm_internal.h"
#include "tm_test.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng_next(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* A summary word from its fields (the layout in stm_internal.h). */
static uint64_t summary(uint64_t base, uint64_t count, uint64_t tag, uint64_t all, uint64_t last) {
  return base << 44 | count << 40 | tag << 32 | all << 16 | last;
}

/* A summary state to start from: a random word, or one built to hit the extension cases. */
static uint64_t some_summary(uintptr_t addr) {
  uint64_t r = rng_next();
  uint64_t tag = tm_stripe_tag(addr >> stm_cfg.shift);
  switch (r % 6) {
  case 0: return rng_next(); /* anything, counts 9..15 included */
  case 1: return 0;          /* a fresh lock */
  case 2:                    /* this stripe, a window of any count */
    return summary(rng_next() & TM_SUMMARY_BASE_MASK, (r >> 8) % 10, tag, rng_next() & 0xffff,
                   rng_next() & 0xffff);
  case 3: /* rollbacks only: union 0, any tag */
    return summary(rng_next() & TM_SUMMARY_BASE_MASK, (r >> 8) % 10, (r >> 16) & 0xff, 0, 0);
  case 4: /* mixed */
    return summary(rng_next() & TM_SUMMARY_BASE_MASK, (r >> 8) % 10, TM_TAG_MIXED, 0xffff, 0xffff);
  default: /* another stripe's tag */
    return summary(rng_next() & TM_SUMMARY_BASE_MASK, (r >> 8) % 10,
                   (tag + 1 + (r >> 16) % 254) % 255, rng_next() & 0xffff, rng_next() & 0xffff);
  }
}

int main(void) {
  TM_ATOMIC {} /* starts the runtime: tm_cfg holds the configuration */
  unsigned shift = stm_cfg.shift;
  printf("shift %u\n", shift);
  CHECK(shift >= 3 && shift <= 7); /* the inline case's range (CMakeLists.txt) */

  tm_wentry entry; /* a one-entry chain: the word written */
  memset(&entry, 0, sizeof entry);
  uint64_t inline_pair[2], general_pair[2]; /* lock word, summary word */
  unsigned extended = 0, restarted = 0;
  for (int i = 0; i < 200000; i++) {
    entry.addr = (uintptr_t)(rng_next() & 0x7ffffffffff8ull);
    uint64_t old = some_summary(entry.addr);
    uint64_t prev = tm_version_word(rng_next() >> 24);
    inline_pair[1] = general_pair[1] = old;
    tm_record_commit(inline_pair, &entry, prev);
    tm_record_commit_general(general_pair, &entry, prev);
    if (inline_pair[1] != general_pair[1]) {
      CHECKF(0, "addr %#lx, summary %#llx, prev %#llx: inline %#llx, general %#llx",
             (unsigned long)entry.addr, (unsigned long long)old, (unsigned long long)prev,
             (unsigned long long)inline_pair[1], (unsigned long long)general_pair[1]);
      break;
    }
    uint64_t count = (inline_pair[1] >> 40) & 15;
    if (count > 1) extended++;
    if (count == 1) restarted++;
  }
  printf("extended %u, restarted %u of 200000\n", extended, restarted);
  CHECK(extended > 10000 && restarted > 10000); /* both branches were compared */

  /* Chains of several entries (tm_record_commit's inline walk): 2..6 entries in one stripe
   * (words repeated, as a child's shadowing entries leave them), sometimes one in another
   * stripe (TM_TAG_MIXED), and chains longer than TM_CHAIN_WALK_MAX (TM_TAG_MIXED too). */
  static tm_wentry chain[TM_CHAIN_WALK_MAX + 2];
  memset(chain, 0, sizeof chain);
  unsigned chains_extended = 0, chains_mixed = 0;
  for (int i = 0; i < 100000; i++) {
    uintptr_t stripe = (uintptr_t)(rng_next() & 0x7ffffffffff8ull) >> shift << shift;
    uint64_t r = rng_next();
    size_t n = i % 500 == 0 ? TM_CHAIN_WALK_MAX + 1 + (r & 1) : 2 + (r >> 8) % 5;
    for (size_t k = 0; k < n; k++) {
      chain[k].addr = stripe + 8 * (rng_next() % (shift >= 7 ? 16 : 1u << (shift - 3)));
      chain[k].next = k + 1 < n ? &chain[k + 1] : NULL;
    }
    if ((r >> 16) % 8 == 0) chain[(r >> 24) % n].addr ^= (uintptr_t)1 << shift; /* another stripe */
    uint64_t old = some_summary(stripe);
    uint64_t prev = tm_version_word(rng_next() >> 24);
    inline_pair[1] = general_pair[1] = old;
    tm_record_commit(inline_pair, chain, prev);
    tm_record_commit_general(general_pair, chain, prev);
    if (inline_pair[1] != general_pair[1]) {
      CHECKF(0, "chain of %zu at %#lx, summary %#llx: inline %#llx, general %#llx", n,
             (unsigned long)stripe, (unsigned long long)old, (unsigned long long)inline_pair[1],
             (unsigned long long)general_pair[1]);
      break;
    }
    if (((inline_pair[1] >> 40) & 15) > 1) chains_extended++;
    if (((inline_pair[1] >> 32) & 0xff) == TM_TAG_MIXED) chains_mixed++;
  }
  printf("chains: extended %u, mixed %u of 100000\n", chains_extended, chains_mixed);
  CHECK(chains_extended > 5000 && chains_mixed > 5000);

  /* By meaning: a fresh lock starts a window at prev's version with the word's bit. */
  entry.addr = 0x10000 + 8 * 1; /* word 1 of its stripe at shift >= 4, word 0 at shift 3 */
  uint64_t bit = UINT64_C(1) << (shift > 3 ? 1 : 0);
  uint64_t tag = tm_stripe_tag(entry.addr >> shift);
  inline_pair[1] = 0;
  tm_record_commit(inline_pair, &entry, tm_version_word(77));
  CHECK(inline_pair[1] == summary(77, 1, tag, bit, bit));
  /* The next commit of another word of the same stripe grows the window. */
  if (shift > 3) {
    entry.addr = 0x10000;
    tm_record_commit(inline_pair, &entry, tm_version_word(78));
    CHECK(inline_pair[1] == summary(77, 2, tag, bit | 1, 1));
  }
  /* A full window restarts at the new prev. */
  entry.addr = 0x10000;
  tag = tm_stripe_tag(entry.addr >> shift);
  inline_pair[1] = summary(5, TM_SUMMARY_WINDOW, tag, 0xf, 0x1);
  tm_record_commit(inline_pair, &entry, tm_version_word(90));
  CHECK(inline_pair[1] == summary(90, 1, tag, 1, 1));
  return check_exit();
}
