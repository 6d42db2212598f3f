/* The integer sets of the intset workload (sorted linked list, hash set, red-black tree,
 * skip list). Each operation is one transaction (tx_api.h); the set-up (create) and the
 * final check run single-threaded outside transactions. */
#ifndef TXALLOC_BENCH_INTSET_H
#define TXALLOC_BENCH_INTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct intset_config {
  long buckets;     /* hash set: number of buckets */
  size_t node_size; /* bytes asked of the allocator per node: at least the natural size */
} intset_config;

typedef struct intset_ops {
  const char *name;
  /* Natural node size in bytes (for the skip list: of a node of level 1). */
  size_t node_size;
  void *(*create)(const intset_config *config);
  /* `random` is drawn by the caller outside the transaction (the skip list's level). */
  bool (*insert)(void *set, long key, uint64_t random);
  bool (*remove)(void *set, long key);
  bool (*contains)(void *set, long key);
  /* Single-threaded, after all workers: checks the structure's invariants and stores its
   * keys (any order) in keys[0..cap). Returns the number of keys, or -1 with a message in
   * err when an invariant is broken or there are more than cap keys. */
  long (*check)(void *set, long *keys, long cap, char *err, size_t err_len);
  void (*destroy)(void *set);
} intset_ops;

extern const intset_ops intset_list_ops;
extern const intset_ops intset_hash_ops;
extern const intset_ops intset_rbtree_ops;
extern const intset_ops intset_skiplist_ops;

#endif
