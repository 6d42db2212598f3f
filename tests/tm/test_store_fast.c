/* The update path's fast cases (src/tm/tm_access.c: the frameless first store of a word to
 * an unlocked stripe inside the snapshot; src/tm/stm.c: the frameless one-entry commit and
 * the privatization barrier's single-descriptor case), against what the general paths give,
 * in one thread (deterministic):
 *   - a store read back in its transaction and after it (and through a plain load);
 *   - a second store to the same word, a store to another word of the same stripe (the
 *     chain), a store after a load of the stripe, stores to several stripes;
 *   - nested levels: a child's first store to an unlocked stripe, then its abort (the
 *     parent's value, and the stripe's lock, must come back) or its commit;
 *   - a restart after a store (the entry is reused), a read-only attempt that stores;
 *   - a snapshot reset by tm_request_validation before a store and before a commit (the
 *     fast store must not apply, the commit must validate);
 *   - sub-word stores before and after a whole-word store of the same word;
 *   - after every one-word commit (STM backends): the lock word is unlocked at the clock's
 *     version, the attribution summary is exactly what tm_record_commit_general gives from
 *     the state before the transaction, wb_ts is 0 and the attempt counter moved by one;
 *   - the same after a second thread has registered (the barrier walks again);
 *   - a store to a stripe committed after our snapshot (forced with a second thread): the
 *     store must extend the snapshot, which fails here (a word we read changed), so the
 *     attempt never reads the stripe's other words at a version its other reads miss.
 * Registered on every design, flat nesting, attribution and privatization off, shift 8 (no
 * inline summary), cm=kill, and the glock backend (tests/tm/CMakeLists.txt). */
#include "tm/stm_internal.h"
#include "tm_test.h"

static struct {
  _Alignas(256) uint64_t a[8]; /* two stripes at shift 5, one at shift >= 6 */
  _Alignas(256) uint64_t b[8];
  _Alignas(256) uint64_t c;
  _Alignas(256) uint64_t d;
  _Alignas(256) uint64_t e[2]; /* one stripe; e[1] == f always (opacity check) */
  _Alignas(256) uint64_t f;
} m;

static int stm;  /* the STM backend: lock words and summaries to check */
static int flat; /* flat nesting: tm_abort in a child cancels the outermost block */
static int attr; /* attribution on */

/* The state of one word's lock before a transaction that writes that word alone. */
typedef struct {
  uintptr_t addr;
  uint64_t *lock;
  uint64_t pair[2]; /* lock word (unlocked), summary word */
  uint64_t attempt;
} before_t;

static before_t before(volatile uint64_t *p) {
  before_t b = {.addr = (uintptr_t)p};
  if (!stm) return b;
  b.lock = tm_ort_lock(b.addr);
  b.pair[0] = __atomic_load_n(b.lock, __ATOMIC_ACQUIRE);
  b.pair[1] = __atomic_load_n(b.lock + 1, __ATOMIC_ACQUIRE);
  b.attempt = tm_self ? __atomic_load_n(&tm_self->attempt, __ATOMIC_ACQUIRE) : 0;
  CHECK((b.pair[0] & 1) == 0);
  return b;
}

/* After a committed transaction that wrote b's word alone (its last write commit). */
static void check_one_word_commit(const before_t *b, int line) {
  if (!stm) return;
  uint64_t clock = __atomic_load_n(&tm_clock.value, __ATOMIC_ACQUIRE);
  uint64_t l = __atomic_load_n(b->lock, __ATOMIC_ACQUIRE);
  CHECKF(l == tm_version_word(clock), "line %d: lock word %#llx, clock %llu", line,
         (unsigned long long)l, (unsigned long long)clock);
  if (attr) {
    tm_wentry e;
    memset(&e, 0, sizeof e);
    e.addr = b->addr;
    uint64_t expected[2] = {b->pair[0], b->pair[1]};
    tm_record_commit_general(expected, &e, b->pair[0]);
    uint64_t s = __atomic_load_n(b->lock + 1, __ATOMIC_ACQUIRE);
    CHECKF(s == expected[1], "line %d: summary %#llx, expected %#llx (before %#llx)", line,
           (unsigned long long)s, (unsigned long long)expected[1], (unsigned long long)b->pair[1]);
  }
  CHECKF(__atomic_load_n(&tm_self->wb_ts, __ATOMIC_ACQUIRE) == 0, "line %d: wb_ts", line);
  CHECKF(__atomic_load_n(&tm_self->attempt, __ATOMIC_ACQUIRE) == b->attempt + 1,
         "line %d: attempt %llu, before %llu", line,
         (unsigned long long)__atomic_load_n(&tm_self->attempt, __ATOMIC_ACQUIRE),
         (unsigned long long)b->attempt);
}

static uint64_t plain(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

static TM_TEST_TX void store_one(volatile uint64_t *p, uint64_t v) {
  TM_ATOMIC {
    tm_store(p, v);
    CHECK(tm_load(p) == v);
  }
}

static TM_TEST_TX void store_twice(volatile uint64_t *p, uint64_t v) {
  TM_ATOMIC {
    tm_store(p, v);
    tm_store(p, v + 1);
    CHECK(tm_load(p) == v + 1);
  }
}

/* Loads the word's stripe first (the store then finds it unlocked, in the snapshot). */
static TM_TEST_TX void load_then_store(volatile uint64_t *p, volatile uint64_t *q, uint64_t v) {
  TM_ATOMIC {
    uint64_t x = tm_load(q);
    tm_store(p, v + x);
    CHECK(tm_load(p) == v + x);
    CHECK(tm_load(q) == x);
  }
}

static TM_TEST_TX void store_stripe(uint64_t v) {
  TM_ATOMIC {
    tm_store(&m.a[0], v);
    tm_store(&m.a[1], v + 1); /* same stripe: a second entry in the lock's chain */
    tm_store(&m.a[0], v + 2); /* the first word again */
    tm_store(&m.b[0], v + 3); /* another stripe */
    CHECK(tm_load(&m.a[0]) == v + 2);
    CHECK(tm_load(&m.a[1]) == v + 1);
    CHECK(tm_load(&m.a[2]) == 0); /* a word of a held stripe we did not write */
    CHECK(tm_load(&m.b[0]) == v + 3);
  }
}

static TM_TEST_TX void child_abort(uint64_t v) {
  TM_ATOMIC { /* child: b[4]'s stripe is unlocked (first store), a[4] is the parent's */
    tm_store(&m.b[4], v + 1);
    tm_store(&m.a[4], v + 2);
    CHECK(tm_load(&m.b[4]) == v + 1);
    CHECK(tm_load(&m.a[4]) == v + 2);
    tm_abort();
  }
}

static TM_TEST_TX void child_commit(uint64_t v) {
  TM_ATOMIC {
    tm_store(&m.b[4], v + 3);
    CHECK(tm_load(&m.a[4]) == v);
  }
}

static TM_TEST_TX void nested(uint64_t v, uint64_t b4_before) {
  TM_ATOMIC {
    tm_store(&m.a[4], v);
    child_abort(v);
    /* Closed nesting: the child's stores are gone, the parent's survives. */
    CHECK(tm_load(&m.a[4]) == v);
    CHECK(tm_load(&m.b[4]) == b4_before);
    child_commit(v);
    CHECK(tm_load(&m.b[4]) == v + 3);
  }
}

static TM_TEST_TX void restart_once(uint64_t v) {
  volatile int runs = 0;
  TM_ATOMIC {
    tm_store(&m.c, v + (uint64_t)runs);
    if (++runs == 1) tm_restart();
  }
}

static TM_TEST_TX void read_only_store(uint64_t v) {
  TM_ATOMIC_RO {
    uint64_t x = tm_load(&m.d);
    tm_store(&m.c, v + x);
  }
}

static TM_TEST_TX void validation_before_store(uint64_t v) {
  TM_ATOMIC {
    uint64_t x = tm_load(&m.d);
    tm_request_validation(); /* end = 0: the store's stripe is above the bound */
    tm_store(&m.c, v + x);
  }
}

static TM_TEST_TX void validation_before_commit(uint64_t v) {
  TM_ATOMIC {
    uint64_t x = tm_load(&m.d);
    tm_store(&m.c, v + x);
    tm_request_validation(); /* the commit finds ts != end + 1: it validates */
  }
}

static TM_TEST_TX void subword_then_word(uint64_t v) {
  TM_ATOMIC {
    tm_store_u32((volatile uint32_t *)(volatile void *)&m.d, 0xdeadbeef);
    tm_store(&m.d, v);
    CHECK(tm_load(&m.d) == v);
  }
}

static TM_TEST_TX void word_then_subword(uint64_t v) {
  TM_ATOMIC {
    tm_store(&m.d, v);
    tm_store_u8((volatile uint8_t *)(volatile void *)&m.d + 1, 0x5a);
    CHECK(tm_load(&m.d) == ((v & ~UINT64_C(0xff00)) | UINT64_C(0x5a00)));
  }
}

static TM_TEST_TX void subword_only(void) {
  TM_ATOMIC { tm_store_u16((volatile uint16_t *)(volatile void *)&m.d + 2, 0x1234); }
}

/* Consecutive one-word commits to the words of two stripes: the summary windows grow,
 * fill and restart. */
static void one_word_commits(int rounds, uint64_t base) {
  for (int i = 0; i < rounds; i++) {
    volatile uint64_t *p = i % 5 == 4 ? &m.b[i % 4] : &m.a[i % 8];
    before_t b = before(p);
    store_one(p, base + (uint64_t)i);
    CHECK(plain(p) == base + (uint64_t)i);
    CHECK(tm_load(p) == base + (uint64_t)i);
    check_one_word_commit(&b, __LINE__);
  }
}

/* Opacity at a store: main reads f, then the writer commits f + 1 and e[1] + 1 together,
 * then main stores to e[0] (its stripe's version is now above main's snapshot) and reads
 * e[1]. Taking that lock without extending the snapshot would let main see the new e[1]
 * with the old f. */
static int writer_go, writer_done;

static void *writer(void *arg) {
  (void)arg;
  flag_wait_ge(&writer_go, 1);
  TM_ATOMIC {
    tm_store(&m.f, tm_load(&m.f) + 1);
    tm_store(&m.e[1], tm_load(&m.e[1]) + 1);
  }
  flag_set(&writer_done, 1);
  return NULL;
}

static TM_TEST_TX int store_after_commit(void) {
  volatile int runs = 0;
  TM_ATOMIC {
    uint64_t f = tm_load(&m.f);
    if (++runs == 1) {
      flag_set(&writer_go, 1);
      flag_wait_ge(&writer_done, 1);
    }
    tm_store(&m.e[0], f);
    uint64_t e1 = tm_load(&m.e[1]);
    CHECKF(e1 == f, "attempt %d: e[1] %llu with f %llu", runs, (unsigned long long)e1,
           (unsigned long long)f);
  }
  return runs;
}

static void *other_thread(void *arg) {
  (void)arg;
  store_one(&m.b[7], 4242);
  return NULL;
}

int main(void) {
  tm_test_watchdog(120);
  TM_ATOMIC {} /* starts the runtime and this thread's descriptor */
  tm_test_print_config("store_fast");
  stm = tm_test_is_stm();
  flat = tm_test_option_is("nesting", "flat");
  attr = stm && stm_cfg.attribution;

  one_word_commits(40, 1000);

  {
    before_t b = before(&m.c);
    store_twice(&m.c, 7);
    CHECK(plain(&m.c) == 8);
    check_one_word_commit(&b, __LINE__);
  }
  {
    before_t b = before(&m.a[3]);
    load_then_store(&m.a[3], &m.a[2], 50); /* a[2] holds 0 + ... from one_word_commits */
    CHECK(plain(&m.a[3]) == 50 + plain(&m.a[2]));
    check_one_word_commit(&b, __LINE__);
  }
  memset((void *)m.a, 0, sizeof m.a);
  memset((void *)m.b, 0, sizeof m.b);
  store_stripe(100);
  CHECK(plain(&m.a[0]) == 102 && plain(&m.a[1]) == 101 && plain(&m.a[2]) == 0 &&
        plain(&m.b[0]) == 103);
  if (stm) {
    CHECK((plain(tm_ort_lock((uintptr_t)&m.a[0])) & 1) == 0);
    CHECK((plain(tm_ort_lock((uintptr_t)&m.b[0])) & 1) == 0);
  }

  uint64_t b4 = plain(&m.b[4]);
  nested(200, b4);
  if (flat) { /* the child's tm_abort cancelled the whole block */
    CHECK(plain(&m.a[4]) == 0 && plain(&m.b[4]) == b4);
  } else {
    CHECK(plain(&m.a[4]) == 200 && plain(&m.b[4]) == 203);
  }
  if (stm) {
    CHECK((plain(tm_ort_lock((uintptr_t)&m.a[4])) & 1) == 0);
    CHECK((plain(tm_ort_lock((uintptr_t)&m.b[4])) & 1) == 0);
  }

  {
    before_t b = before(&m.c);
    restart_once(300);
    CHECK(plain(&m.c) == 301);
    /* The restart gave up the first attempt's entry too: the attempt moved by two. */
    if (stm) b.attempt++;
    /* etl-wt restored the word and released the lock at the next incarnation, recording a
     * rollback (no word) in the summary. */
    if (stm && tm_test_option_is("design", "etl-wt")) {
      if (attr) tm_record_commit_general(b.pair, NULL, b.pair[0]);
      b.pair[0] += TM_INC_ONE;
    }
    check_one_word_commit(&b, __LINE__);
  }
  {
    tm_stats_reset();
    before_t b = before(&m.c);
    read_only_store(400);
    CHECK(plain(&m.c) == 400 + plain(&m.d));
    tm_stats s;
    tm_stats_get(&s);
    if (stm) CHECK(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1);
    check_one_word_commit(&b, __LINE__); /* the read-only attempt wrote nothing */
  }
  {
    before_t b = before(&m.c);
    validation_before_store(500);
    CHECK(plain(&m.c) == 500 + plain(&m.d));
    check_one_word_commit(&b, __LINE__);
    b = before(&m.c);
    validation_before_commit(600);
    CHECK(plain(&m.c) == 600 + plain(&m.d));
    check_one_word_commit(&b, __LINE__);
  }
  {
    before_t b = before(&m.d);
    subword_then_word(0x1122334455667788);
    CHECK(plain(&m.d) == 0x1122334455667788);
    check_one_word_commit(&b, __LINE__);
    b = before(&m.d);
    word_then_subword(0x0102030405060708);
    CHECK(plain(&m.d) == 0x0102030405065a08);
    check_one_word_commit(&b, __LINE__);
    b = before(&m.d);
    subword_only();
    CHECK(plain(&m.d) == 0x0102123405065a08);
    check_one_word_commit(&b, __LINE__);
  }

  if (stm) {
    pthread_t w;
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    int runs = store_after_commit();
    CHECK(pthread_join(w, NULL) == 0);
    CHECK(runs == 2); /* the first attempt's extension failed */
    CHECK(plain(&m.e[0]) == 1 && plain(&m.e[1]) == 1 && plain(&m.f) == 1);
  }

  /* A second descriptor exists from now on: the privatization barrier walks. */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0 && pthread_join(t, NULL) == 0);
  CHECK(plain(&m.b[7]) == 4242);
  one_word_commits(20, 2000);

  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("store_fast", &s);
  return check_exit();
}
