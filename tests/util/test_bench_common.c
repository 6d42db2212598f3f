/* bench_common: the JSON writer's nesting, commas and escaping (parsed back with a
 * strict comparison against the expected text), the argument parsers' accepted ranges,
 * the table-driven command line (both value spellings, boolean flags that take no value, a
 * further flag set, and exit 2 with one message for what it refuses),
 * the RNG's determinism per (seed, stream), and that peak RSS (VmHWM) sees memory the
 * process touched. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "check.h"

/* ---- The command line ---- */

static long n_arg = 3;
static double d_arg = 1.0;
static bool b_arg = false;
static int c_arg = 0;
static const char *const c_names[] = {"list", "hash"};
static const bench_arg args[] = {
    BENCH_LONG("n-items", &n_arg, 0, 100, "a number"),
    BENCH_DOUBLE("duration", &d_arg, 0.001, 10, "seconds"),
    BENCH_BOOL("flag", &b_arg, "a boolean"),
    BENCH_CHOICE("kind", &c_arg, c_names, 2, "a choice"),
};

/* A further flag set of one boolean ("extra") and one valued flag ("level"). */
static int extra_seen = -1;
static long level_seen = -1;
static bool set_find(const char *name, bool *is_bool) {
  *is_bool = strcmp(name, "extra") == 0;
  return *is_bool || strcmp(name, "level") == 0;
}
static int set_set(const char *name, const char *value, char *err, size_t len) {
  if (strcmp(name, "extra") == 0) {
    extra_seen = atoi(value);
    return 0;
  }
  if (strcmp(value, "bad") == 0) return snprintf(err, len, "bad level"), -1;
  level_seen = atol(value);
  return 0;
}
static const bench_flag_set flag_set = {set_find, set_set};

static int no_env_problem(char *err, size_t len) {
  (void)err;
  (void)len;
  return 0;
}
static int env_problem(char *err, size_t len) {
  snprintf(err, len, "TXALLOC_X=1: wrong");
  return 1;
}

static void parse(int (*check_env)(char *, size_t), char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  const bench_cli cli = {
      .summary = "test", .args = args, .count = 4, .flags = &flag_set, .check_env = check_env};
  bench_parse_args(&cli, argc, argv);
}

/* Runs parse in a child; returns its exit status and its stderr in out. */
static int parse_in_child(int (*check_env)(char *, size_t), char **argv, char *out, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    parse(check_env, argv);
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t n;
  while (got + 1 < len && (n = read(fds[0], out + got, len - 1 - got)) > 0) got += (size_t)n;
  out[got] = 0;
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_command_line(void) {
  char *ok[] = {"prog", "--flag",  "--duration", "0.5", "--n_items=7", "--kind",
                "hash", "--extra", "--level",    "4",   NULL};
  parse(no_env_problem, ok);
  CHECK(b_arg && d_arg == 0.5 && n_arg == 7 && c_arg == 1);
  CHECK(extra_seen == 1 && level_seen == 4);
  char *explicit_bool[] = {"prog", "--flag=0", "--extra=0", "--n-items", "9", NULL};
  parse(no_env_problem, explicit_bool);
  CHECK(!b_arg && extra_seen == 0 && n_arg == 9);
  char *separate_bool[] = {"prog", "--flag", "1", "--extra", "0", "--kind", "list", NULL};
  parse(no_env_problem, separate_bool);
  CHECK(b_arg && extra_seen == 0 && c_arg == 0);

  static const struct {
    const char *args[4];
    const char *says;
  } refused[] = {
      {{"--bogus-flag"}, "prog: unknown option '--bogus-flag' (see --help)\n"},
      {{"--flag", "yes"}, "prog: unexpected argument 'yes' (see --help)\n"},
      {{"--flag=2"}, "prog: --flag: '2' is not a boolean (use 0 or 1) (see --help)\n"},
      {{"--n-items"}, "prog: option '--n-items' needs a value (see --help)\n"},
      {{"--n-items", "101"}, "prog: --n-items: '101' is not an integer in [0, 100] (see --help)\n"},
      {{"--kind=tree"}, "prog: --kind: 'tree' is not one of list|hash (see --help)\n"},
      {{"--level=bad"}, "prog: --level: bad level (see --help)\n"},
  };
  char out[1024];
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    char *argv[6] = {"prog"};
    for (int k = 0; k < 4 && refused[i].args[k]; k++) argv[k + 1] = (char *)refused[i].args[k];
    int status = parse_in_child(no_env_problem, argv, out, sizeof out);
    CHECKF(status == 2 && strcmp(out, refused[i].says) == 0, "%s: status %d, said %s",
           refused[i].args[0], status, out);
  }
  char *plain[] = {"prog", NULL};
  int status = parse_in_child(env_problem, plain, out, sizeof out);
  CHECKF(status == 2 && strcmp(out, "prog: refusing to run: TXALLOC_X=1: wrong\n") == 0,
         "status %d, said %s", status, out);
}

int main(void) {
  test_command_line();
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  bench_json j;
  bench_json_begin(&j, mem);
  bench_json_str(&j, "workload", "t\"e\\s\nt");
  bench_json_object(&j, "params");
  bench_json_int(&j, "n", -3);
  bench_json_uint(&j, "u", 18446744073709551615ULL);
  bench_json_end(&j);
  bench_json_array(&j, "hist");
  bench_json_int(&j, NULL, 1);
  bench_json_object(&j, NULL);
  bench_json_bool(&j, "ok", true);
  bench_json_end(&j);
  bench_json_end(&j);
  bench_json_double(&j, "x", 0.5);
  bench_json_double(&j, "inf", 1.0 / 0.0);
  bench_json_finish(&j);
  fclose(mem);
  const char *expected = "{\"workload\":\"t\\\"e\\\\s\\nt\",\"params\":{\"n\":-3,"
                         "\"u\":18446744073709551615},\"hist\":[1,{\"ok\":true}],"
                         "\"x\":0.5,\"inf\":null}\n";
  CHECKF(strcmp(text, expected) == 0, "got %s", text);
  free(text);

  /* Without LD_PRELOAD the process's malloc is glibc's, or the sanitizer's own in the
   * sanitizer builds. */
  const char *name = bench_allocator_name();
  CHECKF(getenv("LD_PRELOAD") != NULL || strcmp(name, "glibc") == 0 || strcmp(name, "tsan") == 0 ||
             strcmp(name, "asan") == 0,
         "allocator %s", name);

  bench_rng a, b, c;
  bench_rng_seed(&a, 42, 0);
  bench_rng_seed(&b, 42, 0);
  bench_rng_seed(&c, 42, 1);
  int same = 1, differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = bench_rng_next(&a), y = bench_rng_next(&b), z = bench_rng_next(&c);
    same &= x == y;
    differ |= x != z;
  }
  CHECK(same);
  CHECK(differ);
  for (int i = 0; i < 10000; i++) CHECK(bench_rng_below(&a, 7) < 7);
  CHECK(bench_parse_long("--n", "0x10", 0, 100) == 16);
  CHECK(bench_parse_double("--d", "2.5", 0, 3) == 2.5);
  static const char *const names[] = {"list", "hash"};
  CHECK(bench_parse_choice("--s", "hash", names, 2) == 1);

  /* Peak RSS grows by what we touch: 48 MiB written page by page. */
  long before = bench_peak_rss_kib();
  CHECK(before > 0);
  size_t big = 48u << 20;
  volatile char *p = malloc(big);
  CHECK(p != NULL);
  for (size_t off = 0; p && off < big; off += 4096) p[off] = 1;
  long after = bench_peak_rss_kib();
  CHECKF(after >= before && after >= (long)(big >> 10), "before %ld after %ld KiB", before, after);
  free((void *)p);
  return check_exit();
}
