/* Long-option parsing shared by the transactional workloads: `--name value` and
 * `--name=value`, with names compared with '-' and '_' treated alike. Options the workload
 * does not know are offered to the TM backend (tx_backend_flag), so every option of the
 * txalloc table works as a flag without the workload naming it. */
#ifndef TXALLOC_BENCH_TX_ARGS_H
#define TXALLOC_BENCH_TX_ARGS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct tx_args {
  int argc;
  char **argv;
  int next;          /* index of the next argv element to read */
  const char *name;  /* current option name without the leading "--" */
  const char *value; /* its value */
  void (*usage)(FILE *out);
  char name_buf[128];
} tx_args;

/* `usage` prints the workload's --help text. */
void tx_args_begin(tx_args *a, int argc, char **argv, void (*usage)(FILE *out));
/* Advances to the next option; false at the end. "--help"/"-h" prints the usage on stdout
 * and exits 0; any other option takes a value (usage error when missing); a word that is
 * not an option is a usage error. */
bool tx_args_next(tx_args *a);
/* True when the current option is `name` ('-' and '_' alike). */
bool tx_args_is(const tx_args *a, const char *name);

/* The options every workload shares, for the current option once the workload's own have
 * been tried: --threads, --duration (only when `duration` is not NULL: a workload that
 * runs a number of steps has none), --seed, then any TM/txalloc option (tx_backend_flag).
 * Anything else is a usage error (exit 2). */
void tx_args_common(const tx_args *a, long *threads, double *duration, unsigned long long *seed);

#endif
