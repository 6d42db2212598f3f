/* The bank invariant under heavy oversubscription: 16 threads on a 2-core machine. Twelve
 * threads transfer random amounts between random accounts (some accounts share a stripe,
 * some are far apart); four threads sum all accounts in read-only transactions and must
 * always find the initial total, inside the transaction. At the end the total and the
 * number of committed transfers are exact. Runs on every design and on tm=lock. */
#include "tm_test.h"

#define THREADS 16
#define AUDITORS 4
#define ACCOUNTS 64
#define INITIAL 1000

/* Accounts 0..31 are packed (4 per 32-byte stripe), 32..63 one per 128 bytes. */
static struct {
  int64_t packed[32];
  _Alignas(128) struct {
    int64_t balance;
    char pad[120];
  } spread[32];
} bank;

static int64_t *account(int i) { return i < 32 ? &bank.packed[i] : &bank.spread[i - 32].balance; }

static long transfers;
static int transfers_done, bad_totals, audits;
static int64_t transferred[THREADS];

/* One transaction per function: a restart jumps back into this frame, so the caller's
 * loop variables are never live across the jump (-Wclobbered). */
static TM_TEST_TX void transfer(int from, int to, int64_t amount, int yield_inside) {
  TM_ATOMIC {
    int64_t *a = account(from), *b = account(to);
    tm_store(a, tm_load(a) - amount);
    if (yield_inside) sched_yield(); /* the money is in flight: auditors must not see it */
    tm_store(b, tm_load(b) + amount);
  }
}

static void transfer_thread(int index) {
  uint64_t rng = (uint64_t)index * 0x9E3779B97F4A7C15ull + 3;
  for (long i = 0; i < transfers; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int from = (int)((rng >> 20) % ACCOUNTS), to = (int)((rng >> 40) % ACCOUNTS);
    transfer(from, to, (int64_t)((rng >> 56) % 50) + 1, (rng & 31) == 0);
    if ((i & 63) == 0) sched_yield(); /* let the auditors run alongside */
  }
  transferred[index] = transfers;
}

static TM_TEST_TX void audit(void) {
  TM_ATOMIC_RO {
    int64_t total = 0;
    for (int i = 0; i < ACCOUNTS; i++) total += tm_load(account(i));
    if (total != (int64_t)ACCOUNTS * INITIAL) flag_add(&bad_totals, 1);
  }
}

static void audit_thread(void) {
  long n = 0;
  while (!flag_get(&transfers_done) || n < 20) {
    audit();
    n++;
    if ((n & 7) == 0) sched_yield();
  }
  flag_add(&audits, (int)n);
}

static int transferers_left = THREADS - AUDITORS;
static void worker(int index, void *arg) {
  (void)arg;
  if (index < THREADS - AUDITORS) {
    transfer_thread(index);
    if (flag_add(&transferers_left, -1) == 0) flag_set(&transfers_done, 1);
  } else {
    audit_thread();
  }
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("bank");
  transfers = check_scaled(30000, 3000);
  for (int i = 0; i < ACCOUNTS; i++) *account(i) = INITIAL;
  tm_stats_reset();
  tm_test_run_threads(THREADS, worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("bank", &s);
  int64_t total = 0;
  for (int i = 0; i < ACCOUNTS; i++) total += *account(i);
  CHECKF(total == (int64_t)ACCOUNTS * INITIAL, "final total %lld", (long long)total);
  CHECKF(bad_totals == 0, "%d audits saw a wrong total", bad_totals);
  uint64_t expected = (uint64_t)(THREADS - AUDITORS) * (uint64_t)transfers + (uint64_t)audits;
  CHECKF(s.commits == expected, "commits %llu, expected %llu", (unsigned long long)s.commits,
         (unsigned long long)expected);
  CHECK(s.commits_read_only <= (uint64_t)audits);
  if (!tm_test_is_glock()) CHECK(s.commits_read_only == (uint64_t)audits);
  if (tm_test_is_glock()) CHECK(s.aborts == 0);
  for (int t = 0; t < THREADS - AUDITORS; t++) CHECK(transferred[t] == transfers);
  return check_exit();
}
