/* GCC's C++ support in transactions: the exception calls and the transactional clones of
 * the global operator new and delete, which libitm exports under their mangled names.
 *
 * new and delete inside a transaction are tm_malloc and tm_free (given back on rollback,
 * freed at the top level's commit), which assumes the program keeps the library's own
 * operator new and delete (src/preload/cxx_operators.c: txalloc_malloc, txalloc_free).
 * Exceptions: an exception allocated in a transaction is freed if the transaction rolls
 * back; a throw that leaves the block commits it (_ITM_commitTransactionEH). The C++
 * runtime is reached through weak references, so C programs load this library without
 * libstdc++. */
#include <stddef.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

extern void *__cxa_allocate_exception(size_t size) __attribute__((weak));
extern void __cxa_free_exception(void *exception) __attribute__((weak));
extern _Noreturn void __cxa_throw(void *object, void *type_info, void (*destructor)(void *))
    __attribute__((weak));
extern void *__cxa_begin_catch(void *exception) __attribute__((weak));
extern void __cxa_end_catch(void) __attribute__((weak));
extern void *_Znwm(size_t size) __attribute__((weak)); /* operator new: throws bad_alloc */

static void need(const void *function) {
  if (!function) itm_fatal("a C++ transaction call without the C++ runtime loaded");
}

static void free_exception(void *exception) { __cxa_free_exception(exception); }

void *_ITM_cxa_allocate_exception(size_t size) {
  need((const void *)__cxa_allocate_exception);
  void *exception = __cxa_allocate_exception(size);
  _ITM_addUserUndoAction(free_exception, exception);
  return exception;
}

void _ITM_cxa_free_exception(void *exception) {
  need((const void *)__cxa_free_exception);
  __cxa_free_exception(exception);
}

void _ITM_cxa_throw(void *object, void *type_info, void (*destructor)(void *)) {
  need((const void *)__cxa_throw);
  __cxa_throw(object, type_info, destructor);
}

void *_ITM_cxa_begin_catch(void *exception) {
  need((const void *)__cxa_begin_catch);
  return __cxa_begin_catch(exception);
}

void _ITM_cxa_end_catch(void) {
  need((const void *)__cxa_end_catch);
  __cxa_end_catch();
}

/* The clones' mangled names: operator new(size_t), new[](size_t), and their nothrow
 * forms; operator delete(void *), delete[](void *), their nothrow and sized forms. */
#pragma GCC visibility push(default)
void *_ZGTtnwm(size_t size);
void *_ZGTtnam(size_t size);
void *_ZGTtnwmRKSt9nothrow_t(size_t size, const void *nothrow);
void *_ZGTtnamRKSt9nothrow_t(size_t size, const void *nothrow);
void _ZGTtdlPv(void *ptr);
void _ZGTtdaPv(void *ptr);
void _ZGTtdlPvRKSt9nothrow_t(void *ptr, const void *nothrow);
void _ZGTtdaPvRKSt9nothrow_t(void *ptr, const void *nothrow);
void _ZGTtdlPvm(void *ptr, size_t size);
void _ZGTtdlPvmRKSt9nothrow_t(void *ptr, size_t size, const void *nothrow);
#pragma GCC visibility pop

static void *new_or_throw(size_t size) {
  void *p = tm_malloc(size ? size : 1);
  if (p) return p;
  need((const void *)_Znwm);
  return _Znwm(size); /* out of memory: the C++ runtime's new handler, or bad_alloc */
}

void *_ZGTtnwm(size_t size) { return new_or_throw(size); }
void *_ZGTtnam(size_t size) { return new_or_throw(size); }
void *_ZGTtnwmRKSt9nothrow_t(size_t size, const void *nothrow) {
  (void)nothrow;
  return tm_malloc(size ? size : 1);
}
void *_ZGTtnamRKSt9nothrow_t(size_t size, const void *nothrow) {
  (void)nothrow;
  return tm_malloc(size ? size : 1);
}
void _ZGTtdlPv(void *ptr) { tm_free(ptr); }
void _ZGTtdaPv(void *ptr) { tm_free(ptr); }
void _ZGTtdlPvRKSt9nothrow_t(void *ptr, const void *nothrow) {
  (void)nothrow;
  tm_free(ptr);
}
void _ZGTtdaPvRKSt9nothrow_t(void *ptr, const void *nothrow) {
  (void)nothrow;
  tm_free(ptr);
}
void _ZGTtdlPvm(void *ptr, size_t size) {
  (void)size;
  tm_free(ptr);
}
void _ZGTtdlPvmRKSt9nothrow_t(void *ptr, size_t size, const void *nothrow) {
  (void)size;
  (void)nothrow;
  tm_free(ptr);
}
