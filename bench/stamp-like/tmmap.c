/* tmmap.h. The bucket array never changes after map_alloc: only the lists are shared. */
#include "tmmap.h"

#include "tmlist.h"

struct tmmap {
  long buckets;
  tmlist **bucket;
};

tmmap *map_alloc(long buckets) {
  tmmap *m = TM_MALLOC(sizeof *m);
  if (!m || buckets < 1) abort();
  m->buckets = buckets;
  m->bucket = TM_MALLOC((size_t)buckets * sizeof *m->bucket);
  if (!m->bucket) abort();
  for (long i = 0; i < buckets; i++) m->bucket[i] = TMlist_alloc(TM_ARG_ALONE);
  return m;
}

void map_free(tmmap *m) {
  for (long i = 0; i < m->buckets; i++) TMlist_free(TM_ARG m->bucket[i]);
  TM_FREE(m->bucket);
  TM_FREE(m);
}

static tmlist *bucket_of(const tmmap *m, long key) {
  unsigned long h = (unsigned long)key * 0x9e3779b97f4a7c15UL;
  return m->bucket[(h >> 17) % (unsigned long)m->buckets];
}

bool TMmap_insert(TM_ARGDECL tmmap *m, long key, void *value) {
  return TMlist_insert(TM_ARG bucket_of(m, key), key, value);
}

void *TMmap_find(TM_ARGDECL tmmap *m, long key) {
  return TMlist_find(TM_ARG bucket_of(m, key), key);
}

void *TMmap_remove(TM_ARGDECL tmmap *m, long key) {
  return TMlist_remove(TM_ARG bucket_of(m, key), key);
}

bool map_for_each(const tmmap *m, bool (*fn)(long key, void *value, void *arg), void *arg) {
  for (long i = 0; i < m->buckets; i++)
    if (!list_for_each(m->bucket[i], fn, arg)) return false;
  return true;
}
