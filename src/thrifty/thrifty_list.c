/* An address-ordered first-fit free list with coalescing (thrifty_internal.h says why the
 * order, not boundary tags, finds the neighbours). One owner at a time: a thread's pool, or
 * the heap under its lock. */
#include "thrifty/thrifty_internal.h"

void *thrifty_list_take(thrifty_list *l, size_t need, size_t *got) {
  thrifty_span **link = &l->head;
  for (thrifty_span *f = l->head; f; link = &f->next, f = f->next) {
    if (f->size < need) continue;
    size_t rest = f->size - need;
    if (rest >= THRIFTY_MIN_BLOCK) {
      f->size = rest; /* the front stays free, in place on the list */
      l->free_bytes -= need;
      *got = need;
      return (char *)f + rest;
    }
    *link = f->next;
    l->free_bytes -= f->size;
    *got = f->size;
    return f;
  }
  return NULL;
}

void thrifty_list_put(thrifty_list *l, void *block, size_t size) {
  char *b = block;
  thrifty_span *prev = NULL, *next = l->head;
  while (next && (char *)next < b) {
    prev = next;
    next = next->next;
  }
  l->free_bytes += size;
  if (next && b + size == (char *)next) { /* absorbs the next block */
    size += next->size;
    next = next->next;
  }
  if (prev && (char *)prev + prev->size == b) { /* the previous block absorbs it */
    prev->size += size;
    prev->next = next;
    return;
  }
  thrifty_span *f = block;
  f->size = size;
  f->next = next;
  if (prev)
    prev->next = f;
  else
    l->head = f;
}

void thrifty_list_move_all(thrifty_list *to, thrifty_list *from) {
  thrifty_span *f = from->head;
  from->head = NULL;
  from->free_bytes = 0;
  while (f) {
    thrifty_span *next = f->next;
    thrifty_list_put(to, f, f->size);
    f = next;
  }
}

size_t thrifty_list_largest(const thrifty_list *l) {
  size_t m = 0;
  for (const thrifty_span *f = l->head; f; f = f->next)
    if (f->size > m) m = f->size;
  return m;
}

size_t thrifty_list_count(const thrifty_list *l) {
  size_t n = 0;
  for (const thrifty_span *f = l->head; f; f = f->next) n++;
  return n;
}
