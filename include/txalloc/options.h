/* txalloc options: one table for every layer (allocator, TM runtime, transactional
 * allocation). Each option has a canonical name such as "ort_log2", which appears as
 *   - the environment variable TXALLOC_ORT_LOG2 (read once, at the first use of txalloc),
 *   - the command-line flag --ort-log2 of every bench program,
 *   - the key "ort_log2" in the study's metadata.
 * Options set from code take effect for layers not yet initialised; each layer reads its
 * options when it initialises (the allocator at its first call, the TM runtime at the
 * first transaction), so set them before that.
 * The library warns about an unknown TXALLOC_* variable or a bad value and keeps the
 * default (right for a preloaded library); a program that must not run in a configuration
 * nobody asked for refuses to start when txalloc_options_check_env reports a problem. */
#ifndef TXALLOC_OPTIONS_H
#define TXALLOC_OPTIONS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TXALLOC_API
#define TXALLOC_API __attribute__((visibility("default")))
#endif

typedef enum txalloc_option_type {
  TXALLOC_OPTION_BOOL,   /* 0/1, also accepts true/false, yes/no, on/off */
  TXALLOC_OPTION_INT,    /* integer within [min, max] */
  TXALLOC_OPTION_SIZE,   /* bytes within [min, max]; accepts k, m, g suffixes (binary) */
  TXALLOC_OPTION_CHOICE, /* one of the '|'-separated words of `choices`; value = index */
  TXALLOC_OPTION_TEXT,   /* a string such as a file name; "" or "off": none. The value read
                            by txalloc_option_value is nonzero when one is set; the text
                            comes from txalloc_option_format */
} txalloc_option_type;

typedef struct txalloc_option_info {
  const char *name;  /* canonical: lower case, words joined by '_' */
  const char *layer; /* "alloc", "tm", "txmem", ... */
  const char *doc;   /* one line */
  txalloc_option_type type;
  long min, max;       /* INT and SIZE only */
  const char *choices; /* CHOICE only, e.g. "etl-wb|etl-wt|ctl-wb" */
  long default_value;
} txalloc_option_info;

/* Number of options and their descriptions, in table order. */
TXALLOC_API size_t txalloc_option_count(void);
TXALLOC_API const txalloc_option_info *txalloc_option_at(size_t index);

/* Index of the option called `name` ("ort_log2", "ort-log2", "ORT_LOG2" or
 * "TXALLOC_ORT_LOG2" all match), or -1. */
TXALLOC_API int txalloc_option_find(const char *name);

/* Parses and sets an option. Returns 0, or -1 with a message naming the problem (unknown
 * option and the valid names, bad value and the valid range or choices) in `err`. */
TXALLOC_API int txalloc_option_set(const char *name, const char *value, char *err, size_t err_len);

/* Checks the TXALLOC_* environment variables without applying them: every one must name an
 * option and hold a valid value for it (variables of txalloc's build and test tooling --
 * TXALLOC_TEST_*, TXALLOC_REPO, TXALLOC_BUILD_DIR, TXALLOC_LIB -- are not options and pass).
 * Returns the number of problems; `err` holds the first as one line, e.g.
 * "TXALLOC_DESIGN=ctlwb: option design: 'ctlwb' is not one of etl-wb|etl-wt|ctl-wb". */
TXALLOC_API int txalloc_options_check_env(char *err, size_t err_len);

/* Current value (CHOICE: the index of the choice). */
TXALLOC_API long txalloc_option_value(size_t index);

/* Current value as text ("1", "1048576", "stm"); returns the length, like snprintf. */
TXALLOC_API int txalloc_option_format(size_t index, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
