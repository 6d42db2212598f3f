/* The one macro layer between the transactional workloads and the TM that runs them. Every
 * workload source is compiled three times from the same text:
 *   - TX_BACKEND_TXALLOC: against include/txalloc/tm.h (txalloc's runtime, any backend
 *     chosen by options at run time);
 *   - TX_BACKEND_ITM: with `gcc -fgnu-tm` against GCC's libitm. Atomic blocks become
 *     __transaction_atomic and shared accesses are plain C; the compiler instruments them;
 *   - TX_BACKEND_NOTM: no TM at all, the blocks run as plain code and allocate with the
 *     process's malloc: one thread only (TX_SINGLE_THREAD), the cost of the workload itself,
 *     against which each TM's overhead per operation is measured;
 * so the comparison measures the runtimes, not two versions of the data structures.
 *
 * Rules for code between TX_BEGIN and TX_END (the stricter of the two TMs):
 *   - shared memory is read with TX_LOAD and written with TX_STORE;
 *   - memory the block allocated itself (not yet published) may be written with TX_INIT;
 *   - functions called inside a block are TX_SAFE and call only TX_SAFE functions;
 *   - no return, break or goto out of the block, no atomics, no I/O;
 *   - a local of the enclosing function that the block assigns and that is read after the
 *     block must be declared TX_LOCAL (volatile for txalloc's setjmp-based restart).
 * Outside blocks, memory is accessed plainly (set-up and the final checks run alone). */
#ifndef TXALLOC_BENCH_TX_API_H
#define TXALLOC_BENCH_TX_API_H

#include <stdbool.h>
#include <stddef.h>

#if defined(TX_BACKEND_TXALLOC) + defined(TX_BACKEND_ITM) + defined(TX_BACKEND_NOTM) != 1
#error "define exactly one of TX_BACKEND_TXALLOC, TX_BACKEND_ITM and TX_BACKEND_NOTM"
#endif

#ifdef TX_BACKEND_TXALLOC
#include "txalloc/tm.h"

#define TX_BEGIN TM_ATOMIC {
#define TX_BEGIN_RO TM_ATOMIC_RO {
#define TX_END }
#define TX_LOAD(p) tm_load(p)
#define TX_STORE(p, v) tm_store((p), (v))
#define TX_MALLOC(size) tm_malloc(size)
#define TX_FREE(ptr) tm_free(ptr)
#define TX_SAFE
#define TX_LOCAL volatile
#define TX_BACKEND_NAME "txalloc"

#elif defined(TX_BACKEND_NOTM)
#include <stdlib.h>

#define TX_BEGIN {
#define TX_BEGIN_RO {
#define TX_END }
#define TX_LOAD(p) (*(p))
#define TX_STORE(p, v) ((void)(*(p) = (v)))
#define TX_MALLOC(size) malloc(size)
#define TX_FREE(ptr) free(ptr)
#define TX_SAFE
#define TX_LOCAL
#define TX_BACKEND_NAME "none"
/* Nothing makes the blocks atomic: tx_args_common refuses --threads other than 1. */
#define TX_SINGLE_THREAD 1

#else /* TX_BACKEND_ITM */
#include <stdlib.h>

#define TX_BEGIN __transaction_atomic {
#define TX_BEGIN_RO __transaction_atomic {
#define TX_END }
#define TX_LOAD(p) (*(p))
#define TX_STORE(p, v) ((void)(*(p) = (v)))
/* GCC replaces malloc/free inside a transaction by libitm's transactional versions. */
#define TX_MALLOC(size) malloc(size)
#define TX_FREE(ptr) free(ptr)
#define TX_SAFE __attribute__((transaction_safe))
#define TX_LOCAL
#define TX_BACKEND_NAME "libitm"
#endif

/* Initialising memory this transaction allocated: plain in both builds (libitm's compiler
 * pass skips instrumentation for such "captured" memory; tm.h allows plain access to
 * thread-private memory). */
#define TX_INIT(p, v) ((void)(*(p) = (v)))

#endif
