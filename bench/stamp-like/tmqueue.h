/* A FIFO of non-NULL pointers shared by transactions: every push TM_MALLOCs a node and every
 * pop TM_FREEs one (intruder's packet stream, the refinement work list). */
#ifndef TXALLOC_STAMP_LIKE_TMQUEUE_H
#define TXALLOC_STAMP_LIKE_TMQUEUE_H

#include <stdbool.h>

#include "tm.h"

typedef struct tmqueue tmqueue;

/* Alone. */
tmqueue *queue_alloc(void);
/* Alone: frees the nodes and the queue; the values are the caller's. */
void queue_free(tmqueue *q);

TM_CALLABLE void TMqueue_push(TM_ARGDECL tmqueue *q, void *value);
/* The oldest value, NULL when the queue is empty. */
TM_CALLABLE void *TMqueue_pop(TM_ARGDECL tmqueue *q);

/* Alone: the number of values queued. */
long queue_count(const tmqueue *q);

#endif
