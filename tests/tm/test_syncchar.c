/* The Syncchar recorder writes, for known blocks on one thread, the right site, read and
 * write sets (at the configured unit), retries and flags, and tm_malloc's objects; under
 * whichever backend TXALLOC_TM names. */
#include <stdint.h>
#include <unistd.h>

#include "syncchar_read.h"
#include "tm_test.h"

static uint64_t shared[64] __attribute__((aligned(4096)));
static volatile int restarts;
static void *volatile allocated;

TM_TEST_TX static void block_rw(void) {
  TM_ATOMIC {
    uint64_t x = tm_load(&shared[0]) + tm_load(&shared[1]);
    tm_store(&shared[2], x + 1);
  }
}
TM_TEST_TX static void block_ro(void) {
  TM_ATOMIC_RO { (void)tm_load(&shared[8]); }
}
TM_TEST_TX static void block_subword(void) {
  TM_ATOMIC {
    tm_store_u8((volatile uint8_t *)&shared[16] + 3, 7);
    (void)tm_load_u32((const volatile uint32_t *)&shared[24] + 1);
  }
}
TM_TEST_TX static void block_restart(void) {
  TM_ATOMIC {
    tm_store(&shared[32], 1);
    if (restarts++ == 0) tm_restart();
  }
}
TM_TEST_TX static void block_cancel(void) {
  TM_ATOMIC {
    tm_store(&shared[40], 1);
    tm_abort();
  }
}
TM_TEST_TX static void block_alloc(void) {
  TM_ATOMIC {
    uint64_t *p = tm_malloc(48);
    tm_store(&p[1], 5);
    allocated = p;
  }
}

/* The expected sets: units of the accesses, sorted, reads without the written units. */
typedef struct expect {
  uint64_t reads[4], writes[4];
  size_t nr, nw;
} expect;
static unsigned shift;
static uint64_t unit(const void *p) { return (uint64_t)(uintptr_t)p >> shift << shift; }
static void add(uint64_t *set, size_t *n, uint64_t u) {
  for (size_t i = 0; i < *n; i++)
    if (set[i] == u) return;
  size_t i = (*n)++;
  for (; i > 0 && set[i - 1] > u; i--) set[i] = set[i - 1];
  set[i] = u;
}
static expect sets(const void *const *reads, size_t nr, const void *const *writes, size_t nw) {
  expect e = {.nr = 0, .nw = 0};
  for (size_t i = 0; i < nw; i++) add(e.writes, &e.nw, unit(writes[i]));
  for (size_t i = 0; i < nr; i++) {
    uint64_t u = unit(reads[i]);
    int written = 0;
    for (size_t j = 0; j < e.nw; j++) written |= e.writes[j] == u;
    if (!written) add(e.reads, &e.nr, u);
  }
  return e;
}

static void check_section(const uint64_t *r, const expect *e, const char *what) {
  CHECKF(sc_kind(r) == 1, "%s: kind %u", what, sc_kind(r));
  CHECKF(sc_nreads(r) == e->nr && sc_nwrites(r) == e->nw, "%s: %zu reads, %zu writes", what,
         sc_nreads(r), sc_nwrites(r));
  if (sc_nreads(r) != e->nr || sc_nwrites(r) != e->nw) return;
  for (size_t i = 0; i < e->nr; i++) CHECKF(sc_reads(r)[i] == e->reads[i], "%s: read %zu", what, i);
  for (size_t i = 0; i < e->nw; i++)
    CHECKF(sc_writes(r)[i] == e->writes[i], "%s: write %zu", what, i);
  CHECKF(r[2] != 0, "%s: a site", what);
}

int main(void) {
  tm_test_watchdog(60);
  char path[] = "/tmp/txalloc-syncchar-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  /* The option is text: "off" is none; a path reads back as given. */
  int option = txalloc_option_find("syncchar");
  char text[sizeof path + 8];
  test_set_option("syncchar", "off");
  CHECK(txalloc_option_value((size_t)option) == 0);
  txalloc_option_format((size_t)option, text, sizeof text);
  CHECK(strcmp(text, "off") == 0);
  test_set_option("syncchar", path);
  CHECK(txalloc_option_value((size_t)option) != 0);
  txalloc_option_format((size_t)option, text, sizeof text);
  CHECK(strcmp(text, path) == 0);
  tm_test_print_config("syncchar");

  block_rw();
  block_rw();
  block_ro();
  block_subword();
  block_restart();
  block_cancel();
  block_alloc();
  tm_thread_exit(); /* the thread's records go to the file */

  sc_trace t;
  CHECK(sc_trace_read(path, &t) == 0);
  unlink(path);
  shift = t.unit_shift;
  CHECKF(strcmp(t.backend, tm_test_option("tm")) == 0, "backend %s", t.backend);
  CHECK(t.sample_percent == 100 && t.window == 512);

  const uint64_t *sec[16], *thread = NULL, *alloc = NULL;
  size_t nsec = 0;
  SC_FOR_EACH(&t, r) {
    if (sc_kind(r) == 1 && nsec < 16) sec[nsec++] = r;
    if (sc_kind(r) == 2) thread = r;
    if (sc_kind(r) == 3) alloc = r;
  }
  CHECKF(nsec == 7, "%zu sections", nsec);
  if (nsec == 7) {
    const void *rw_r[] = {&shared[0], &shared[1]}, *rw_w[] = {&shared[2]};
    expect rw = sets(rw_r, 2, rw_w, 1);
    check_section(sec[0], &rw, "rw");
    check_section(sec[1], &rw, "rw again");
    CHECK(sec[0][2] == sec[1][2]); /* one block, one site */
    const void *ro_r[] = {&shared[8]};
    expect ro = sets(ro_r, 1, NULL, 0);
    check_section(sec[2], &ro, "ro");
    CHECK(sec[2][2] != sec[0][2]);
    CHECK(sc_flags(sec[2]) & 1); /* read-only */
    const void *sw_r[] = {(const uint32_t *)&shared[24] + 1},
               *sw_w[] = {(const uint8_t *)&shared[16] + 3};
    expect sw = sets(sw_r, 1, sw_w, 1);
    check_section(sec[3], &sw, "subword");
    const void *rs_w[] = {&shared[32]};
    expect rs = sets(NULL, 0, rs_w, 1);
    check_section(sec[4], &rs, "restart");
    CHECKF(sec[4][6] == 1, "restart: %llu retries", (unsigned long long)sec[4][6]);
    CHECK(sec[0][6] == 0);
    const void *ca_w[] = {&shared[40]};
    expect ca = sets(NULL, 0, ca_w, 1);
    check_section(sec[5], &ca, "cancel");
    CHECK(sc_flags(sec[5]) & 4); /* cancelled */
    const void *al_w[] = {(uint64_t *)allocated + 1};
    expect al = sets(NULL, 0, al_w, 1);
    check_section(sec[6], &al, "alloc");
    for (size_t i = 0; i < nsec; i++) CHECK(sc_thread(sec[i]) == sc_thread(sec[0]));
  }
  CHECK(alloc != NULL);
  if (alloc) {
    CHECK(alloc[2] == (uint64_t)(uintptr_t)allocated);
    CHECK(alloc[1] >> 32 == 48);
    CHECK(alloc[3] != 0); /* tm_malloc's caller */
  }
  CHECK(thread != NULL);
  if (thread) {
    CHECKF(thread[2] == 7 && thread[3] == 7, "sections %llu, sampled %llu",
           (unsigned long long)thread[2], (unsigned long long)thread[3]);
    /* Every abort: the retries of the committed blocks (the restart's, and a backend's own,
     * such as htm-emul's unfriendly tm_malloc), and the cancel. */
    uint64_t retries = 1;
    for (size_t i = 0; i < nsec; i++) retries += sec[i][6];
    CHECKF(thread[4] == retries, "aborts %llu, expected %llu", (unsigned long long)thread[4],
           (unsigned long long)retries);
    CHECK(thread[8] >= thread[7]);
  }
  free(t.words);
  return check_exit();
}
