/* The options mechanism: parsing, environment, lookup, over the table assembled above the
 * layers (util/options.h). Never allocates: it runs inside the allocator's own
 * initialisation, possibly before malloc works. */
#include "util/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/message.h"

extern char **environ;

/* OPTIONS_UNREAD, OPTIONS_READ, or the pid of the process whose thread is reading the
 * environment (a child forked during the reading sees its parent's pid there). */
enum { OPTIONS_UNREAD = 0, OPTIONS_READ = -1 };
static int options_state;

size_t txalloc_option_count(void) { return txalloc_option_table_size; }

const txalloc_option_info *txalloc_option_at(size_t index) {
  return index < txalloc_option_table_size ? &txalloc_option_table[index] : NULL;
}

long txalloc_option_value(size_t index) {
  txalloc_options_init();
  return index < txalloc_option_table_size
             ? __atomic_load_n(&txalloc_option_values[index], __ATOMIC_RELAXED)
             : 0;
}

/* Compares a user-written name with a canonical one: case-insensitive, '-' == '_',
 * optional "TXALLOC_" prefix. */
static int name_matches(const char *given, const char *canonical) {
  if (strncasecmp(given, "txalloc", 7) == 0 && (given[7] == '_' || given[7] == '-')) given += 8;
  for (; *given && *canonical; given++, canonical++) {
    char g = (char)tolower((unsigned char)*given);
    if (g == '-') g = '_';
    if (g != *canonical) return 0;
  }
  return *given == '\0' && *canonical == '\0';
}

int txalloc_option_find(const char *name) {
  for (int i = 0; i < (int)txalloc_option_table_size; i++)
    if (name_matches(name, txalloc_option_table[i].name)) return i;
  return -1;
}

/* Index of `word` among the '|'-separated `choices`, or -1. */
static long choice_index(const char *choices, const char *word) {
  size_t wlen = strlen(word);
  long index = 0;
  for (const char *p = choices;; index++) {
    const char *end = strchr(p, '|');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == wlen && strncasecmp(p, word, len) == 0) return index;
    if (!end) return -1;
    p = end + 1;
  }
}

/* Writes choice number `index` of `choices` into buf. */
int txalloc_format_choice(const char *choices, long index, char *buf, size_t len) {
  const char *p = choices;
  for (long i = 0; i < index && p; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p) return snprintf(buf, len, "?");
  const char *end = strchr(p, '|');
  int n = end ? (int)(end - p) : (int)strlen(p);
  return snprintf(buf, len, "%.*s", n, p);
}

static int parse_bool(const char *s, long *out) {
  static const char *const truths[] = {"1", "true", "yes", "on"};
  static const char *const lies[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(s, truths[i]) == 0) return *out = 1, 0;
    if (strcasecmp(s, lies[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

/* Integer with an optional binary suffix (k, m, g) when `sized`. */
static int parse_number(const char *s, int sized, long *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 0);
  if (end == s || errno) return -1;
  if (sized && *end) {
    int shift = 0;
    switch (tolower((unsigned char)*end)) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    default: return -1;
    }
    end++;
    if (tolower((unsigned char)*end) == 'b' || tolower((unsigned char)*end) == 'i') end++;
    if (v > (LLONG_MAX >> shift) || v < -(LLONG_MAX >> shift)) return -1;
    v <<= shift;
  }
  if (*end || v > LONG_MAX || v < LONG_MIN) return -1;
  *out = (long)v;
  return 0;
}

static void append_names(char *err, size_t err_len) {
  size_t used = strlen(err);
  for (int i = 0; i < (int)txalloc_option_table_size && used + 1 < err_len; i++) {
    int n =
        snprintf(err + used, err_len - used, "%s%s", i ? ", " : "", txalloc_option_table[i].name);
    if (n < 0) break;
    used += (size_t)n;
  }
}

/* Parses `value` for option i into *out; on a bad value returns -1 with the reason in err
 * (when err is not NULL). */
static int parse_value(int i, const char *value, long *out, char *err, size_t err_len) {
  const txalloc_option_info *o = &txalloc_option_table[i];
  long v = 0;
  int bad = 0;
  switch (o->type) {
  case TXALLOC_OPTION_BOOL: bad = parse_bool(value, &v); break;
  case TXALLOC_OPTION_INT:
  case TXALLOC_OPTION_SIZE:
    bad = parse_number(value, o->type == TXALLOC_OPTION_SIZE, &v) || v < o->min || v > o->max;
    break;
  case TXALLOC_OPTION_CHOICE:
    v = choice_index(o->choices, value);
    bad = v < 0;
    break;
  case TXALLOC_OPTION_TEXT: v = value[0] != '\0' && strcasecmp(value, "off") != 0; break;
  }
  if (!bad) {
    *out = v;
    return 0;
  }
  if (!err) return -1;
  switch (o->type) {
  case TXALLOC_OPTION_BOOL:
    snprintf(err, err_len, "option %s: '%s' is not a boolean (use 0 or 1)", o->name, value);
    break;
  case TXALLOC_OPTION_INT:
  case TXALLOC_OPTION_SIZE:
    snprintf(err, err_len, "option %s: '%s' is not %s in [%ld, %ld]", o->name, value,
             o->type == TXALLOC_OPTION_SIZE ? "a size" : "an integer", o->min, o->max);
    break;
  case TXALLOC_OPTION_CHOICE:
    snprintf(err, err_len, "option %s: '%s' is not one of %s", o->name, value, o->choices);
    break;
  case TXALLOC_OPTION_TEXT: break;
  }
  return -1;
}

/* TEXT options' strings: copied here, since a value set from code need not outlive the call
 * (the mechanism never allocates). A TEXT option's value is 1 + the offset of its string, 0
 * for none; a string set again takes new room, and one that does not fit is refused. */
static char text_arena[8192];
static size_t text_used;

static int text_value(const char *value, long *out) {
  if (value[0] == '\0' || strcasecmp(value, "off") == 0) return *out = 0, 0;
  size_t n = strlen(value) + 1;
  size_t at = __atomic_fetch_add(&text_used, n, __ATOMIC_RELAXED);
  if (at > sizeof text_arena || n > sizeof text_arena - at) return -1;
  memcpy(text_arena + at, value, n);
  *out = (long)at + 1;
  return 0;
}

static int set_value(int i, const char *value, char *err, size_t err_len) {
  long v;
  if (txalloc_option_table[i].type == TXALLOC_OPTION_TEXT) {
    if (text_value(value, &v) != 0) {
      if (err)
        snprintf(err, err_len, "option %s: no room for '%s'", txalloc_option_table[i].name, value);
      return -1;
    }
    __atomic_store_n(&txalloc_option_values[i], v, __ATOMIC_RELEASE); /* after the bytes */
    return 0;
  }
  if (parse_value(i, value, &v, err, err_len) != 0) return -1;
  __atomic_store_n(&txalloc_option_values[i], v, __ATOMIC_RELAXED);
  return 0;
}

int txalloc_option_set(const char *name, const char *value, char *err, size_t err_len) {
  txalloc_options_init();
  if (err && err_len) err[0] = '\0';
  int i = txalloc_option_find(name);
  if (i < 0) {
    if (err) {
      snprintf(err, err_len, "unknown option '%s'; valid options: ", name);
      append_names(err, err_len);
    }
    return -1;
  }
  return set_value(i, value, err, err_len);
}

int txalloc_option_format(size_t index, char *buf, size_t len) {
  if (index >= txalloc_option_table_size) return snprintf(buf, len, "?");
  const txalloc_option_info *o = &txalloc_option_table[index];
  long v = txalloc_option_value(index);
  if (o->type == TXALLOC_OPTION_CHOICE) return txalloc_format_choice(o->choices, v, buf, len);
  if (o->type == TXALLOC_OPTION_TEXT)
    return snprintf(buf, len, "%s", v ? text_arena + v - 1 : "off");
  return snprintf(buf, len, "%ld", v);
}

/* Variables of txalloc's own build, test and study tooling: TXALLOC_ by name, but not
 * options, so neither warned about nor refused. */
static int tooling_variable(const char *name) {
  static const char *const names[] = {"TXALLOC_REPO", "TXALLOC_BUILD_DIR", "TXALLOC_LIB"};
  if (strncmp(name, "TXALLOC_TEST_", 13) == 0) return 1;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

/* Calls visit(name, value, ctx) for every TXALLOC_* variable of the environment that is not
 * a tooling variable; `name` is cut to 63 characters. */
static void for_each_variable(void (*visit)(const char *name, const char *value, void *ctx),
                              void *ctx) {
  if (!environ) return;
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "TXALLOC_", 8) != 0) continue;
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    char name[64];
    size_t n = (size_t)(eq - *e);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, *e, n);
    name[n] = '\0';
    if (!tooling_variable(name)) visit(name, eq + 1, ctx);
  }
}

static void read_variable(const char *name, const char *value, void *ctx) {
  (void)ctx;
  char err[1024];
  int i = txalloc_option_find(name);
  if (i < 0) {
    snprintf(err, sizeof err, "unknown environment variable %s ignored; valid options: ", name);
    append_names(err, sizeof err);
    txalloc_message("%s", err);
  } else if (set_value(i, value, err, sizeof err) != 0) {
    txalloc_message("%s=%s ignored (default kept): %s", name, value, err);
  }
}

static void read_environment(void) { for_each_variable(read_variable, NULL); }

struct env_check {
  int problems;
  char *err;
  size_t err_len;
};

static void check_variable(const char *name, const char *value, void *ctx) {
  struct env_check *c = ctx;
  char why[512];
  long v;
  int i = txalloc_option_find(name);
  if (i >= 0 && parse_value(i, value, &v, why, sizeof why) == 0) return;
  if (c->problems++ || !c->err || !c->err_len) return;
  if (i < 0)
    snprintf(c->err, c->err_len, "unknown variable %s: not a txalloc option", name);
  else
    snprintf(c->err, c->err_len, "%s=%s: %s", name, value, why);
}

int txalloc_options_check_env(char *err, size_t err_len) {
  struct env_check c = {0, err, err_len};
  if (err && err_len) err[0] = '\0';
  for_each_variable(check_variable, &c);
  return c.problems;
}

void txalloc_options_init(void) {
  if (__atomic_load_n(&options_state, __ATOMIC_ACQUIRE) == OPTIONS_READ) return;
  int expected = OPTIONS_UNREAD;
  pid_t self = getpid();
  if (__atomic_compare_exchange_n(&options_state, &expected, self, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    read_environment();
    __atomic_store_n(&options_state, OPTIONS_READ, __ATOMIC_RELEASE);
    return;
  }
  /* Another thread is reading the environment; it never allocates, so it finishes --
   * unless this process is a child forked while that thread was reading: the reader does
   * not exist here, so the child takes the reading over. */
  for (;;) {
    int state = __atomic_load_n(&options_state, __ATOMIC_ACQUIRE);
    if (state == OPTIONS_READ) return;
    if (state != self && __atomic_compare_exchange_n(&options_state, &state, self, 0,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      /* Only a reader of another process can be taken over: in the parent the reader's
       * pid equals ours, so threads of one process never race here. */
      read_environment();
      __atomic_store_n(&options_state, OPTIONS_READ, __ATOMIC_RELEASE);
      return;
    }
    __builtin_ia32_pause();
  }
}
