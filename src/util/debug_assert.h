/* Debug assertions of internal invariants, in the style of mimalloc's mi_assert_internal.
 *
 *   TXALLOC_ASSERT(cond)  with TXALLOC_DEBUG (on in the sanitizer builds, a CMake option
 *                         elsewhere): when cond is false, prints "txalloc: assertion failed:
 *                         <file>:<line>: <function>: <cond>" with one write(2), no
 *                         allocation, and aborts. Without it: cond is not evaluated, but
 *                         it still compiles, so an assertion cannot rot in Release.
 *
 * Use it for what must hold if the code is right (a count within bounds, an object inside
 * its block), never for what a user can get wrong (bad frees have their own reports), and
 * keep each condition a few loads: the sanitizer test runs pay for every one. */
#ifndef TXALLOC_UTIL_DEBUG_ASSERT_H
#define TXALLOC_UTIL_DEBUG_ASSERT_H

#ifndef TXALLOC_DEBUG
#define TXALLOC_DEBUG 0
#endif

/* Reports the failed condition and aborts (the expansion of a failed TXALLOC_ASSERT). */
__attribute__((noreturn, cold)) void txalloc_assert_fail(const char *cond, const char *file,
                                                         int line, const char *func);

#if TXALLOC_DEBUG
#define TXALLOC_ASSERT(cond)                                                                       \
  (__builtin_expect(!!(cond), 1) ? (void)0                                                         \
                                 : txalloc_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
#define TXALLOC_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
