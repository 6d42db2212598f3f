/* The STM as a TM backend: its configuration, its per-thread set-up, how an attempt begins,
 * and the operation table the front-end calls (tm_backend.h). The algorithms are in stm.c,
 * the accesses in stm_access.c, conflict attribution in stm_attribution.c. */
#include <sys/mman.h>

#include "tm/stm_internal.h"

stm_config stm_cfg;

static void stm_init(void) {
  stm_cfg.design = (tm_design)txalloc_opt(TXALLOC_OPT_DESIGN);
  stm_cfg.hash = (tm_hash_kind)txalloc_opt(TXALLOC_OPT_HASH);
  stm_cfg.ort_log2 = (unsigned)txalloc_opt(TXALLOC_OPT_ORT_LOG2);
  stm_cfg.shift = (unsigned)txalloc_opt(TXALLOC_OPT_SHIFT);
  stm_cfg.ort_mask = ((uint64_t)1 << stm_cfg.ort_log2) - 1;
  stm_cfg.wait_spins = (unsigned)txalloc_opt(TXALLOC_OPT_WAIT_SPINS);
  stm_cfg.attribution = txalloc_opt(TXALLOC_OPT_ATTRIBUTION) != 0;
  /* Write-through has no delayed write-back (and is not privatization-safe against doomed
   * in-place writers; docs/stm.md). */
  stm_cfg.privatization =
      txalloc_opt(TXALLOC_OPT_PRIVATIZATION) != 0 && stm_cfg.design != TM_DESIGN_ETL_WT;
  stm_cfg.ort_stride = stm_cfg.attribution ? 4 : 3;
  stm_cfg.word_index_mask = stm_cfg.shift >= 7 ? 15 : ((uint64_t)1 << (stm_cfg.shift - 3)) - 1;
  size_t bytes = (size_t)1 << (stm_cfg.ort_log2 + stm_cfg.ort_stride);
  void *ort = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ort == MAP_FAILED) tm_fatal("cannot allocate the ownership-record table");
  stm_cfg.ort = ort;
}

/* A thread's first block starts from the clock of now, not from an older thread's. */
static void stm_thread_attach(tm_tx *tx) {
  tx->clock_seen = __atomic_load_n(&tm_clock.value, __ATOMIC_ACQUIRE);
  tx->fresh_begins = 0;
}

/* The common begin is inline: a block's first attempt may start from the last clock value
 * seen (a logging attempt extends its snapshot when it meets a newer version, a read-only
 * one restarts); a retry, which has just met newer versions, loads the clock. `fresh` is a
 * constant in each of the two operations below. */
static __attribute__((noinline)) void begin_other(tm_tx *tx, int flags, bool fresh) {
  stm_begin(tx, (flags & TM_FLAG_IRREVOCABLE) || tx->want_irrevocable, fresh,
            stm_attempt_read_only(tx, flags, false));
}
static inline __attribute__((always_inline)) void begin_top(tm_tx *tx, int flags, bool fresh) {
  if (TM_LIKELY(stm_begin_is_plain(tx, flags, fresh))) {
    stm_begin_attempt(tx, tx->begin_mode, tx->begin_fast_view,
                      stm_attempt_read_only(tx, flags, fresh), fresh);
    return;
  }
  begin_other(tx, flags, fresh);
}
static void stm_begin_first(tm_tx *tx, int flags) { begin_top(tx, flags, true); }
static void stm_begin_again(tm_tx *tx, int flags) { begin_top(tx, flags, false); }

/* Resetting a running transaction's snapshot bound to 0 sends its next load of any stripe
 * ever written, and its commit, through validation (snapshot extension): if its reads are
 * no longer valid it aborts there. extend_or_abort installs its new bound by CAS, so a
 * reset that races with an extension makes the extension validate again. Every descriptor
 * is reset, running or not: a transaction that begins later takes a new bound anyway, and
 * its begin then needs no store for this (the request is rare; begins are not). */
static void stm_request_validation(void) {
  for (tm_tx *t = tm_all_descriptors(); t; t = t->all_next)
    __atomic_store_n(&t->end, 0, __ATOMIC_RELAXED);
}

static void stm_conflict_geometry(unsigned *shift, uint64_t *entries) {
  *shift = stm_cfg.shift;
  *entries = (uint64_t)1 << stm_cfg.ort_log2;
}

static void stm_print_config(FILE *out) {
  char b[2][64];
  fprintf(out,
          ", \"design\": \"%s\", \"ort_log2\": %u, \"shift\": %u, \"hash\": \"%s\", "
          "\"attribution\": %s, \"privatization\": %s, \"wait_spins\": %u",
          tm_choice_word(TXALLOC_OPT_DESIGN, stm_cfg.design, b[0], 64), stm_cfg.ort_log2,
          stm_cfg.shift, tm_choice_word(TXALLOC_OPT_HASH, stm_cfg.hash, b[1], 64),
          stm_cfg.attribution ? "true" : "false", stm_cfg.privatization ? "true" : "false",
          stm_cfg.wait_spins);
}

const tm_backend stm_backend = {
    .name = "stm",
    .init = stm_init,
    .thread_init = stm_thread_init,
    .thread_attach = stm_thread_attach,
    .begin_first = stm_begin_first,
    .begin_again = stm_begin_again,
    .commit = stm_commit,
    .rollback = stm_rollback,
    .merge_child = stm_merge_child,
    .load = stm_load,
    .store = stm_store,
    .become_irrevocable = stm_try_become_irrevocable,
    .after_abort = stm_wait_after_abort,
    .request_validation = stm_request_validation,
    .print_config = stm_print_config,
    .conflict_geometry = stm_conflict_geometry,
};
