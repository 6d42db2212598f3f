/* Command lines of the bench programs: one table-driven parser for all of them.
 *
 * A program describes its flags in a table of bench_arg (name, type, where the value goes,
 * range or choices, help line); the parser reads
 *   --name=value and --name value      (names compare with '-' and '_' alike)
 *   --flag, --flag=0|1, --flag 0|1     a boolean flag never takes the next flag as its
 *                                      value: bare, it means 1
 *   --help, -h                         usage generated from the same table, exit 0
 * and offers every name the table lacks to a further flag set (a TM program's txalloc
 * options). Before the flags it checks the TXALLOC_* environment: a benchmark run is an
 * experiment and must not run in a configuration nobody asked for. Any problem prints
 * "PROG: MESSAGE (see --help)" on stderr and exits 2. */
#ifndef TXALLOC_BENCH_ARGS_H
#define TXALLOC_BENCH_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum bench_arg_type {
  BENCH_ARG_LONG,   /* long *, within [min, max] */
  BENCH_ARG_DOUBLE, /* double *, within [min_d, max_d] */
  BENCH_ARG_BOOL,   /* bool *; 0/1, true/false, yes/no, on/off */
  BENCH_ARG_CHOICE, /* int *: the index of the value among `choices` */
} bench_arg_type;

typedef struct bench_arg {
  const char *name; /* without "--", e.g. "node-size" */
  bench_arg_type type;
  void *value; /* holds the default until parsed */
  long min, max;
  double min_d, max_d;
  const char *const *choices;
  int choice_count;
  const char *help; /* one line */
} bench_arg;

#define BENCH_LONG(name_, ptr, lo, hi, help_)                                                      \
  { .name = name_, .type = BENCH_ARG_LONG, .value = (ptr), .min = (lo), .max = (hi), .help = help_ }
#define BENCH_DOUBLE(name_, ptr, lo, hi, help_)                                                    \
  {                                                                                                \
    .name = name_, .type = BENCH_ARG_DOUBLE, .value = (ptr), .min_d = (lo), .max_d = (hi),         \
    .help = help_                                                                                  \
  }
#define BENCH_BOOL(name_, ptr, help_)                                                              \
  { .name = name_, .type = BENCH_ARG_BOOL, .value = (ptr), .help = help_ }
#define BENCH_CHOICE(name_, ptr, names, count, help_)                                              \
  {                                                                                                \
    .name = name_, .type = BENCH_ARG_CHOICE, .value = (ptr), .choices = (names),                   \
    .choice_count = (count), .help = help_                                                         \
  }

/* Flags a program takes beyond its table, known by name (e.g. every txalloc option). */
typedef struct bench_flag_set {
  /* True when `name` is one of the set; *is_bool says whether it takes no value. */
  bool (*find)(const char *name, bool *is_bool);
  /* Applies the flag: 0, or -1 with the reason in err. */
  int (*set)(const char *name, const char *value, char *err, size_t err_len);
} bench_flag_set;

typedef struct bench_cli {
  const char *summary; /* what the program does, for --help; may span lines */
  const bench_arg *args;
  int count;
  const bench_flag_set *flags;  /* NULL: no further flags */
  void (*help_tail)(FILE *out); /* the rest of --help (e.g. the flag set's list), or NULL */
  /* Reports problems of the TXALLOC_* environment (txalloc_options_check_env's contract).
   * NULL: txalloc's own when the process has it loaded (LD_PRELOAD), else none. */
  int (*check_env)(char *err, size_t err_len);
} bench_cli;

/* Checks the environment, then parses argv[1..] against the table, as above. */
void bench_parse_args(const bench_cli *cli, int argc, char **argv);

/* The program name in messages: the base name of argv[0] (bench_parse_args sets it). */
void bench_set_program(const char *argv0);
const char *bench_program(void);
_Noreturn void bench_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long bench_parse_long(const char *flag, const char *text, long min, long max);
double bench_parse_double(const char *flag, const char *text, double min, double max);
/* 1 or 0 for the words of BENCH_ARG_BOOL; usage error otherwise. */
bool bench_parse_bool(const char *flag, const char *text);
/* Index of `text` among `count` names, or usage error listing them. */
int bench_parse_choice(const char *flag, const char *text, const char *const *names, int count);

#endif
