/* Intel RTM's four instructions, written as bytes so that the library needs no -mrtm and
 * assembles with any assembler. They may run only where rtm_unusable_reason() (rtm.h)
 * returned NULL: elsewhere they raise SIGILL. Outside x86-64 they do not exist, and the
 * stubs below are never reached (rtm_unusable_reason says so first).
 *
 * rtm_begin returns RTM_STARTED inside the new hardware transaction. When the transaction
 * aborts, the processor discards every store it made (the stack included), restores the
 * registers of the xbegin and resumes after it with the abort status in EAX: rtm_begin
 * then returns that status, in the frame that called it, with memory as it was then. */
#ifndef TXALLOC_TM_RTM_INSN_H
#define TXALLOC_TM_RTM_INSN_H

#include <stdbool.h>

#define RTM_STARTED (~0u)

#if defined(__x86_64__)
#define RTM_HAVE_INSNS 1

static inline __attribute__((always_inline)) unsigned rtm_begin(void) {
  unsigned status = RTM_STARTED;
  /* xbegin rel32 = 0: the abort path is the next instruction. */
  __asm__ volatile(".byte 0xc7, 0xf8; .long 0" : "+a"(status)::"memory");
  return status;
}

static inline __attribute__((always_inline)) void rtm_end(void) {
  __asm__ volatile(".byte 0x0f, 0x01, 0xd5" ::: "memory"); /* xend */
}

/* xabort imm8: the status of the abort carries `code` in bits 31:24. */
#define RTM_ABORT(code) __asm__ volatile(".byte 0xc6, 0xf8, %P0" ::"i"(code) : "memory")

static inline __attribute__((always_inline)) bool rtm_test(void) {
  unsigned char in;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd6; setnz %0" : "=r"(in)::"memory", "cc"); /* xtest */
  return in != 0;
}

#else
#define RTM_HAVE_INSNS 0
static inline unsigned rtm_begin(void) { return 0; }
static inline void rtm_end(void) {}
#define RTM_ABORT(code) ((void)(code))
static inline bool rtm_test(void) { return false; }
#endif

#endif
