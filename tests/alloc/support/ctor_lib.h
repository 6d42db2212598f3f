/* What ctor_lib.c's constructor allocated, for preload_constructor.c to check. */
#ifndef TXALLOC_TESTS_CTOR_LIB_H
#define TXALLOC_TESTS_CTOR_LIB_H

#include <stddef.h>

enum { CTOR_LIB_OBJECTS = 32 };
extern void *ctor_lib_objects[CTOR_LIB_OBJECTS];
extern size_t ctor_lib_sizes[CTOR_LIB_OBJECTS];

#endif
