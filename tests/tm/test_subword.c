/* Sub-word and typed accesses.
 *   bytes      u8/u16/u32/u64 stores at every fitting offset of heap objects of odd sizes
 *              (1, 2, 3, 5, 7, 9, 13, 15, 17, 31, 33 bytes) change exactly their bytes; loads
 *              read back the transaction's own stores merged with memory. The runtime must
 *              not read or write past the object: the ASan build checks that.
 *   merge      several sub-word stores into one word, then a wider load of that word.
 *   types      float, double (including -0.0, a NaN payload, a denormal) and pointers
 *              round-trip bit for bit.
 *   neighbours THREADS threads each own one byte (and one u16, one u32) of shared words and
 *              increment it in transactions: a runtime that writes back a whole word with
 *              stale neighbours loses increments.
 * Every design, and tm=lock. */
#include <math.h>

#include "tm_test.h"

#define THREADS 8

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 37);
}

/* Stores `value` (its low `width` bytes) at p and loads it back in one transaction. */
static TM_TEST_TX uint64_t store_and_load(uint8_t *p, unsigned width, uint64_t value) {
  volatile uint64_t loaded = 0;
  TM_ATOMIC {
    switch (width) {
    case 1: tm_store_u8(p, (uint8_t)value); break;
    case 2: tm_store_u16((uint16_t *)p, (uint16_t)value); break;
    case 4: tm_store_u32((uint32_t *)p, (uint32_t)value); break;
    default: tm_store_u64((uint64_t *)p, value);
    }
    switch (width) {
    case 1: loaded = tm_load_u8(p); break;
    case 2: loaded = tm_load_u16((uint16_t *)p); break;
    case 4: loaded = tm_load_u32((uint32_t *)p); break;
    default: loaded = tm_load_u64((uint64_t *)p);
    }
  }
  return loaded;
}

static TM_TEST_TX void store_u8_and_abort(uint8_t *p, uint8_t value) {
  TM_ATOMIC {
    tm_store_u8(p, value);
    tm_abort();
  }
}

static void test_bytes(void) {
  static const size_t sizes[] = {1, 2, 3, 5, 7, 9, 13, 15, 17, 31, 33};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    uint8_t *obj = malloc(n), *expect = malloc(n);
    CHECK(obj && expect);
    for (unsigned width = 1; width <= 8; width *= 2) {
      for (size_t off = 0; off + width <= n; off += width) {
        fill(obj, n, (uint8_t)(off + width));
        memcpy(expect, obj, n);
        uint64_t value = 0xA1B2C3D4E5F60718ull ^ (off * 0x0101010101010101ull);
        uint64_t loaded = store_and_load(obj + off, width, value);
        uint64_t mask = width == 8 ? ~0ull : (1ull << (8 * width)) - 1;
        CHECKF(loaded == (value & mask), "size %zu width %u offset %zu: read own write", n, width,
               off);
        memcpy(expect + off, &value, width); /* little endian */
        CHECKF(memcmp(obj, expect, n) == 0, "size %zu width %u offset %zu: other bytes changed", n,
               width, off);
      }
    }
    /* An aborted store to the last byte. */
    uint8_t last = obj[n - 1];
    store_u8_and_abort(obj + n - 1, (uint8_t)(last + 1));
    CHECK(obj[n - 1] == last);
    free(obj);
    free(expect);
  }
}

static void test_merge(void) {
  uint8_t *obj = malloc(8);
  memset(obj, 0xEE, 8);
  volatile uint64_t whole = 0, half = 0;
  TM_ATOMIC {
    tm_store_u8(obj + 0, 0x01);
    tm_store_u8(obj + 3, 0x04);
    tm_store_u16((uint16_t *)(obj + 4), 0x0605);
    half = tm_load_u16((uint16_t *)obj);
    whole = tm_load_u64((uint64_t *)obj);
    tm_store_u32((uint32_t *)obj, 0x0A0B0C0D);
  }
  CHECKF(half == 0xEE01, "u16 after u8 store: %#llx", (unsigned long long)half);
  CHECKF(whole == 0xEEEE060504EEEE01ull, "u64 after sub-word stores: %#llx",
         (unsigned long long)whole);
  uint64_t now;
  memcpy(&now, obj, 8);
  CHECKF(now == 0xEEEE06050A0B0C0Dull, "memory: %#llx", (unsigned long long)now);
  free(obj);
}

static TM_TEST_TX float float_round_trip(float *p, float v) {
  volatile float got = 0;
  TM_ATOMIC {
    tm_store(p, v);
    got = tm_load(p);
  }
  return got;
}
static TM_TEST_TX double double_round_trip(double *p, double v) {
  volatile double got = 0;
  TM_ATOMIC {
    tm_store(p, v);
    got = tm_load(p);
  }
  return got;
}
static TM_TEST_TX void *ptr_round_trip(void **p, void *v) {
  void *volatile got = (void *)1;
  TM_ATOMIC {
    tm_store(p, v);
    got = tm_load(p);
  }
  return got;
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

static void test_types(void) {
  static const float floats[] = {0.0f, -0.0f, 1.5f, -3.25e-38f, 1e-45f, INFINITY};
  static const double doubles[] = {0.0, -0.0, 3.141592653589793, 4.9e-324, -1e308};
  struct {
    float f;
    char pad;
    double d;
    void *p;
    float f2;
  } *obj = malloc(sizeof *obj);
  memset(obj, 0, sizeof *obj);
  for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
    float g = float_round_trip(&obj->f, floats[i]);
    CHECK(same_bits(&g, &floats[i], sizeof g) && same_bits(&obj->f, &floats[i], sizeof g));
    CHECK(obj->f2 == 0 && obj->pad == 0);
  }
  for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
    double g = double_round_trip(&obj->d, doubles[i]);
    CHECK(same_bits(&g, &doubles[i], sizeof g) && same_bits(&obj->d, &doubles[i], sizeof g));
  }
  uint64_t nan_bits = 0x7FF8DEADBEEF0001ull;
  double nan_value;
  memcpy(&nan_value, &nan_bits, 8);
  uint64_t got_bits;
  (void)double_round_trip(&obj->d, nan_value);
  memcpy(&got_bits, &obj->d, 8);
  CHECKF(got_bits == nan_bits, "NaN payload: %#llx", (unsigned long long)got_bits);

  void *ptrs[] = {NULL, obj, (void *)(uintptr_t)0xFFFFFFFFFFFFFFF0ull, &nan_value};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
    void *got = ptr_round_trip(&obj->p, ptrs[i]);
    CHECK(got == ptrs[i] && obj->p == ptrs[i]);
  }
  free(obj);
}

/* Thread t owns byte t of `bytes`, u16 t of `halves` and u32 t of `words`. */
static uint8_t *bytes;   /* THREADS bytes: one word */
static uint16_t *halves; /* THREADS u16 */
static uint32_t *words;  /* THREADS u32 */
static long neighbour_iterations;

static TM_TEST_TX void neighbour_increment(int t, long i) {
  TM_ATOMIC {
    tm_store_u8(&bytes[t], (uint8_t)(tm_load_u8(&bytes[t]) + 1));
    if (i & 1) tm_store_u16(&halves[t], (uint16_t)(tm_load_u16(&halves[t]) + 1));
    if (i & 2) tm_store_u32(&words[t], tm_load_u32(&words[t]) + 1);
    if ((i & 63) == 0) sched_yield(); /* hold the word while the neighbours try */
  }
}

static void neighbour_worker(int t, void *arg) {
  (void)arg;
  for (long i = 0; i < neighbour_iterations; i++) neighbour_increment(t, i);
}

static void test_neighbours(void) {
  neighbour_iterations = check_scaled(20000, 2000);
  bytes = malloc(THREADS);
  halves = malloc(THREADS * sizeof *halves);
  words = malloc(THREADS * sizeof *words);
  memset(bytes, 0, THREADS);
  memset(halves, 0, THREADS * sizeof *halves);
  memset(words, 0, THREADS * sizeof *words);
  tm_test_run_threads(THREADS, neighbour_worker, NULL);
  long n = neighbour_iterations;
  for (int t = 0; t < THREADS; t++) {
    CHECKF(bytes[t] == (uint8_t)n, "byte %d: %u, expected %u", t, bytes[t], (uint8_t)n);
    CHECKF(halves[t] == (uint16_t)(n / 2), "u16 %d: %u", t, halves[t]);
    CHECKF(words[t] == (uint32_t)(n / 4 * 2 + (n % 4 == 3 ? 1 : 0)), "u32 %d: %u", t, words[t]);
  }
  free(bytes);
  free(halves);
  free(words);
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("subword");
  test_bytes();
  test_merge();
  test_types();
  test_neighbours();
  return check_exit();
}
