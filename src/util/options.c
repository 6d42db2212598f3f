/* The options table: parsing, environment, lookup. Never allocates: it runs inside the
 * allocator's own initialisation, possibly before malloc works. */
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

static const txalloc_option_info option_table[TXALLOC_OPT_COUNT_] = {
#define TXALLOC_OPTION(ID, layer_, name_, type_, min_, max_, choices_, def_, doc_)                 \
  {.name = name_,                                                                                  \
   .layer = layer_,                                                                                \
   .doc = doc_,                                                                                    \
   .type = TXALLOC_OPTION_##type_,                                                                 \
   .min = min_,                                                                                    \
   .max = max_,                                                                                    \
   .choices = choices_,                                                                            \
   .default_value = def_},
#include "util/option_table.def"
#undef TXALLOC_OPTION
};

long txalloc_option_values[TXALLOC_OPT_COUNT_] = {
#define TXALLOC_OPTION(ID, layer, name, type, min, max, choices, def, doc) def,
#include "util/option_table.def"
#undef TXALLOC_OPTION
};

/* OPTIONS_UNREAD, OPTIONS_READ, or the pid of the process whose thread is reading the
 * environment (a child forked during the reading sees its parent's pid there). */
enum { OPTIONS_UNREAD = 0, OPTIONS_READ = -1 };
static int options_state;

size_t txalloc_option_count(void) { return TXALLOC_OPT_COUNT_; }

const txalloc_option_info *txalloc_option_at(size_t index) {
  return index < TXALLOC_OPT_COUNT_ ? &option_table[index] : NULL;
}

long txalloc_option_value(size_t index) {
  txalloc_options_init();
  return index < TXALLOC_OPT_COUNT_
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
  for (int i = 0; i < TXALLOC_OPT_COUNT_; i++)
    if (name_matches(name, option_table[i].name)) return i;
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
  for (int i = 0; i < TXALLOC_OPT_COUNT_ && used + 1 < err_len; i++) {
    int n = snprintf(err + used, err_len - used, "%s%s", i ? ", " : "", option_table[i].name);
    if (n < 0) break;
    used += (size_t)n;
  }
}

static int set_value(int i, const char *value, char *err, size_t err_len) {
  const txalloc_option_info *o = &option_table[i];
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
  }
  if (bad) {
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
    }
    return -1;
  }
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
  if (index >= TXALLOC_OPT_COUNT_) return snprintf(buf, len, "?");
  const txalloc_option_info *o = &option_table[index];
  long v = txalloc_option_value(index);
  if (o->type == TXALLOC_OPTION_CHOICE) return txalloc_format_choice(o->choices, v, buf, len);
  return snprintf(buf, len, "%ld", v);
}

static void read_environment(void) {
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
    char err[1024];
    if (txalloc_option_find(name) < 0) {
      /* Stay quiet about variables of the build and test tooling (TXALLOC_TEST_*). */
      if (strncmp(name, "TXALLOC_TEST_", 13) == 0) continue;
      snprintf(err, sizeof err, "unknown environment variable %s ignored; valid options: ", name);
      append_names(err, sizeof err);
      txalloc_message("%s", err);
    } else if (set_value(txalloc_option_find(name), eq + 1, err, sizeof err) != 0) {
      txalloc_message("%s=%s ignored (default kept): %s", name, eq + 1, err);
    }
  }
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
