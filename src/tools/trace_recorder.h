/* trace_recorder.h: per-thread buffers of trace records, written to the process's trace
 * file when full, when their thread exits and when the process exits. */
#ifndef TXALLOC_PLACEMENT_TRACE_RECORDER_H
#define TXALLOC_PLACEMENT_TRACE_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "tools/trace_format.h"

/* A sequence number for the next event (see the invariant in trace_format.h). */
uint64_t trace_next_seq(void);

/* Appends one record to the calling thread's buffer; nothing when recording is off (no
 * PLACEMENT_TRACE, a forked child, or after the exit flush). */
void trace_record(uint64_t seq, const void *addr, size_t size, enum trace_kind kind,
                  unsigned align_log2);

#endif
