/* rtm_or_skip PROGRAM [ARGS...]: runs PROGRAM where the TM configuration of the environment
 * (TXALLOC_TM=rtm, or tle with TXALLOC_TLE_HTM=rtm) can run, and otherwise exits with
 * status 77, which ctest reports as a skip (SKIP_RETURN_CODE). A child process runs one
 * atomic block first: where the CPU cannot run RTM the runtime refuses with status 2 and one
 * line on stderr saying why (test_rtm_choice.c checks that line), and this program says
 * that the test is skipped for that reason. Any other end of the child is a failure. */
#include "tm_test.h"

static uint64_t word;

static TM_TEST_TX void one_block(void) {
  TM_ATOMIC { tm_store(&word, tm_load(&word) + 1); }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rtm_or_skip PROGRAM [ARGS...]\n");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    one_block();
    _exit(word == 1 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    fprintf(stderr, "rtm_or_skip: SKIPPED %s: RTM cannot run here (the line above says why)\n",
            argv[1]);
    return 77;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "rtm_or_skip: the probe block failed (status 0x%x)\n", (unsigned)status);
    return 1;
  }
  execv(argv[1], argv + 1);
  perror("rtm_or_skip: execv");
  return 1;
}
