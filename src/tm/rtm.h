/* rtm, Intel's Restricted Transactional Memory (docs/htm.md, "rtm"): what its files offer
 * the rest of the runtime.
 *
 *   rtm_detect.c  whether this CPU runs RTM transactions: CPUID, then a probe
 *   rtm.c         the backend table: hardware attempts, the abort status, the fallback
 *                 policy (htm-emul's, or lock elision's when tle runs over rtm) */
#ifndef TXALLOC_TM_RTM_H
#define TXALLOC_TM_RTM_H

#include <stdio.h>

/* NULL when RTM transactions can commit on this CPU, else why not (one clause, for a
 * message). Decided once (CPUID, then up to RTM_PROBE_TRIES empty transactions), then
 * cached. */
#define RTM_PROBE_TRIES 64
const char *rtm_unusable_reason(void);

/* The configuration needs RTM (`choice`, e.g. "TXALLOC_TM=rtm"): where it is unusable,
 * prints one line with the reason and the choices to make `instead`, and exits with
 * status 2, as the bench programs refuse a bad option value. */
void rtm_require(const char *choice, const char *instead);

/* For lock elision (tle.c): rtm's operations under the policy in htm_cfg (retries, skip,
 * wait), which the caller sets. */
void rtm_install(const char *name, void (*print_config)(FILE *out));

#endif
