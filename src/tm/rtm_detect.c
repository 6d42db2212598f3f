/* Whether this CPU runs RTM transactions (rtm.h). Three checks, in order:
 *   - CPUID.(EAX=7,ECX=0):EBX[11], RTM. Clear without TSX, and also where the OS or the
 *     firmware turned TSX off (Linux's tsx=off clears it through the TSX_CTRL MSR);
 *   - CPUID.(EAX=7,ECX=0):EDX[11], RTM_ALWAYS_ABORT: microcode that keeps the instructions
 *     but aborts every transaction says so there;
 *   - a probe: up to RTM_PROBE_TRIES empty transactions, of which one must commit. Older
 *     microcode aborts them all without setting RTM_ALWAYS_ABORT; an interrupt or a page
 *     fault aborts one now and then, never sixty-four in a row.
 * The answer is computed once. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "tm/rtm.h"
#include "tm/rtm_insn.h"
#include "util/message.h"

enum { RTM_BIT = 1u << 11, RTM_ALWAYS_ABORT_BIT = 1u << 11 };

static char why[160];

static const char *decide(void) {
#if RTM_HAVE_INSNS
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & RTM_BIT))
    return "this CPU has no RTM (CPUID.(EAX=7,ECX=0):EBX[11] is clear: no TSX, or the OS or "
           "firmware turned it off)";
  if (d & RTM_ALWAYS_ABORT_BIT)
    return "this CPU has RTM but its microcode aborts every transaction "
           "(CPUID.(EAX=7,ECX=0):EDX[11], RTM_ALWAYS_ABORT)";
  unsigned status = 0;
  for (unsigned i = 0; i < RTM_PROBE_TRIES; i++) {
    status = rtm_begin();
    if (status == RTM_STARTED) {
      rtm_end();
      return NULL;
    }
  }
  snprintf(why, sizeof why,
           "this CPU has RTM but it is unusable: %u empty transactions in a row aborted (last "
           "status 0x%x)",
           RTM_PROBE_TRIES, status);
  return why;
#else
  return "RTM exists only on x86-64, and this is not an x86-64 build";
#endif
}

static pthread_once_t decided = PTHREAD_ONCE_INIT;
static const char *reason;

static void decide_once(void) { reason = decide(); }

const char *rtm_unusable_reason(void) {
  pthread_once(&decided, decide_once);
  return reason;
}

void rtm_require(const char *choice, const char *instead) {
  const char *no = rtm_unusable_reason();
  if (!no) return;
  txalloc_message("%s: %s; choose %s instead", choice, no, instead);
  _exit(2);
}
