/* tmqueue.h: a list from a dummy node (head) to the newest node (tail). A pop frees the
 * dummy and makes the first node the dummy, so push and pop write different nodes unless
 * the queue is empty. */
#include "tmqueue.h"

typedef struct qnode {
  void *value;
  struct qnode *next;
} qnode;

struct tmqueue {
  qnode *head, *tail;
  char pad[64 - 2 * sizeof(qnode *)]; /* the queue's own line */
};

static qnode *node_alloc(void *value) {
  qnode *n = TM_MALLOC(sizeof *n);
  if (!n) abort();
  *n = (qnode){.value = value};
  return n;
}

tmqueue *queue_alloc(void) {
  tmqueue *q = TM_MALLOC(sizeof *q);
  if (!q) abort();
  q->head = q->tail = node_alloc(NULL);
  return q;
}

void queue_free(tmqueue *q) {
  for (qnode *n = q->head, *next; n; n = next) {
    next = n->next;
    TM_FREE(n);
  }
  TM_FREE(q);
}

void TMqueue_push(TM_ARGDECL tmqueue *q, void *value) {
  qnode *n = node_alloc(value); /* inside the transaction: freed again if it aborts */
  qnode *tail = TM_SHARED_READ_P(q->tail);
  TM_SHARED_WRITE_P(tail->next, n);
  TM_SHARED_WRITE_P(q->tail, n);
}

void *TMqueue_pop(TM_ARGDECL tmqueue *q) {
  qnode *head = TM_SHARED_READ_P(q->head);
  qnode *first = TM_SHARED_READ_P(head->next);
  if (!first) return NULL;
  void *value = TM_SHARED_READ_P(first->value);
  TM_SHARED_WRITE_P(q->head, first);
  TM_FREE(head);
  return value;
}

long queue_count(const tmqueue *q) {
  long count = 0;
  for (const qnode *n = q->head->next; n; n = n->next) count++;
  return count;
}
