/* Transactional byte ranges: the wide barriers' types, and memcpy, memmove and memset
 * inside transactions. A range is read one aligned word at a time (tm_load_u64: the STM's
 * granule; an aligned word never crosses a page, so the bytes around the range are
 * readable) and written in the largest aligned pieces of 8, 4, 2 or 1 bytes, so that a
 * store touches exactly its bytes. Copies go through a buffer on the stack, a chunk at a
 * time, backwards where a memmove's destination overlaps the end of its source. */
#include <string.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

#define ITM_CHUNK_BYTES 512

void itm_load_bytes(void *dst, const void *src, size_t size) {
  uintptr_t a = (uintptr_t)src, end = a + size;
  unsigned char *out = dst;
  while (a < end) {
    uintptr_t word = a & ~(uintptr_t)7;
    uint64_t v = tm_load_inline_u64((const uint64_t *)word);
    size_t skip = a - word, n = 8 - skip;
    if (n > end - a) n = end - a;
    memcpy(out, (const unsigned char *)&v + skip, n);
    out += n;
    a += n;
  }
}

void itm_store_bytes(void *dst, const void *src, size_t size) {
  if (itm_on_stack(dst, size)) {
    itm_stack_store(dst, src, size);
    return;
  }
  uintptr_t a = (uintptr_t)dst, end = a + size;
  const unsigned char *in = src;
  while (a < end) {
    size_t left = end - a;
    if ((a & 7) == 0 && left >= 8) {
      uint64_t v;
      memcpy(&v, in, 8);
      tm_store_u64((uint64_t *)a, v);
      a += 8, in += 8;
    } else if ((a & 3) == 0 && left >= 4) {
      uint32_t v;
      memcpy(&v, in, 4);
      tm_store_u32((uint32_t *)a, v);
      a += 4, in += 4;
    } else if ((a & 1) == 0 && left >= 2) {
      uint16_t v;
      memcpy(&v, in, 2);
      tm_store_u16((uint16_t *)a, v);
      a += 2, in += 2;
    } else {
      tm_store_u8((uint8_t *)a, *in);
      a += 1, in += 1;
    }
  }
}

static void copy_chunk(unsigned char *d, const unsigned char *s, size_t n, bool read_tx,
                       bool write_tx) {
  unsigned char buf[ITM_CHUNK_BYTES];
  if (read_tx)
    itm_load_bytes(buf, s, n);
  else
    memcpy(buf, s, n);
  if (write_tx)
    itm_store_bytes(d, buf, n);
  else
    memcpy(d, buf, n);
}

static void copy(void *dst, const void *src, size_t size, bool read_tx, bool write_tx) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d > s && d < s + size) { /* overlap: the source's end first */
    while (size) {
      size_t n = size < ITM_CHUNK_BYTES ? size : ITM_CHUNK_BYTES;
      size -= n;
      copy_chunk(d + size, s + size, n, read_tx, write_tx);
    }
    return;
  }
  for (size_t done = 0; done < size; done += ITM_CHUNK_BYTES) {
    size_t n = size - done < ITM_CHUNK_BYTES ? size - done : ITM_CHUNK_BYTES;
    copy_chunk(d + done, s + done, n, read_tx, write_tx);
  }
}

/* memcpy's ranges do not overlap, so memmove's copy serves both. */
#define ITM_DEFINE_COPY(V, read_tx, write_tx)                                                      \
  void _ITM_memcpy##V(void *dst, const void *src, size_t size) {                                   \
    copy(dst, src, size, read_tx, write_tx);                                                       \
  }                                                                                                \
  void _ITM_memmove##V(void *dst, const void *src, size_t size) {                                  \
    copy(dst, src, size, read_tx, write_tx);                                                       \
  }
ITM_FOR_EACH_COPY(ITM_DEFINE_COPY)

static void fill(void *dst, int c, size_t size) {
  unsigned char buf[ITM_CHUNK_BYTES];
  memset(buf, c, size < sizeof buf ? size : sizeof buf);
  for (size_t done = 0; done < size; done += ITM_CHUNK_BYTES)
    itm_store_bytes((unsigned char *)dst + done, buf,
                    size - done < ITM_CHUNK_BYTES ? size - done : ITM_CHUNK_BYTES);
}

void _ITM_memsetW(void *dst, int c, size_t size) { fill(dst, c, size); }
void _ITM_memsetWaR(void *dst, int c, size_t size) { fill(dst, c, size); }
void _ITM_memsetWaW(void *dst, int c, size_t size) { fill(dst, c, size); }
