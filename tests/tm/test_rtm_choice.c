/* Choosing Intel RTM (TXALLOC_TM=rtm, or tle with TXALLOC_TLE_HTM=rtm or auto) on any CPU:
 * a child process runs one atomic block under the configuration of the test's environment
 * and prints the configuration in force; the parent checks how it ended against what this
 * CPU offers, read here from CPUID (CPUID.(EAX=7,ECX=0):EBX[11] RTM, EDX[11]
 * RTM_ALWAYS_ABORT).
 *   - RTM asked for where CPUID has none: the child exits with status 2 (not a signal: no
 *     SIGILL, no abort), its stderr is one line that names the choice, the reason and the
 *     choice to make instead, and the block never ran;
 *   - RTM asked for where CPUID has it: the block commits on rtm, or the child is refused as
 *     above with the probe's reason (RTM present but unusable);
 *   - tle with tle_htm=auto: the block commits everywhere, over htm-emul where CPUID has no
 *     RTM. */
#include <fcntl.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "tm_test.h"

static bool cpuid_has_rtm(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 11)) && !(d & (1u << 11));
#else
  return false;
#endif
}

static uint64_t counter;

static TM_TEST_TX void one_block(void) {
  TM_ATOMIC { tm_store(&counter, tm_load(&counter) + 1); }
}

static _Noreturn void child(void) {
  one_block();
  tm_config_print_json(stdout);
  fflush(stdout);
  _exit(counter == 1 ? 0 : 1);
}

/* Reads the descriptor to its end into buf (NUL-terminated, cut at len - 1). */
static void read_all(int fd, char *buf, size_t len) {
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, len - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
    if (n == len - 1) break;
  }
  buf[n] = '\0';
  close(fd);
}

static size_t count_char(const char *s, char c) {
  size_t n = 0;
  for (; *s; s++) n += *s == c;
  return n;
}

int main(void) {
  tm_test_watchdog(60);
  bool tle = tm_test_option_is("tm", "tle");
  bool wants_rtm = tm_test_option_is("tm", "rtm") || (tle && tm_test_option_is("tle_htm", "rtm"));
  bool auto_htm = tle && tm_test_option_is("tle_htm", "auto");
  CHECKF(wants_rtm || auto_htm, "run it with TXALLOC_TM=rtm or TXALLOC_TM=tle");
  const char *choice = tle ? "TXALLOC_TLE_HTM=rtm" : "TXALLOC_TM=rtm";
  const char *instead = tle ? "TXALLOC_TLE_HTM=emul" : "TXALLOC_TM=htm-emul";
  bool has_rtm = cpuid_has_rtm();
  fprintf(stderr, "CPUID: %s\n", has_rtm ? "RTM" : "no RTM");

  int out[2], err[2];
  CHECK(pipe(out) == 0 && pipe(err) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    child();
  }
  close(out[1]);
  close(err[1]);
  char outbuf[4096], errbuf[4096];
  read_all(out[0], outbuf, sizeof outbuf);
  read_all(err[0], errbuf, sizeof errbuf);
  int status = 0;
  waitpid(pid, &status, 0);
  fprintf(stderr, "child stdout: %s\nchild stderr: %s", outbuf, errbuf[0] ? errbuf : "(none)\n");

  CHECKF(WIFEXITED(status), "the child was killed by signal %d", WTERMSIG(status));
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (wants_rtm && code == 2) {
    char head[64];
    snprintf(head, sizeof head, "txalloc: %s: ", choice);
    CHECKF(strncmp(errbuf, head, strlen(head)) == 0, "the line does not begin with '%s'", head);
    CHECKF(count_char(errbuf, '\n') == 1 && errbuf[strlen(errbuf) - 1] == '\n',
           "not exactly one line");
    CHECKF(strstr(errbuf, instead) != NULL, "the line does not name %s", instead);
    CHECKF(strstr(errbuf, has_rtm ? "has RTM but" : "has no RTM") != NULL,
           "the reason does not match CPUID");
    CHECKF(outbuf[0] == '\0', "the refused child ran its block");
  } else {
    CHECKF(code == 0, "the child exited %d", code);
    CHECKF(!wants_rtm || has_rtm, "rtm ran on a CPU without RTM");
    const char *htm = tle ? (wants_rtm ? "\"tle_htm\": \"rtm\"" : NULL) : "\"backend\": \"rtm\"";
    if (auto_htm && !has_rtm) htm = "\"tle_htm\": \"emul\"";
    if (htm) CHECKF(strstr(outbuf, htm) != NULL, "the configuration lacks %s", htm);
    CHECKF(errbuf[0] == '\0', "the child printed on stderr");
  }
  return check_exit();
}
