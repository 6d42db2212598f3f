/* tle: lock elision (docs/htm.md, "Lock elision") over a hardware TM: htm-emul, or Intel's
 * RTM (rtm.c) where the CPU runs it (tle_htm: auto, the default, takes rtm where
 * rtm_unusable_reason() is NULL, else htm-emul). Each atomic block is a critical section of
 * one global test-and-test-and-set lock (htm-emul's fallback lock, under either) that the
 * hardware first tries to elide: the section runs as a hardware attempt that reads the
 * lock, and takes the lock only under elision's policy, with glibc's choices as the
 * defaults:
 *   - a conflict (or, with tle_wait=0, finding the lock held) is retried, tle_retries
 *     times in all, then the section takes the lock;
 *   - a capacity or unfriendly abort is not retried (the same attempt would fail the same
 *     way): the section takes the lock, and so do the next tle_skip sections of any thread
 *     without trying to elide it (glibc's adapt_count);
 *   - tle_wait=1: an attempt that finds the lock held waits until it is free, so that
 *     waiting sections do not burn their retries on it and all end on the lock (the
 *     lemming effect); tle_wait=0 aborts them (explicit, code 0xff) instead.
 * Statistics: elided sections are the commits that are not irrevocable, acquired ones
 * commits_irrevocable; aborts by cause; lock_held_ns the time spent holding the lock. The
 * attempts themselves are htm-emul's (htm_emul.c) or rtm's: the policy is htm_cfg, which
 * both read, and over rtm tle_init puts rtm's operations in tm_be in place of its own. */
#include "tm/htm_emul_internal.h"
#include "tm/rtm.h"

enum { TLE_HTM_AUTO, TLE_HTM_EMUL, TLE_HTM_RTM };

static void print_policy(FILE *out, const char *htm) {
  fprintf(out, ", \"tle_htm\": \"%s\", \"tle_retries\": %u, \"tle_skip\": %u, \"tle_wait\": %s",
          htm, htm_cfg.retries, htm_cfg.skip, htm_cfg.wait ? "true" : "false");
}

static void tle_print_config(FILE *out) {
  htm_emul_print_geometry(out);
  print_policy(out, "emul");
}

static void tle_rtm_print_config(FILE *out) { print_policy(out, "rtm"); }

static bool over_rtm(void) {
  switch (txalloc_opt(TXALLOC_OPT_TLE_HTM)) {
  case TLE_HTM_EMUL: return false;
  case TLE_HTM_RTM: rtm_require("TXALLOC_TLE_HTM=rtm", "TXALLOC_TLE_HTM=emul or auto"); return true;
  default: return rtm_unusable_reason() == NULL;
  }
}

static void tle_init(void) {
  htm_cfg.retries = (unsigned)txalloc_opt(TXALLOC_OPT_TLE_RETRIES);
  htm_cfg.skip = (unsigned)txalloc_opt(TXALLOC_OPT_TLE_SKIP);
  htm_cfg.wait = txalloc_opt(TXALLOC_OPT_TLE_WAIT) != 0;
  if (over_rtm())
    rtm_install("tle", tle_rtm_print_config);
  else
    htm_emul_init_geometry();
}

const tm_backend tle_backend = {
    .name = "tle",
    .init = tle_init,
    .thread_init = htm_emul_thread_init,
    .begin_first = htm_emul_begin_first,
    .begin_again = htm_emul_begin_again,
    .commit = htm_emul_commit,
    .rollback = htm_emul_rollback,
    .load = htm_emul_load,
    .store = htm_emul_store,
    .become_irrevocable = htm_emul_become_irrevocable,
    .plain_store = htm_plain_store,
    .print_config = tle_print_config,
    .conflict_geometry = htm_emul_conflict_geometry,
};
