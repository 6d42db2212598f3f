/* htm-emul's capacity model: the lines an attempt tracks, and the cache geometry that
 * bounds them (docs/htm.md, "Capacity").
 *
 * A written line occupies a way of its set in the simulated L1 (set = line mod htm_l1_sets,
 * htm_l1_ways ways): the write set lives in L1, so a written line that needs one way more
 * than its set has aborts the attempt. A read line occupies a way of its set in the
 * read-set structure (htm_read_sets x htm_read_ways, by default a 256 KiB 8-way L2): reads
 * are tracked beyond L1, and a read line that needs one way more than its set has aborts.
 * A line both read and written takes a way in each. Only the lines of the program's
 * transactional accesses count: the runtime's own logs and the fallback lock's line do not
 * (a hardware TM keeps no logs; the one lock line would take one way of one set).
 *
 * Per attempt: an open-addressing map from line number to how it is tracked (a slot is
 * valid when its epoch is the attempt's; the next attempt bumps the epoch), the list of
 * tracked lines in order (to release them), and the ways used per set (zeroed through the
 * list at the release). */
#include <sys/mman.h>

#include "tm/htm_emul_internal.h"

static void *map_or_die(size_t bytes) {
  void *p =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) tm_fatal("htm-emul: cannot map a descriptor's tracking state");
  return p;
}

void htm_capacity_thread_init(htm_thread *t) {
  size_t slots = 16;
  while (slots < 2 * htm_cfg.max_lines) slots *= 2;
  t->track = map_or_die(slots * sizeof *t->track);
  t->track_mask = slots - 1;
  t->epoch = 1;
  t->lines = map_or_die(htm_cfg.max_lines * sizeof *t->lines);
  t->write_ways = map_or_die(htm_cfg.l1_sets * sizeof *t->write_ways);
  t->read_ways = map_or_die(htm_cfg.read_sets * sizeof *t->read_ways);
}

static inline size_t track_hash(uintptr_t line) {
  return (size_t)((line * 0x9E3779B97F4A7C15ull) >> 32);
}

bool htm_track(htm_thread *me, uintptr_t line, unsigned how) {
  size_t i = track_hash(line) & me->track_mask;
  htm_track_slot *s;
  for (;; i = (i + 1) & me->track_mask) {
    s = &me->track[i];
    if (s->epoch != me->epoch) break;
    if (s->line == line) {
      if (s->how & how) return true; /* tracked so already */
      goto add_mode;
    }
  }
  s->line = line;
  s->epoch = me->epoch;
  s->how = 0;
  me->lines[me->nlines++] = line;
add_mode:
  if (how == HTM_TRACK_WRITE) {
    uint32_t *used = &me->write_ways[line % htm_cfg.l1_sets];
    if (*used == htm_cfg.l1_ways) return false;
    ++*used;
  } else {
    uint32_t *used = &me->read_ways[line % htm_cfg.read_sets];
    if (*used == htm_cfg.read_ways) return false;
    ++*used;
  }
  s->how |= how;
  htm_line_acquire(me, line, how == HTM_TRACK_WRITE);
  return true;
}

void htm_track_release_all(htm_thread *me) {
  for (size_t i = 0; i < me->nlines; i++) {
    uintptr_t line = me->lines[i];
    htm_line_release(me, line);
    me->write_ways[line % htm_cfg.l1_sets] = 0;
    me->read_ways[line % htm_cfg.read_sets] = 0;
  }
  me->nlines = 0;
  if (++me->epoch == 0) { /* wrapped: no slot may look valid */
    for (size_t i = 0; i <= me->track_mask; i++) me->track[i].epoch = 0;
    me->epoch = 1;
  }
}
