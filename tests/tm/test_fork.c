/* fork while other threads hold the runtime's thread lock. One thread reads the statistics
 * in a loop (tm_stats_get holds the threads lock while it walks the live threads), another
 * keeps creating threads that set up and exit (both take the lock), and
 * the main thread forks again and again. Each child, where only the forking thread exists,
 * must be able to use the runtime: run a block, read the statistics, leave the thread
 * (tm_thread_exit) and set it up again with another block. A child that finds the lock
 * held by a thread that does not exist in it hangs: its alarm turns that into a failure.
 * Every design and the glock backend. */
#include <sys/wait.h>

#include "tm_test.h"

static struct { _Alignas(64) uint64_t x; } m;

static int stop;

static TM_TEST_TX void increment(void) {
  TM_ATOMIC { tm_store(&m.x, tm_load(&m.x) + 1); }
}

static void *stats_reader(void *arg) {
  (void)arg;
  while (!flag_get(&stop)) {
    tm_stats s;
    tm_stats_get(&s);
  }
  return NULL;
}

/* Sets up and leaves, with no transaction: a transaction in flight at the fork would leave
 * its locks (or glock's global lock) held in the child, which no handler can undo; this
 * test is about the runtime's own mutexes. */
static void short_lived(int index, void *arg) {
  (void)index;
  (void)arg;
  tm_thread_init();
  tm_thread_exit();
}

static void *thread_churn(void *arg) {
  (void)arg;
  while (!flag_get(&stop)) tm_test_run_threads(2, short_lived, NULL);
  return NULL;
}

/* The child's work; its exit status says what failed (0: nothing). */
static int child(void) {
  alarm(5); /* it takes well under a second */
  uint64_t before = m.x;
  increment();
  tm_stats s;
  tm_stats_get(&s);
  tm_thread_exit();
  increment(); /* sets the thread up again */
  tm_stats_get(&s);
  if (m.x != before + 2) return 1;
  if (s.commits == 0) return 2;
  return 0;
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("fork");
  increment(); /* this thread and the runtime are set up before the other threads start */
  pthread_t reader, churn;
  if (pthread_create(&reader, NULL, stats_reader, NULL) != 0 ||
      pthread_create(&churn, NULL, thread_churn, NULL) != 0)
    return 2;
  const int forks = (int)(200 * check_scale()) + 10;
  int failed = 0;
  for (int i = 0; i < forks; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      CHECKF(0, "fork failed");
      break;
    }
    if (pid == 0) _exit(child());
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
      CHECKF(0, "waitpid failed");
      break;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "fork %d: child %s %d\n", i, WIFEXITED(status) ? "exited" : "killed by",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      if (++failed == 3) break; /* each hung child costs its alarm */
    }
  }
  flag_set(&stop, 1);
  pthread_join(reader, NULL);
  pthread_join(churn, NULL);
  CHECKF(failed == 0, "%d of %d children could not use the runtime", failed, forks);
  return check_exit();
}
