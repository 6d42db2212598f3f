/* Reads a Syncchar trace back (docs/syncchar.md, "Trace format") for the recorder's tests:
 * the header's fields and every record, whole, in file order. */
#ifndef TXALLOC_TESTS_TM_SYNCCHAR_READ_H
#define TXALLOC_TESTS_TM_SYNCCHAR_READ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sc_trace {
  unsigned unit_shift, stm_shift, sample_percent, window;
  char backend[17];
  uint64_t *words; /* the records */
  size_t nwords;
} sc_trace;

/* Returns 0, or -1 when the file is missing or its header or framing is wrong. */
static inline int sc_trace_read(const char *path, sc_trace *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  unsigned char header[64];
  if (fread(header, 1, 64, f) != 64 || memcmp(header, "TXSYNCH1", 8) != 0) {
    fclose(f);
    return -1;
  }
  uint32_t fields[8];
  memcpy(fields, header + 8, sizeof fields);
  t->unit_shift = fields[3];
  t->stm_shift = fields[4];
  t->sample_percent = fields[5];
  t->window = fields[6];
  memcpy(t->backend, header + 40, 16);
  fseek(f, 0, SEEK_END);
  long size = ftell(f) - 64;
  fseek(f, 64, SEEK_SET);
  t->words = malloc((size_t)size + 8);
  t->nwords = fread(t->words, 8, (size_t)size / 8, f);
  fclose(f);
  if (size % 8 != 0) return -1;
  for (size_t i = 0; i < t->nwords;) { /* every length frames a whole record */
    size_t len = (size_t)(t->words[i] >> 32) / 8;
    if (len < 1 || i + len > t->nwords) return -1;
    i += len;
  }
  return 0;
}

static inline unsigned sc_kind(const uint64_t *record) {
  return (unsigned)(record[0] & 0xffffffffu);
}
static inline size_t sc_len(const uint64_t *record) { return (size_t)(record[0] >> 32) / 8; }
/* SECTION fields. */
static inline unsigned sc_thread(const uint64_t *r) { return (unsigned)(r[1] & 0xffffffffu); }
static inline unsigned sc_flags(const uint64_t *r) { return (unsigned)(r[1] >> 32); }
static inline size_t sc_nreads(const uint64_t *r) { return (size_t)(r[7] & 0xffffffffu); }
static inline size_t sc_nwrites(const uint64_t *r) { return (size_t)(r[7] >> 32); }
static inline const uint64_t *sc_reads(const uint64_t *r) { return &r[8]; }
static inline const uint64_t *sc_writes(const uint64_t *r) { return &r[8 + sc_nreads(r)]; }

#define SC_FOR_EACH(t, r)                                                                          \
  for (const uint64_t *r = (t)->words; r < (t)->words + (t)->nwords; r += sc_len(r))

#endif
