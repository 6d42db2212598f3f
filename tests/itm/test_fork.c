/* fork while other threads run ABI blocks, serial and atomic, without pause: each child,
 * which has only the forking thread, runs an atomic block and a serial block and must
 * finish them (a thread that was inside a block at the fork does not exist there: the
 * child must not wait for it, nor find serial mode or a transaction's locks held). The
 * child reports by its exit status; an alarm ends a child that hangs. More threads than
 * cores, and many forks. */
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "itm_test.h"

enum { SERIAL_THREADS = 2, ATOMIC_THREADS = 3, FORKS = 40 };

static long counter;
static int stop;

static void unsafe_yield(void) { sched_yield(); }

static void *serial_worker(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    __transaction_relaxed {
      counter++;
      unsafe_yield(); /* serial mode, held across a yield */
    }
  }
  return NULL;
}

static void *atomic_worker(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    __transaction_atomic { counter++; }
  }
  return NULL;
}

static int child_blocks(void) {
  alarm(5);
  long before;
  __transaction_atomic {
    before = counter;
    counter++;
  }
  __transaction_relaxed {
    counter++;
    unsafe_yield();
  }
  long after;
  __transaction_atomic { after = counter; }
  return after == before + 2 && _ITM_inTransaction() == outside_transaction ? 0 : 3;
}

int main(void) {
  /* This thread's ABI state is made before the forks, so that a child allocates nothing to
   * run its blocks: in the sanitizer builds malloc is the sanitizer's, which a fork can
   * leave locked by a thread that was allocating. */
  __transaction_atomic { counter++; }
  pthread_t threads[SERIAL_THREADS + ATOMIC_THREADS];
  for (int i = 0; i < SERIAL_THREADS + ATOMIC_THREADS; i++)
    CHECK(pthread_create(&threads[i], NULL, i < SERIAL_THREADS ? serial_worker : atomic_worker,
                         NULL) == 0);
  int hung = 0, failed = 0;
  for (int i = 0; i < FORKS && hung + failed == 0; i++) {
    sched_yield();
    pid_t pid = fork();
    if (pid == 0) _exit(child_blocks());
    CHECK(pid > 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < SERIAL_THREADS + ATOMIC_THREADS; i++) pthread_join(threads[i], NULL);
  CHECKF(hung == 0 && failed == 0, "of %d children, %d hung and %d failed", FORKS, hung, failed);
  return check_exit();
}
