/* env_number.h: an interposer's numeric option, read from the environment without
 * allocating (it runs inside malloc). */
#ifndef TXALLOC_PLACEMENT_ENV_NUMBER_H
#define TXALLOC_PLACEMENT_ENV_NUMBER_H

#include <stdint.h>

/* The decimal value of variable `name` when it is set and within [min, max]; otherwise
 * `fallback`, with a one-line warning on stderr when it was set but unusable. */
uint64_t env_number(const char *name, uint64_t fallback, uint64_t min, uint64_t max);

#endif
