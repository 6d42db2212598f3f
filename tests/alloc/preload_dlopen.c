/* dlopen, dlsym, dlerror and dlclose under LD_PRELOAD=libtxalloc.so: ld.so and libc
 * allocate and free through the interposed functions (link maps, search paths, error
 * strings, DTVs and TLS blocks of threads), and memory handed between ld.so's early
 * allocator and txalloc must never reach txalloc's free as a foreign pointer.
 *
 * Workload: 300 rounds of dlopen + dlsym + call + dlclose of a module with thread-local
 * storage (support/tls_lib.c, path given at build time) and of libm; failing dlopens of a
 * missing library (dlerror strings); and 8 threads per round (more than cores) that each
 * call into the TLS module (glibc allocates the module's TLS block and may grow the
 * thread's DTV) while the main thread dlopens and dlcloses. The program must finish with
 * correct results and no txalloc error (an error would abort). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef TLS_LIB_PATH
#error "TLS_LIB_PATH must name support/tls_lib.c's module"
#endif

typedef int (*touch_fn)(int);
static touch_fn touch;
static pthread_barrier_t start;

static void *thread_main(void *arg) {
  int v = (int)(intptr_t)arg;
  pthread_barrier_wait(&start);
  int r = touch(v);
  /* The first call in this thread: counter = v, buffer bytes = v & 0xff. */
  return (void *)(intptr_t)(r == v + (signed char)(v & 0xff) ? 0 : 1);
}

int main(void) {
  int failures = 0;
  for (int round = 0; round < 300; round++) {
    void *h = dlopen(TLS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    CHECKF(h != NULL, "dlopen(%s): %s", TLS_LIB_PATH, dlerror());
    if (!h) break;
    touch = (touch_fn)dlsym(h, "tls_lib_touch");
    CHECK(touch != NULL);
    if (!touch) break;
    if (round % 10 == 0) {
      enum { T = 8 };
      pthread_t t[T];
      pthread_barrier_init(&start, NULL, T);
      for (int i = 0; i < T; i++)
        if (pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)(i + 1)) != 0) return 2;
      for (int i = 0; i < T; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        failures += rv != NULL;
      }
      pthread_barrier_destroy(&start);
    } else {
      (void)touch(3); /* the main thread's TLS block of the module */
    }
    void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(m != NULL);
    double (*cos_fn)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
    CHECK(cos_fn != NULL && cos_fn(0.0) == 1.0);
    if (m) dlclose(m);
    void *missing = dlopen("libtxalloc-no-such-library.so", RTLD_NOW);
    CHECK(missing == NULL);
    const char *err = dlerror();
    CHECK(err != NULL && strstr(err, "no-such-library") != NULL);
    CHECK(dlsym(h, "no_such_symbol") == NULL && dlerror() != NULL);
    dlclose(h);
  }
  CHECKF(failures == 0, "%d threads saw wrong thread-local values", failures);
  return check_exit();
}
