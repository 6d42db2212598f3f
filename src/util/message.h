/* Messages to stderr that never allocate (usable inside malloc). */
#ifndef TXALLOC_UTIL_MESSAGE_H
#define TXALLOC_UTIL_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>

/* Prints "txalloc: <formatted text>\n" to stderr with one write(2). Formats into a stack
 * buffer of 1 KiB (longer text is cut); use only conversions glibc formats without
 * allocating (%s %d %ld %zu %p %x, no floating point, no wide strings). */
void txalloc_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes all n bytes to fd, retrying short writes and EINTR; false if a write failed
 * (what was written stays written). Never allocates. */
bool txalloc_write_all(int fd, const void *data, size_t n);

#endif
