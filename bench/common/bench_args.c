/* bench_args.h: the table-driven command line of every bench program. */
#define _GNU_SOURCE
#include "bench_args.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *program_name = "bench";

void bench_set_program(const char *argv0) {
  const char *base = strrchr(argv0, '/');
  program_name = base ? base + 1 : argv0;
}

const char *bench_program(void) { return program_name; }

/* Ends the program before it did anything: no exit handlers, which could read (and warn
 * about) the very options that were refused. */
static _Noreturn void refuse(void) {
  fflush(stdout);
  _exit(2);
}

void bench_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", program_name);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see --help)\n");
  va_end(ap);
  refuse();
}

long bench_parse_long(const char *flag, const char *text, long min, long max) {
  errno = 0;
  char *end;
  long v = strtol(text, &end, 0);
  if (end == text || *end || errno || v < min || v > max)
    bench_usage_error("%s: '%s' is not an integer in [%ld, %ld]", flag, text, min, max);
  return v;
}

double bench_parse_double(const char *flag, const char *text, double min, double max) {
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || *end || errno || !(v >= min && v <= max))
    bench_usage_error("%s: '%s' is not a number in [%g, %g]", flag, text, min, max);
  return v;
}

bool bench_parse_bool(const char *flag, const char *text) {
  static const char *const truths[] = {"1", "true", "yes", "on"};
  static const char *const lies[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof truths / sizeof truths[0]; i++) {
    if (strcasecmp(text, truths[i]) == 0) return true;
    if (strcasecmp(text, lies[i]) == 0) return false;
  }
  bench_usage_error("%s: '%s' is not a boolean (use 0 or 1)", flag, text);
}

int bench_parse_choice(const char *flag, const char *text, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (strcmp(text, names[i]) == 0) return i;
  char list[512] = "";
  for (int i = 0; i < count; i++) {
    strncat(list, i ? "|" : "", sizeof list - strlen(list) - 1);
    strncat(list, names[i], sizeof list - strlen(list) - 1);
  }
  bench_usage_error("%s: '%s' is not one of %s", flag, text, list);
}

/* ---- --help ---- */

static void print_default(FILE *out, const bench_arg *a) {
  switch (a->type) {
  case BENCH_ARG_LONG:
    fprintf(out, "[%ld..%ld; default %ld]", a->min, a->max, *(const long *)a->value);
    break;
  case BENCH_ARG_DOUBLE:
    fprintf(out, "[%g..%g; default %g]", a->min_d, a->max_d, *(const double *)a->value);
    break;
  case BENCH_ARG_BOOL: fprintf(out, "[0|1; default %d]", *(const bool *)a->value ? 1 : 0); break;
  case BENCH_ARG_CHOICE:
    fputc('[', out);
    for (int i = 0; i < a->choice_count; i++) fprintf(out, "%s%s", i ? "|" : "", a->choices[i]);
    fprintf(out, "; default %s]", a->choices[*(const int *)a->value]);
    break;
  }
}

static void print_usage(const bench_cli *cli) {
  printf("usage: %s [options]\n\n%s\n\noptions:\n", program_name, cli->summary);
  for (int i = 0; i < cli->count; i++) {
    const bench_arg *a = &cli->args[i];
    char left[64];
    snprintf(left, sizeof left, "--%s%s", a->name, a->type == BENCH_ARG_BOOL ? "" : "=V");
    printf("  %-22s %s ", left, a->help);
    print_default(stdout, a);
    putchar('\n');
  }
  printf("  %-22s %s\n", "--help", "this text");
  if (cli->help_tail) cli->help_tail(stdout);
}

/* ---- Parsing ---- */

/* Compares a flag name as given with a table name, '-' and '_' alike. */
static bool same_name(const char *given, size_t len, const char *name) {
  size_t i = 0;
  for (; i < len && name[i]; i++) {
    char x = given[i] == '_' ? '-' : given[i], y = name[i] == '_' ? '-' : name[i];
    if (x != y) return false;
  }
  return i == len && name[i] == '\0';
}

static void store(const bench_arg *a, const char *flag, const char *text) {
  switch (a->type) {
  case BENCH_ARG_LONG: *(long *)a->value = bench_parse_long(flag, text, a->min, a->max); break;
  case BENCH_ARG_DOUBLE:
    *(double *)a->value = bench_parse_double(flag, text, a->min_d, a->max_d);
    break;
  case BENCH_ARG_BOOL: *(bool *)a->value = bench_parse_bool(flag, text); break;
  case BENCH_ARG_CHOICE:
    *(int *)a->value = bench_parse_choice(flag, text, a->choices, a->choice_count);
    break;
  }
}

static void check_environment(const bench_cli *cli) {
  int (*check)(char *, size_t) = cli->check_env;
  if (!check) check = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "txalloc_options_check_env");
  if (!check) return; /* no txalloc in this process: its variables change nothing */
  char err[512];
  if (check(err, sizeof err) == 0) return;
  fprintf(stderr, "%s: refusing to run: %s\n", program_name, err);
  refuse();
}

void bench_parse_args(const bench_cli *cli, int argc, char **argv) {
  bench_set_program(argv[0]);
  check_environment(cli);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_usage(cli);
      exit(0);
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
      bench_usage_error("unexpected argument '%s'", arg);
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    char flag[128];
    if (len + 3 > sizeof flag) bench_usage_error("option name too long: '%s'", arg);
    snprintf(flag, sizeof flag, "--%.*s", (int)len, name);

    const bench_arg *own = NULL;
    for (int k = 0; k < cli->count && !own; k++)
      if (same_name(name, len, cli->args[k].name)) own = &cli->args[k];
    bool is_bool = false;
    if (!own && !(cli->flags && cli->flags->find(flag + 2, &is_bool)))
      bench_usage_error("unknown option '%s'", flag);
    if (own) is_bool = own->type == BENCH_ARG_BOOL;

    const char *value;
    if (eq)
      value = eq + 1;
    else if (is_bool && i + 1 < argc &&
             (strcmp(argv[i + 1], "0") == 0 || strcmp(argv[i + 1], "1") == 0))
      value = argv[++i]; /* no program takes a plain word, so this one can only be the value */
    else if (is_bool)
      value = "1"; /* never the next flag */
    else if (i + 1 < argc)
      value = argv[++i];
    else
      bench_usage_error("option '%s' needs a value", flag);

    if (own) {
      store(own, flag, value);
    } else {
      char err[512];
      if (cli->flags->set(flag + 2, value, err, sizeof err) != 0)
        bench_usage_error("%s: %s", flag, err);
    }
  }
}
