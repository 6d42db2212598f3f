/* Messages to stderr that never allocate (usable inside malloc). */
#ifndef TXALLOC_UTIL_MESSAGE_H
#define TXALLOC_UTIL_MESSAGE_H

/* Prints "txalloc: <formatted text>\n" to stderr with one write(2). Formats into a stack
 * buffer of 1 KiB (longer text is cut); use only conversions glibc formats without
 * allocating (%s %d %ld %zu %p %x, no floating point, no wide strings). */
void txalloc_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
