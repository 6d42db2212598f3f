/* trace_format.h: the placement trace file (docs/placement.md, "Trace format"), read by
 * python/txalloc/placement.py. Host byte order (little-endian on x86-64 and aarch64).
 *
 * A file is one trace_header followed by trace_records. Records of different threads are
 * interleaved in blocks (each thread flushes its own buffer); `seq` orders them. Invariant:
 * a free takes its seq before the allocator below releases the object and an allocation
 * takes its seq after the allocator below returned it, so an address reused by another
 * thread is always freed at a lower seq than it is allocated again. */
#ifndef TXALLOC_PLACEMENT_TRACE_FORMAT_H
#define TXALLOC_PLACEMENT_TRACE_FORMAT_H

#include <stdint.h>

#define TRACE_MAGIC "TXPLACE1" /* 8 bytes, no terminator in the file */
#define TRACE_VERSION 1

struct trace_header {
  char magic[8];
  uint32_t version;
  uint32_t record_size; /* sizeof(struct trace_record) */
  uint64_t pid;         /* the process that wrote the file */
  uint64_t reserved;    /* 0 */
};

enum trace_kind {
  TRACE_MALLOC = 1,
  TRACE_CALLOC = 2,
  TRACE_REALLOC = 3, /* the new object; the old one has a TRACE_FREE record just before */
  TRACE_ALIGNED = 4, /* memalign, posix_memalign, aligned_alloc */
  TRACE_FREE = 5,    /* size 0 */
};

struct trace_record {
  uint64_t seq;
  uint64_t addr;
  uint64_t size;       /* the size the program asked for */
  uint32_t tid;        /* gettid() of the calling thread */
  uint16_t kind;       /* enum trace_kind */
  uint16_t align_log2; /* TRACE_ALIGNED: log2 of the alignment asked for; else 0 */
};

_Static_assert(sizeof(struct trace_header) == 32, "trace header layout");
_Static_assert(sizeof(struct trace_record) == 32, "trace record layout");

#endif
