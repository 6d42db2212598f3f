/* No memory system call after start-up in thrifty mode (TXALLOC_TXMEM=thrifty, a first pool
 * of 512 bytes so that refills and alloc_refill aborts happen all along).
 *
 * The workload: threads (more than cores) push nodes of random sizes onto a shared
 * transactional stack and pop and free them, conflicting on its head, with plain
 * allocations between; a transaction sometimes allocates several nodes and aborts itself.
 * Start-up is the first run of it, which maps the heap and grows every log to its size.
 *   observer  a second run with the OS layer's observer counting its calls: none.
 *   seccomp   in a child, a filter that kills the process on mmap, munmap, madvise, brk,
 *             mremap or mprotect, installed on every thread after the first run; the
 *             second run must end with the child's exit status 0. Not in sanitizer builds,
 *             whose runtimes map memory themselves. The C library's allocator (txmem's
 *             logs) is told to keep its top padded and untrimmed, in one arena, so that a
 *             log that grows a little further does not need the kernel either. */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../tm/tm_test.h"
#include "os/os_mem.h"
#include "txalloc/thrifty.h"
#include "txalloc/txmem.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

enum { THREADS = 4, OPS = 3000 };

typedef struct node {
  struct node *next;
  size_t size;
} node;

static node *top;
static pthread_barrier_t start, done;
static volatile int rounds_left;

static TM_TEST_TX void push(size_t size, int many) {
  TM_ATOMIC {
    for (int i = 0; i < many; i++) {
      node *n = tm_malloc(size);
      n->size = size;
      tm_store_ptr((void **)&n->next, tm_load_ptr((void **)&top));
      tm_store_ptr((void **)&top, n);
    }
  }
}

/* Returns whether it found a node. */
static TM_TEST_TX bool pop(void) {
  volatile bool found = false;
  TM_ATOMIC {
    node *n = tm_load_ptr((void **)&top);
    found = n != NULL;
    if (n) {
      tm_store_ptr((void **)&top, tm_load_ptr((void **)&n->next));
      tm_free(n);
    }
  }
  return found;
}

static TM_TEST_TX void cancelled(size_t size) {
  TM_ATOMIC {
    void *p = tm_malloc(size);
    (void)p;
    tm_abort();
  }
}

static void run_ops(unsigned seed) {
  for (int i = 0; i < OPS; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t size = sizeof(node) + (seed >> 8) % 400;
    switch ((seed >> 20) % 4) {
    case 0: push(size, 1 + (int)((seed >> 4) % 3)); break;
    case 1: pop(); break;
    case 2: cancelled(size); break;
    default: txmem_free(txmem_malloc(size)); break;
    }
  }
  while (pop()) {
  }
}

/* Each thread runs the workload once per round, between two barriers; it never exits
 * (a thread's exit gives its stack back to the kernel). */
static void *worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&start);
    run_ops(seed++);
    pthread_barrier_wait(&done);
  }
  return NULL;
}

static void round_run(void) {
  pthread_barrier_wait(&start);
  run_ops(99);
  pthread_barrier_wait(&done);
}

static void start_workers(void) {
  pthread_barrier_init(&start, NULL, THREADS + 1);
  pthread_barrier_init(&done, NULL, THREADS + 1);
  for (int i = 0; i < THREADS; i++) {
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)(uintptr_t)(i + 1));
    pthread_detach(t);
  }
}

static _Atomic int os_calls;
static void count_call(const char *call) {
  (void)call;
  atomic_fetch_add(&os_calls, 1);
}

static int install_filter(void) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 6, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_munmap, 5, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_brk, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mremap, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

static void test_seccomp(void) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(120);
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, -1);
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    start_workers();
    round_run();
    round_run();
    if (install_filter() != 0) _exit(77);
    round_run();
    round_run();
    _exit(0); /* the workers too, without an exit of their own */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    fprintf(stderr, "seccomp: the kernel refused the filter; not checked\n");
    return;
  }
  CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s %d (SIGSYS = %d)",
         WIFSIGNALED(status) ? "was killed by signal" : "exited",
         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), SIGSYS);
}

static void test_observer(void) {
  start_workers();
  round_run();
  tm_stats t0;
  tm_stats_get(&t0);
  thrifty_stats s0;
  thrifty_stats_get(&s0);
  txa_os_set_observer(count_call);
  round_run();
  round_run();
  txa_os_set_observer(NULL);
  tm_stats t1;
  tm_stats_get(&t1);
  thrifty_stats s1;
  thrifty_stats_get(&s1);
  CHECKF(atomic_load(&os_calls) == 0, "%d memory system calls", atomic_load(&os_calls));
  /* The runs did refill, inside transactions too: the claim is not vacuous. */
  CHECK(s1.refills > s0.refills);
  CHECK(t1.aborts_by_cause[TM_ABORT_ALLOC_REFILL] > t0.aborts_by_cause[TM_ABORT_ALLOC_REFILL]);
  fprintf(stderr, "observed: refills %llu, alloc_refill aborts %llu, os calls %d\n",
          (unsigned long long)(s1.refills - s0.refills),
          (unsigned long long)(t1.aborts_by_cause[TM_ABORT_ALLOC_REFILL] -
                               t0.aborts_by_cause[TM_ABORT_ALLOC_REFILL]),
          atomic_load(&os_calls));
}

int main(void) {
  tm_test_watchdog(240);
  CHECK(txmem_get_strategy() == TXMEM_THRIFTY);
  /* The child first: it forks before this process has any thread. */
  if (!UNDER_SANITIZER) test_seccomp();
  test_observer();
  return check_exit();
}
