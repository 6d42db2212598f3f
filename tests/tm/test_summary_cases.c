/* tm_record_commit's inline case (src/tm/stm_internal.h) against tm_record_commit_general
 * (stm_attribution.c) on every combination of the summary fields that the inline test
 * reads, rather than test_summary's random states: every count 0..15, the stripe's own
 * tag, another tag, tag 0, TM_TAG_MIXED, unions 0, of the written word's bit, of other
 * bits, of every bit, lasts 0 and not, bases 0, the largest and a middle one, every word
 * of the stripe, and prev versions at and around the base field's wrap (2^20). Run at
 * every shift of the inline case (3..7, CMakeLists.txt) and at 8 (the general function in
 * both: more than 16 words per stripe). The expected branch is also checked from the
 * fields themselves: count 1..7, a tag other than MIXED and (the same tag or union 0)
 * extend the window; anything else restarts it. */
#include "tm/stm_internal.h"
#include "tm_test.h"

static uint64_t summary(uint64_t base, uint64_t count, uint64_t tag, uint64_t all, uint64_t last) {
  return base << 44 | count << 40 | tag << 32 | all << 16 | last;
}

int main(void) {
  TM_ATOMIC {} /* starts the runtime: tm_cfg holds the configuration */
  unsigned shift = stm_cfg.shift;
  printf("shift %u, attribution %d\n", shift, (int)stm_cfg.attribution);
  unsigned words = shift >= 7 ? 16 : 1u << (shift - 3); /* words of a stripe with a bit */
  const uint64_t bases[] = {0, TM_SUMMARY_BASE_MASK, 0x5a5a5};
  const uint64_t prevs[] = {
      0, 1, TM_SUMMARY_BASE_MASK, TM_SUMMARY_BASE_MASK + 1, (UINT64_C(1) << 40) - 1, 0x123456789};
  tm_wentry entry;
  memset(&entry, 0, sizeof entry);
  unsigned long compared = 0, extended = 0, mismatches = 0;
  for (unsigned stripe_i = 0; stripe_i < 3; stripe_i++) {
    uintptr_t stripe_addr = ((uintptr_t)0x7f0000 + stripe_i * 977) << shift;
    uint64_t own = tm_stripe_tag(stripe_addr >> shift);
    for (unsigned word = 0; word < (shift > 7 ? 1u << (shift - 3) : words); word++) {
      entry.addr = stripe_addr + 8 * word;
      uint64_t bit = tm_word_bit(entry.addr);
      const uint64_t tags[] = {own, (own + 1) % 255, 0, TM_TAG_MIXED};
      const uint64_t unions[] = {0, bit, 0xffff & ~bit, 0xffff, bit | 1};
      const uint64_t lasts[] = {0, bit, 0x8000};
      for (uint64_t count = 0; count < 16; count++)
        for (size_t ti = 0; ti < sizeof tags / sizeof *tags; ti++)
          for (size_t ui = 0; ui < sizeof unions / sizeof *unions; ui++)
            for (size_t li = 0; li < sizeof lasts / sizeof *lasts; li++)
              for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++)
                for (size_t pi = 0; pi < sizeof prevs / sizeof *prevs; pi++) {
                  uint64_t old = summary(bases[bi], count, tags[ti], unions[ui], lasts[li]);
                  uint64_t prev = tm_version_word(prevs[pi]);
                  uint64_t a[2] = {0x1111, old}, g[2] = {0x1111, old};
                  tm_record_commit(a, &entry, prev);
                  tm_record_commit_general(g, &entry, prev);
                  compared++;
                  if (a[0] != 0x1111 || a[1] != g[1]) {
                    if (mismatches++ < 5)
                      CHECKF(0, "addr %#lx, summary %#llx, prev %#llx: inline %#llx, general %#llx",
                             (unsigned long)entry.addr, (unsigned long long)old,
                             (unsigned long long)prev, (unsigned long long)a[1],
                             (unsigned long long)g[1]);
                    continue;
                  }
                  uint64_t tag = shift > 7 ? TM_TAG_MIXED : own;
                  uint64_t wbits = shift > 7 ? 0xffff : bit;
                  bool extend = count >= 1 && count < TM_SUMMARY_WINDOW &&
                                tags[ti] != TM_TAG_MIXED && tag != TM_TAG_MIXED &&
                                (tags[ti] == tag || unions[ui] == 0);
                  uint64_t want =
                      extend ? summary(bases[bi], count + 1, tag, unions[ui] | wbits, wbits)
                             : summary(prevs[pi] & TM_SUMMARY_BASE_MASK, 1, tag, wbits, wbits);
                  extended += extend;
                  if (a[1] != want && mismatches++ < 5)
                    CHECKF(0, "addr %#lx, summary %#llx, prev %#llx: %#llx, by the fields %#llx",
                           (unsigned long)entry.addr, (unsigned long long)old,
                           (unsigned long long)prev, (unsigned long long)a[1],
                           (unsigned long long)want);
                }
    }
  }
  printf("%lu states compared, %lu extended, %lu mismatches\n", compared, extended, mismatches);
  CHECK(mismatches == 0);
  CHECK(shift > 7 ? extended == 0 : extended > 0);
  return check_exit();
}
