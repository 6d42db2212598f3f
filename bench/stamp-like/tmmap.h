/* A hash map of long keys to non-NULL values, shared by transactions: a fixed array of
 * buckets, each a tmlist (intruder's flows being reassembled). */
#ifndef TXALLOC_STAMP_LIKE_TMMAP_H
#define TXALLOC_STAMP_LIKE_TMMAP_H

#include <stdbool.h>

#include "tm.h"

typedef struct tmmap tmmap;

/* Alone. */
tmmap *map_alloc(long buckets);
/* Alone: frees the buckets and the map; the values are the caller's. */
void map_free(tmmap *m);

TM_CALLABLE bool TMmap_insert(TM_ARGDECL tmmap *m, long key, void *value);
TM_CALLABLE void *TMmap_find(TM_ARGDECL tmmap *m, long key);
TM_CALLABLE void *TMmap_remove(TM_ARGDECL tmmap *m, long key);

/* Alone: calls fn on every pair; stops and returns false when fn does. */
bool map_for_each(const tmmap *m, bool (*fn)(long key, void *value, void *arg), void *arg);

#endif
