/* The size-class table. Sizes: 16-byte steps up to 128 B, then eight classes per doubling
 * up to 128 KiB, so above 128 B a request wastes less than 12.5 % of its class (between
 * 64 and 128 B the 16-byte alignment floor dominates: at most 15 B). Classes up to 1 KiB
 * live in 16 KiB blocks (at least 15 objects), larger ones in 1 MiB spans (at least 7).
 *
 * Each class's first object sits at the block header rounded up to the class's natural
 * alignment (the largest power of two dividing its size), so every object of a class is
 * aligned to that power of two: a power-of-two size is aligned to itself (McRT §3.1), and
 * aligned allocation picks a class whose alignment suffices. The first-object offset and
 * the capacity are per class here and copied into each block, so a placement policy can
 * change them by rewriting this one function. */
#include "alloc/internal.h"

txa_class_info txa_classes[TXA_CLASSES];
uint8_t txa_class_by_16[TXA_SMALL_MAX / 16 + 1];
uint8_t txa_class_by_128[TXA_MEDIUM_MAX / 128 + 1];

static uint32_t natural_alignment(uint32_t size) { return size & (~size + 1); }

void txa_classes_init(void) {
  unsigned n = 0;
  for (uint32_t s = 16; s <= 128; s += 16) txa_classes[n++].size = s;
  for (uint32_t base = 128; base < TXA_MEDIUM_MAX; base *= 2)
    for (uint32_t k = 1; k <= 8; k++) txa_classes[n++].size = base + k * (base / 8);
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    txa_class_info *ci = &txa_classes[c];
    uint32_t align = natural_alignment(ci->size);
    uint32_t first = (TXA_BLOCK_HEADER + align - 1) / align * align;
    ci->span_shift = ci->size <= TXA_SMALL_MAX ? TXA_BLOCK_SHIFT : TXA_GRANULE_SHIFT;
    ci->first_offset = first;
    ci->capacity = (uint32_t)((((size_t)1 << ci->span_shift) - first) / ci->size);
    ci->align = align;
    ci->inverse = (((uint64_t)1 << 40) / ci->size) + 1;
  }
  unsigned c = 0;
  for (size_t g = 0; g <= TXA_SMALL_MAX / 16; g++) {
    while (txa_classes[c].size < g * 16) c++;
    txa_class_by_16[g] = (uint8_t)c;
  }
  c = 0;
  for (size_t g = 0; g <= TXA_MEDIUM_MAX / 128; g++) {
    while (txa_classes[c].size < g * 128) c++;
    txa_class_by_128[g] = (uint8_t)c;
  }
}
