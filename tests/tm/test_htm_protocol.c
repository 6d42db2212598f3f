/* htm-emul's line and fallback protocol, white box (src/tm/htm_emul_lines.c,
 * htm_emul_fallback.c), on stand-in attempts: slot states registered at high slots that no
 * descriptor of this program uses, whose status words the test sets by hand. Each scenario
 * is deterministic: a requester that must wait runs on a helper thread and must not finish
 * while the holder keeps the line (checked after letting it run), and must finish once the
 * holder lets go.
 *   doom           ACTIVE -> DOOMED with the cause; COMMITTING and IDLE stay as they are
 *   requester wins a read dooms the writer; a write dooms the readers and the writer; a
 *                  read leaves other readers alone; nobody dooms itself
 *   commit point   a reader and a writer both wait for a committing writer; a writer waits
 *                  for a committing reader; neither dooms it
 *   plain store    dooms active holders, waits for committing ones, then stores
 *   fallback       acquiring dooms the subscribers and waits for the committing one; a
 *                  subscriber waits while the lock is held */
#include "tm/htm_emul_internal.h"
#include "tm_test.h"

#define FIRST_SLOT (HTM_SLOTS - 4)

static htm_thread *stand_in[4];
static _Alignas(64) uint64_t word;

static htm_thread *make(unsigned slot) {
  htm_thread *t = aligned_alloc(64, sizeof *t);
  memset(t, 0, sizeof *t);
  t->slot = slot;
  htm_threads_register(t);
  return t;
}

static void set_status(htm_thread *t, uint64_t s) {
  __atomic_store_n(&t->status, s, __ATOMIC_SEQ_CST);
}
static uint64_t status(htm_thread *t) { return __atomic_load_n(&t->status, __ATOMIC_SEQ_CST); }
static const uint64_t doomed_conflict = HTM_DOOMED | (uint64_t)HTM_DOOM_CONFLICT << 8;

static uintptr_t line_of(const void *p) { return (uintptr_t)p >> htm_cfg.line_shift; }

/* ---- a requester on a helper thread ---- */
enum { REQ_READ, REQ_WRITE, REQ_PLAIN_STORE, REQ_SUBSCRIBE, REQ_FALLBACK };
static int req_kind, req_started, req_done;
static htm_thread *req_by;

static void *requester(void *arg) {
  (void)arg;
  flag_set(&req_started, 1);
  switch (req_kind) {
  case REQ_READ: htm_line_acquire(req_by, line_of(&word), false); break;
  case REQ_WRITE: htm_line_acquire(req_by, line_of(&word), true); break;
  case REQ_PLAIN_STORE: htm_plain_store((uintptr_t)&word, 8, 42); break;
  case REQ_SUBSCRIBE: htm_fallback_subscribe(req_by); break;
  default: htm_fallback_acquire(); break;
  }
  flag_set(&req_done, 1);
  return NULL;
}

static pthread_t start_request(int kind, htm_thread *by) {
  req_kind = kind;
  req_by = by;
  req_started = req_done = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, requester, NULL) != 0) exit(2);
  flag_wait_ge(&req_started, 1);
  yield_for(300);
  return t;
}

static void release_all(void) {
  for (int i = 0; i < 4; i++) {
    htm_line_release(stand_in[i], line_of(&word));
    set_status(stand_in[i], HTM_IDLE);
  }
}

static void test_doom(void) {
  htm_thread *h = stand_in[0];
  set_status(h, HTM_ACTIVE);
  CHECK(htm_doom(h->slot, HTM_DOOM_UNFRIENDLY));
  CHECK(status(h) == (HTM_DOOMED | (uint64_t)HTM_DOOM_UNFRIENDLY << 8));
  CHECK(htm_doom(h->slot, HTM_DOOM_CONFLICT)); /* already doomed: stays, cause kept */
  CHECK(HTM_DOOM_CAUSE(status(h)) == HTM_DOOM_UNFRIENDLY);
  set_status(h, HTM_COMMITTING);
  CHECK(!htm_doom(h->slot, HTM_DOOM_CONFLICT) && status(h) == HTM_COMMITTING);
  set_status(h, HTM_IDLE);
  CHECK(htm_doom(h->slot, HTM_DOOM_CONFLICT) && status(h) == HTM_IDLE);
}

static void test_requester_wins(void) {
  htm_thread *a = stand_in[0], *b = stand_in[1], *c = stand_in[2];
  set_status(a, HTM_ACTIVE);
  set_status(b, HTM_ACTIVE);
  set_status(c, HTM_ACTIVE);
  htm_line_acquire(a, line_of(&word), true);
  htm_line_acquire(a, line_of(&word), false); /* its own line: no conflict */
  CHECK(status(a) == HTM_ACTIVE);
  htm_line_acquire(b, line_of(&word), false); /* a read dooms the writer */
  CHECK(status(a) == doomed_conflict && status(b) == HTM_ACTIVE);
  htm_line_acquire(c, line_of(&word), false); /* readers share */
  CHECK(status(b) == HTM_ACTIVE && status(c) == HTM_ACTIVE);
  htm_line_acquire(c, line_of(&word), true); /* a write dooms the other reader */
  CHECK(status(b) == doomed_conflict && status(c) == HTM_ACTIVE);
  release_all();
}

/* A holder (stand_in[0], holding for `hold_write`) is committing; a requester of `kind`
 * must wait for it, or not. */
static void commit_point(const char *what, int hold_write, int kind, int waits) {
  htm_thread *h = stand_in[0], *r = stand_in[1];
  set_status(h, HTM_ACTIVE);
  set_status(r, HTM_ACTIVE);
  htm_line_acquire(h, line_of(&word), hold_write);
  set_status(h, HTM_COMMITTING);
  pthread_t t = start_request(kind, r);
  if (waits) {
    CHECKF(flag_get(&req_done) == 0, "%s: the requester did not wait for the committing holder",
           what);
    CHECK(status(h) == HTM_COMMITTING);
    htm_line_release(h, line_of(&word));
    pthread_join(t, NULL);
  } else {
    pthread_join(t, NULL); /* it returns while the holder still commits */
    CHECK(status(h) == HTM_COMMITTING);
  }
  CHECK(flag_get(&req_done) == 1 && status(r) == HTM_ACTIVE);
  release_all();
}

static void test_commit_point(void) {
  commit_point("read after a committing write", 1, REQ_READ, 1);
  commit_point("write after a committing write", 1, REQ_WRITE, 1);
  commit_point("write after a committing read", 0, REQ_WRITE, 1);
  commit_point("read after a committing read", 0, REQ_READ, 0);
}

static void test_plain_store(void) {
  htm_thread *a = stand_in[0], *b = stand_in[1];
  word = 0;
  set_status(a, HTM_ACTIVE);
  set_status(b, HTM_ACTIVE);
  htm_line_acquire(a, line_of(&word), false);
  htm_line_acquire(b, line_of(&word), false);
  htm_plain_store((uintptr_t)&word, 8, 7);
  CHECK(word == 7 && status(a) == doomed_conflict && status(b) == doomed_conflict);
  release_all();
  set_status(a, HTM_ACTIVE);
  htm_line_acquire(a, line_of(&word), true);
  set_status(a, HTM_COMMITTING);
  pthread_t t = start_request(REQ_PLAIN_STORE, NULL);
  CHECKF(flag_get(&req_done) == 0 && word == 7, "a plain store overtook a committing writer");
  htm_line_release(a, line_of(&word));
  pthread_join(t, NULL);
  CHECK(word == 42 && status(a) == HTM_COMMITTING);
  release_all();
}

static void test_fallback(void) {
  htm_thread *active = stand_in[0], *committing = stand_in[1], *late = stand_in[2];
  set_status(active, HTM_ACTIVE);
  set_status(committing, HTM_ACTIVE);
  htm_fallback_subscribe(active);
  htm_fallback_subscribe(committing);
  set_status(committing, HTM_COMMITTING);
  pthread_t t = start_request(REQ_FALLBACK, NULL);
  CHECKF(flag_get(&req_done) == 0, "the fallback did not wait for a committing attempt");
  CHECK(status(active) == doomed_conflict && status(committing) == HTM_COMMITTING);
  htm_fallback_unsubscribe(committing);
  pthread_join(t, NULL);
  CHECK(flag_get(&req_done) == 1);
  /* Held: a new subscriber waits until the release. */
  set_status(late, HTM_ACTIVE);
  t = start_request(REQ_SUBSCRIBE, late);
  CHECKF(flag_get(&req_done) == 0, "an attempt subscribed while the fallback was held");
  htm_fallback_release();
  pthread_join(t, NULL);
  CHECK(flag_get(&req_done) == 1 && status(late) == HTM_ACTIVE);
  htm_fallback_unsubscribe(late);
  htm_fallback_unsubscribe(active);
  for (int i = 0; i < 4; i++) set_status(stand_in[i], HTM_IDLE);
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("htm_protocol");
  if (!tm_test_is_htm_emul()) {
    fprintf(stderr, "htm_protocol: runs under tm=htm-emul only\n");
    return 2;
  }
  tm_thread_init(); /* the runtime, htm-emul's table and configuration */
  for (int i = 0; i < 4; i++) stand_in[i] = make(FIRST_SLOT + (unsigned)i);
  test_doom();
  test_requester_wins();
  test_commit_point();
  test_plain_store();
  test_fallback();
  return check_exit();
}
