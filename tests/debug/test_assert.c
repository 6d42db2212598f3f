/* Debug assertions (src/util/debug_assert.h) are on exactly when the build says so
 * (TXALLOC_DEBUG: the sanitizer builds by default), and off means compiled out.
 *
 * 1. The macro: with TXALLOC_DEBUG its condition is evaluated once; without, never.
 * 2. The library: a child process breaks a block invariant on purpose (the `used` count of
 *    its object's block set to 0) and frees the object. With TXALLOC_DEBUG the owner's
 *    free asserts `used > 0`: the child must die of SIGABRT after printing the failed
 *    condition with its file and line. Without, the check is not compiled in: the child
 *    must exit normally and print nothing. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc/internal.h"
#include "check.h"
#include "txalloc/txalloc.h"
#include "util/debug_assert.h"

static int evaluations;
static bool counted(void) {
  evaluations++;
  return true;
}

/* Runs the corrupted free in a child; returns its wait status, its stderr in out. */
static int corrupted_free(char *out, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    void *p = txalloc_malloc(32);
    txa_block_of((uintptr_t)p, TXA_KIND_SMALL)->used = 0;
    txalloc_free(p);
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < len && (r = read(fds[0], out + n, len - 1 - n)) > 0) n += (size_t)r;
  out[n] = '\0';
  close(fds[0]);
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

int main(void) {
  TXALLOC_ASSERT(counted());
  CHECKF(evaluations == (TXALLOC_DEBUG ? 1 : 0), "TXALLOC_DEBUG=%d: condition evaluated %d times",
         TXALLOC_DEBUG, evaluations);

  char out[4096];
  int status = corrupted_free(out, sizeof out);
  if (TXALLOC_DEBUG) {
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
           "the child should abort on the broken count (status %#x)", status);
    CHECKF(strstr(out, "txalloc: assertion failed: ") != NULL, "message: %s", out);
    CHECKF(strstr(out, "alloc_direct.h:") != NULL && strstr(out, "txa_used(b) > 0") != NULL,
           "the message should name the file and the condition: %s", out);
  } else {
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "without TXALLOC_DEBUG the check is compiled out (status %#x)", status);
    CHECKF(strstr(out, "assertion") == NULL, "unexpected message: %s", out);
  }
  return check_exit();
}
