/* The checkpoint of one level of an ABI transaction: what _ITM_beginTransaction
 * (itm_begin_x86_64.S) saves so that a rollback can return from it again. Shared by the
 * assembly (the offsets) and C (the struct, checked against the offsets). */
#ifndef TXALLOC_ITM_CHECKPOINT_H
#define TXALLOC_ITM_CHECKPOINT_H

#define ITM_CP_RETURN 64  /* _ITM_beginTransaction's return address */
#define ITM_CP_RBX 72     /* the caller's rbx: the entry keeps the checkpoint in rbx */
#define ITM_CP_FLAGS 80   /* the tm flags the level begins with */
#define ITM_CP_ENTERED 88 /* 0 until the first return */
#define ITM_CP_FIRST 92   /* the answer of the first return */

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

#include "txalloc/tm.h"

/* tm_start_ fills `tm` (the registers, stack pointer and return address inside
 * _ITM_beginTransaction); a rollback returns there, and the entry returns to `caller_return`
 * with the caller's rbx back. Never moves while its level runs (itm_thread_state). */
typedef struct itm_checkpoint {
  tm_context_ tm;
  void *caller_return;
  void *caller_rbx;
  int flags;
  uint32_t properties; /* of the level's block */
  uint32_t entered;    /* 0 until the first return (which answers first_code) */
  uint32_t first_code; /* a_run...Code | a_saveLiveVariables */
  unsigned level;      /* the nesting depth of its level (1 = top) */
} itm_checkpoint;

_Static_assert(offsetof(itm_checkpoint, tm) == 0, "tm_start_ takes the checkpoint itself");
_Static_assert(offsetof(itm_checkpoint, caller_return) == ITM_CP_RETURN, "asm offset");
_Static_assert(offsetof(itm_checkpoint, caller_rbx) == ITM_CP_RBX, "asm offset");
_Static_assert(offsetof(itm_checkpoint, flags) == ITM_CP_FLAGS, "asm offset");
_Static_assert(offsetof(itm_checkpoint, entered) == ITM_CP_ENTERED, "asm offset");
_Static_assert(offsetof(itm_checkpoint, first_code) == ITM_CP_FIRST, "asm offset");
#endif

#endif
