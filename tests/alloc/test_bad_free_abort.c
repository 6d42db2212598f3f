/* The default error action: a message on stderr naming the address and the problem, then
 * abort(). Checked in forked children, one per kind of bad free: the child's stderr goes
 * to a pipe that the parent reads; the child must die of SIGABRT (not exit, not SIGSEGV)
 * and the message must be the allocator's ("txalloc" prefix, the address, the words).
 *
 * Cases: double free of a small object (private list), double free by another thread
 * (public list), free of a stack address, free of an interior pointer, realloc of a
 * foreign pointer, double free of a large object; and a correct program in a child, which
 * must exit 0 with nothing on stderr (the default handler does not fire by mistake). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static char child_stderr[4096];

/* Runs `body(&addr)` in a child with stderr captured; returns the wait status. `addr`
 * receives the pointer the child expects in the message (written through a pipe). */
static int in_child(void (*body)(void), const char *what) {
  int err_pipe[2];
  if (pipe(err_pipe) != 0) exit(2);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30);
    close(err_pipe[0]);
    dup2(err_pipe[1], 2);
    body();
    _exit(0);
  }
  close(err_pipe[1]);
  size_t len = 0;
  ssize_t n;
  while ((n = read(err_pipe[0], child_stderr + len, sizeof child_stderr - 1 - len)) > 0)
    len += (size_t)n;
  child_stderr[len] = 0;
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  fprintf(stderr, "[%s] child stderr: %s%s", what, child_stderr,
          len && child_stderr[len - 1] == '\n' ? "" : "\n");
  return status;
}

static char expected_addr[32];

static void set_expected(const void *p) { snprintf(expected_addr, sizeof expected_addr, "%p", p); }

static void expect_abort(void (*body)(void), const char *what, const char *word) {
  int status = in_child(body, what);
  CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "%s: child status %#x, want SIGABRT",
         what, status);
  CHECKF(strstr(child_stderr, "txalloc") != NULL, "%s: no txalloc message", what);
  CHECKF(strstr(child_stderr, word) != NULL, "%s: message does not say '%s'", what, word);
  CHECKF(expected_addr[0] && strstr(child_stderr, expected_addr) != NULL,
         "%s: message does not name %s", what, expected_addr);
}

/* The pointer the child will misuse is made in the parent before fork, so the parent
 * knows the address the message must name. */
static void *victim;

static void body_double_free(void) {
  txalloc_free(victim);
  txalloc_free(victim);
}
#ifndef __SANITIZE_THREAD__ /* TSan: no threads in a child of a process that had threads */
static void *free_twice(void *p) {
  txalloc_free(p);
  txalloc_free(p);
  return NULL;
}

static void body_remote_double_free(void) {
  pthread_t t;
  pthread_create(&t, NULL, free_twice, victim);
  pthread_join(t, NULL);
}
#endif
static void body_free(void) { txalloc_free(victim); }
static void body_realloc(void) { (void)txalloc_realloc(victim, 100); }
static void body_correct(void) {
  void *p = txalloc_malloc(100);
  void *q = txalloc_realloc(p, 100000);
  txalloc_free(q);
  txalloc_free(txalloc_calloc(10, 10));
}

static int global_variable;

int main(void) {
  void *keep = txalloc_malloc(64); /* keeps the 64-byte block in use */
  victim = txalloc_malloc(64);
  set_expected(victim);
  expect_abort(body_double_free, "double free (private list)", "double free");

#ifndef __SANITIZE_THREAD__ /* TSan: no threads in a child of a process that had threads */
  set_expected(victim);
  expect_abort(body_remote_double_free, "double free (public list)", "double free");
#endif

  victim = &global_variable;
  set_expected(victim);
  expect_abort(body_free, "free of a global", "invalid");

  char *obj = txalloc_malloc(256);
  victim = obj + 32;
  set_expected(victim);
  expect_abort(body_free, "interior free", "interior");

  victim = &global_variable;
  set_expected(victim);
  expect_abort(body_realloc, "realloc of a foreign pointer", "invalid");

  victim = txalloc_malloc((size_t)4 << 20);
  set_expected(victim);
  expect_abort(body_double_free, "large double free", "free");

  int status = in_child(body_correct, "correct program");
  CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "correct child: status %#x", status);
  CHECKF(child_stderr[0] == 0, "correct child wrote to stderr: %s", child_stderr);

  txalloc_free(obj);
  txalloc_free(keep);
  txalloc_free(victim);
  return check_exit();
}
