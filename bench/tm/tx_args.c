/* tx_args.h: long options. */
#include "tx_args.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_backend.h"

void tx_args_begin(tx_args *a, int argc, char **argv, void (*usage)(FILE *out)) {
  a->argc = argc;
  a->argv = argv;
  a->next = 1;
  a->name = NULL;
  a->value = NULL;
  a->usage = usage;
}

static void help(const tx_args *a) {
  a->usage(stdout);
  exit(0);
}

bool tx_args_next(tx_args *a) {
  if (a->next >= a->argc) return false;
  const char *arg = a->argv[a->next++];
  if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) help(a);
  if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
    bench_usage_error("unexpected argument '%s'", arg);
  const char *name = arg + 2;
  const char *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  if (len >= sizeof a->name_buf) bench_usage_error("option name too long: '%s'", arg);
  memcpy(a->name_buf, name, len);
  a->name_buf[len] = '\0';
  a->name = a->name_buf;
  if (tx_args_is(a, "help")) help(a); /* --help=... */
  if (eq) {
    a->value = eq + 1;
  } else {
    if (a->next >= a->argc) bench_usage_error("--%s needs a value", a->name);
    a->value = a->argv[a->next++];
  }
  return true;
}

bool tx_args_is(const tx_args *a, const char *name) {
  const char *p = a->name, *q = name;
  for (; *p && *q; p++, q++) {
    char x = *p == '_' ? '-' : *p, y = *q == '_' ? '-' : *q;
    if (x != y) return false;
  }
  return *p == *q;
}

void tx_args_common(const tx_args *a, long *threads, double *duration, unsigned long long *seed) {
  if (tx_args_is(a, "threads")) {
    *threads = bench_parse_long("--threads", a->value, 1, 1024);
#ifdef TX_SINGLE_THREAD
    if (*threads != 1)
      bench_usage_error("--threads %ld: this build runs no TM (its blocks are plain code), "
                        "so one thread only",
                        *threads);
#endif
  } else if (duration && tx_args_is(a, "duration")) {
    *duration = bench_parse_double("--duration", a->value, 0.001, 1e6);
  } else if (tx_args_is(a, "seed")) {
    *seed = (unsigned long long)bench_parse_long("--seed", a->value, 0, __LONG_MAX__);
  } else if (!tx_backend_flag(a->name, a->value)) {
    bench_usage_error("unknown option --%s", a->name);
  }
}
