/* The registry of TM backends (tm_backends.def). */
#include "tm/tm_backend.h"

const tm_backend *const tm_backends[] = {
#define TM_BACKEND(id, name, table) &table,
#include "tm/tm_backends.def"
#undef TM_BACKEND
};
const unsigned tm_backend_count = sizeof tm_backends / sizeof *tm_backends;

const char tm_backend_choices[] =
#define TM_BACKEND(id, name, table) "|" name
#include "tm/tm_backends.def"
#undef TM_BACKEND
    ;
