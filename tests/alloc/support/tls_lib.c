/* A dlopen'ed module with thread-local storage, for preload_dlopen.c: every thread that
 * touches it makes glibc allocate the module's TLS block and possibly grow the thread's
 * DTV (with malloc/realloc/free, interposed by txalloc). */
#include <string.h>

int tls_lib_touch(int v);

static __thread char tls_buffer[8192];
static __thread int tls_counter;

__attribute__((visibility("default"))) int tls_lib_touch(int v) {
  memset(tls_buffer, v & 0xff, sizeof tls_buffer);
  tls_counter += v;
  return tls_counter + tls_buffer[sizeof tls_buffer - 1];
}
