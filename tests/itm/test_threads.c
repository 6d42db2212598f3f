/* Conflicts through the ABI: eight threads (more than cores) move amounts between accounts
 * of every integer width and a double, in nested blocks, while auditors sum all accounts in
 * read-only blocks. Every audit sees the total unchanged (opacity of the runtime under the
 * barriers), and at the end the totals and the per-thread counters are exact. The program
 * runs under each STM design and the glock and htm-emul backends (itm_threads_*). */
#include <pthread.h>
#include <stdint.h>

#include "check.h"

enum { ACCOUNTS = 64, THREADS = 8, AUDITORS = 2 };
static uint8_t small[ACCOUNTS];
static uint16_t medium[ACCOUNTS];
static uint32_t large[ACCOUNTS];
static uint64_t huge[ACCOUNTS];
static double real[ACCOUNTS];
static long transfers, bad_audits;
static long done_workers;

#define INITIAL 100

__attribute__((transaction_safe)) static void move(unsigned from, unsigned to, unsigned amount) {
  __transaction_atomic { /* nested: its own level under closed nesting */
    small[from] -= amount;
    small[to] += amount;
    medium[from] -= amount;
    medium[to] += amount;
  }
  large[from] -= amount;
  large[to] += amount;
  huge[from] -= amount;
  huge[to] += amount;
  real[from] -= amount;
  real[to] += amount;
}

static void *worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  long ops = check_scaled(20000, 2000);
  for (long i = 0; i < ops; i++) {
    seed = seed * 1103515245u + 12345u;
    unsigned from = (seed >> 8) % ACCOUNTS, to = (seed >> 16) % ACCOUNTS, amount = seed % 3;
    __transaction_atomic {
      move(from, to, amount);
      transfers++;
    }
  }
  __transaction_atomic { done_workers++; }
  return NULL;
}

static void *auditor(void *arg) {
  (void)arg;
  for (;;) {
    unsigned long s = 0, m = 0, l = 0, h = 0;
    double r = 0;
    long done;
    __transaction_atomic {
      done = done_workers;
      for (unsigned i = 0; i < ACCOUNTS; i++) {
        s += small[i];
        m += medium[i];
        l += large[i];
        h += huge[i];
        r += real[i];
      }
    }
    unsigned long want = (unsigned long)ACCOUNTS * INITIAL;
    /* Accounts wrap below zero: each sum is exact modulo its accounts' width. */
    if (s % 256 != want % 256 || m % 65536 != want % 65536 || l % (1ul << 32) != want ||
        h != want || r != (double)want)
      __transaction_atomic { bad_audits++; }
    if (done == THREADS) return NULL;
  }
}

int main(void) {
  for (unsigned i = 0; i < ACCOUNTS; i++) {
    small[i] = medium[i] = INITIAL;
    large[i] = huge[i] = INITIAL;
    real[i] = INITIAL;
  }
  pthread_t w[THREADS], a[AUDITORS];
  for (uintptr_t i = 0; i < AUDITORS; i++) pthread_create(&a[i], NULL, auditor, NULL);
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&w[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < THREADS; i++) pthread_join(w[i], NULL);
  for (int i = 0; i < AUDITORS; i++) pthread_join(a[i], NULL);
  CHECKF(bad_audits == 0, "%ld audits saw money appear or vanish", bad_audits);
  CHECK(transfers == THREADS * check_scaled(20000, 2000));
  uint64_t total = 0;
  for (unsigned i = 0; i < ACCOUNTS; i++) total += huge[i];
  CHECK(total == (uint64_t)ACCOUNTS * INITIAL);
  return check_exit();
}
