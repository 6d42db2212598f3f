/* True and false conflicts, constructed: A writes one word and B accesses either the same
 * word (a true conflict) or a different word that maps to the same ownership record (a
 * false conflict): the next word of the stripe (shift >= 4: a stripe holds 2^shift bytes)
 * or, with the shift-mask hash, a word 2^(shift + ort_log2) bytes further on, which wraps
 * around the ORT onto the same entry. Run under TXALLOC_SHIFT=3, 4, 5.
 *   lock conflicts (etl-*): B reads / writes while A holds the stripe; the classification
 *     is exact: the lock points at A's write set.
 *   validation conflicts (every design): B read its word, A commits, B's commit fails
 *     validation; the classification may say "unknown" but must never be wrong. */
#include "tm_test.h"

static uint8_t *arena;      /* 64-byte aligned, 2^(shift+ort_log2) + 256 bytes */
static size_t alias_offset; /* distance to the aliasing word, 0 when none can be built */
static int shift;

static volatile uint64_t *word_a, *word_b, *word_z;
static int a_locked, a_committed, b_ready, b_aborted;

enum access { READ, WRITE };
static enum access b_access;

static void a_store_and_hold(void) {
  TM_ATOMIC {
    tm_store(word_a, (uint64_t)1);
    flag_set(&a_locked, 1);
    flag_wait_ge(&b_aborted, 1);
  }
  flag_set(&a_committed, 1);
}

static void b_access_locked(void) {
  flag_wait_ge(&a_locked, 1);
  volatile int attempt = 0;
  TM_ATOMIC {
    if (++attempt >= 2) {
      flag_set(&b_aborted, 1);
      flag_wait_ge(&a_committed, 1);
    }
    if (b_access == READ)
      (void)tm_load(word_b);
    else
      tm_store(word_b, (uint64_t)2);
  }
}

static void a_commit_after_b_read(void) {
  flag_wait_ge(&b_ready, 1);
  TM_ATOMIC { tm_store(word_a, tm_load(word_a) + 1); }
  flag_set(&a_committed, 1);
}

static void b_read_then_commit(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    uint64_t v = tm_load(word_b);
    tm_store(word_z, v + 1);
    if (++attempt == 1) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
  }
}

typedef void (*side_fn)(void);
static void pair_thread(int index, void *arg) { ((side_fn *)arg)[index](); }

static tm_stats run_pair(const char *name, side_fn a, side_fn b) {
  a_locked = a_committed = b_ready = b_aborted = 0;
  *word_a = *word_b = *word_z = 0;
  tm_stats_reset();
  side_fn sides[2] = {a, b};
  tm_test_run_threads(2, pair_thread, sides);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(name, &s);
  return s;
}

/* One case: B's word at `offset` from A's word (0: the same word). */
static void check_case(const char *what, size_t offset) {
  int same = offset == 0;
  word_a = (volatile uint64_t *)arena;
  word_b = (volatile uint64_t *)(arena + offset);
  fprintf(stderr, "-- %s (offset %zu)\n", what, offset);

  if (tm_test_is_etl() && !tm_test_option_is("cm", "wait")) {
    for (int k = 0; k < 2; k++) {
      b_access = k == 0 ? READ : WRITE;
      tm_stats s =
          run_pair(k == 0 ? "read_locked" : "write_locked", a_store_and_hold, b_access_locked);
      tm_abort_cause cause = k == 0 ? TM_ABORT_READ_LOCKED : TM_ABORT_WRITE_LOCKED;
      CHECKF(s.aborts == 1 && tm_test_cause(&s, cause) == 1, "%s: one %s abort", what,
             tm_abort_cause_name(cause));
      CHECKF(s.true_conflicts == (uint64_t)same && s.false_conflicts == (uint64_t)!same &&
                 s.unknown_conflicts == 0,
             "%s: lock conflicts are classified exactly", what);
    }
  }

  tm_stats s = run_pair("validate_commit", a_commit_after_b_read, b_read_then_commit);
  CHECKF(*word_z == (same ? 2u : 1u), "%s: B committed on A's value", what);
  CHECKF(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_VALIDATE_COMMIT) == 1,
         "%s: one validate_commit abort", what);
  CHECKF(s.true_conflicts + s.false_conflicts + s.unknown_conflicts == 1,
         "%s: the conflict abort is classified once", what);
  if (same)
    CHECKF(s.false_conflicts == 0, "%s: a true conflict is never called false", what);
  else
    CHECKF(s.true_conflicts == 0, "%s: a false conflict is never called true", what);
}

int main(void) {
  tm_test_watchdog(120);
  tm_thread_init();
  tm_test_print_config("conflicts");
  if (!tm_test_is_stm()) return check_exit();
  shift = atoi(tm_test_option("shift"));
  int ort_log2 = atoi(tm_test_option("ort_log2"));
  CHECK(shift >= 3 && ort_log2 > 0);
  if (tm_test_option_is("hash", "shift-mask") && shift + ort_log2 <= 26)
    alias_offset = (size_t)1 << (shift + ort_log2);
  size_t size = alias_offset + 256;
  arena = aligned_alloc(256, (size + 255) / 256 * 256);
  CHECK(arena != NULL);
  memset(arena, 0, size);
  word_z = (volatile uint64_t *)(arena + 128); /* its own stripe (shift <= 6) */

  int cases = 0;
  check_case("true conflict: same word", 0);
  cases++;
  if (shift >= 4) {
    check_case("false conflict: next word of the stripe", 8);
    cases++;
  }
  if (alias_offset) {
    check_case("false conflict: word aliasing through the ORT", alias_offset);
    cases++;
  }
  CHECKF(cases >= 2, "this configuration (shift=%d, hash=%s) constructs no false conflict", shift,
         tm_test_option("hash"));
  free(arena);
  return check_exit();
}
