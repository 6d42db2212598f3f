/* Foreign objects: a thread that frees an object of another heap's block keeps it for its
 * own next malloc of the class, instead of pushing it onto the block's public list, where
 * only the owner can take it back.
 *
 * Why: in McRT's design a freed object is reusable by its block's owner only. A thread
 * that frees what another allocated and allocates the same classes itself (a worker that
 * replaces the entries a loader thread made, a ring of producers and consumers) otherwise
 * carves fresh memory for every object while the freed ones wait on the public lists of an
 * owner that may never allocate again. A foreign object stays counted in its block's `used`
 * (the owner sees it as live throughout), so no block changes hands and the owner's
 * unsynchronised fast paths are untouched.
 *
 * Bounds: a class's list starts with room for TXA_FOREIGN_START objects and doubles each
 * time the thread's mallocs empty it, up to TXA_FOREIGN_CLASS_MAX objects and
 * TXA_FOREIGN_CLASS_BYTES (at least one object: 1 or 2 above 8 KiB); all lists of a heap
 * hold at most TXA_FOREIGN_BYTES. A thread
 * that only frees (a pure consumer) keeps TXA_FOREIGN_START objects per class and returns
 * the rest to their owners. The lists go back to the owners' public lists when the thread
 * exits and when it calls txalloc_collect. Option foreign_reuse turns this off; secure
 * mode keeps no foreign objects, as its double-free check walks the block's own lists,
 * which do not hold them. */
#include "alloc/internal.h"

/* The most objects class c's list may hold: TXA_FOREIGN_CLASS_MAX, fewer for classes
 * above TXA_FOREIGN_CLASS_BYTES / TXA_FOREIGN_CLASS_MAX bytes, at least one. */
static uint32_t class_max(unsigned c) {
  uint32_t max = TXA_FOREIGN_CLASS_BYTES / txa_classes[c].size;
  if (max > TXA_FOREIGN_CLASS_MAX) max = TXA_FOREIGN_CLASS_MAX;
  return max ? max : 1;
}

/* pre: class c's list was just emptied by a malloc. */
void txa_foreign_grow(txa_heap *h, unsigned c) {
  uint32_t cap = (uint32_t)h->foreign_cap[c] * 2, max = class_max(c);
  h->foreign_cap[c] = (uint16_t)(cap < max ? cap : max);
}

void txa_foreign_reset(txa_heap *h) {
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    uint32_t start = c < txa_class_count ? class_max(c) : 0;
    if (start > TXA_FOREIGN_START) start = TXA_FOREIGN_START;
    h->foreign[c] = NULL;
    h->foreign_count[c] = 0;
    h->foreign_cap[c] = (uint16_t)(txa_g.foreign_reuse ? start : 0);
  }
  h->foreign_bytes = 0;
}

void txa_foreign_flush(txa_heap *h) {
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    unsigned kind = txa_class_kind(c);
    void *p = h->foreign[c];
    while (p) {
      void *next = ((void **)p)[1];
      txa_block *b = txa_block_of((uintptr_t)p, kind);
      txa_public_push(b, p, b->key_shared);
      p = next;
    }
  }
  txa_foreign_reset(h);
}
