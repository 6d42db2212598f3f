#define _GNU_SOURCE
/* The C++ replaceable global allocation functions of libtxalloc.so: every form of operator
 * new and delete (plain and array; nothrow; sized delete; C++17 align_val_t), so that a
 * C++ program's allocations reach txalloc directly instead of through libstdc++'s
 * operator new and then malloc.
 *
 * Written in C under the Itanium C++ ABI's mangled names, so that the library needs no C++
 * runtime: a C program that preloads it does not load libstdc++. The two things only the
 * C++ runtime can do, reading the installed std::new_handler and throwing std::bad_alloc,
 * are reached through weak references (null when no C++ runtime is in the global scope,
 * then looked up by name when an allocation fails). The file is compiled with -fexceptions:
 * a new_handler may throw, and that exception unwinds through operator new.
 *
 * Semantics ([new.delete]): the throwing forms retry after calling the new_handler while
 * one is installed and throw std::bad_alloc when none is; new of 0 bytes returns a unique
 * pointer; the nothrow forms return NULL where the throwing forms would throw, and catch
 * what a new_handler throws by delegating the failure path to the C++ runtime's own
 * nothrow operator, which calls these throwing forms (C cannot catch). A size given to
 * sized delete is ignored: txalloc_free finds the object's size class from its address
 * in O(1), and checks the pointer exactly as free() does (bad and double frees reach the
 * error hook). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc/entry.h"
#include "txalloc/txalloc.h"

/* The mangled code of std::size_t: unsigned long on LP64, unsigned int on ILP32. */
#if defined(__LP64__)
#define SIZE_CODE "m"
#else
#define SIZE_CODE "j"
#endif
#define NOTHROW_CODE "RKSt9nothrow_t"
#define ALIGN_CODE "St11align_val_t"

typedef void (*new_handler_fn)(void);

/* The C++ runtime (libstdc++): std::get_new_handler() and std::__throw_bad_alloc(). */
#define GET_NEW_HANDLER_NAME "_ZSt15get_new_handlerv"
#define THROW_BAD_ALLOC_NAME "_ZSt17__throw_bad_allocv"
extern new_handler_fn cxx_get_new_handler(void) __asm__(GET_NEW_HANDLER_NAME) __attribute__((weak));
extern _Noreturn void cxx_throw_bad_alloc(void) __asm__(THROW_BAD_ALLOC_NAME) __attribute__((weak));

/* A C++ runtime function: the weak reference when the runtime was in the global scope at
 * load time; else `name` looked up now through `scope` (RTLD_DEFAULT: a runtime loaded
 * later, globally), then in libstdc++ itself (a runtime that a dlopen'd C++ module keeps
 * in its local scope). NULL when no C++ runtime is loaded. Not cached: this is the
 * out-of-memory path, and a runtime loaded by a module may be unloaded with it. */
static void *cxx_runtime_function(void *weak, void *scope, const char *name) {
  if (weak) return weak;
  void *found = dlsym(scope, name);
  if (found) return found;
  void *runtime = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (!runtime) return NULL;
  found = dlsym(runtime, name);
  dlclose(runtime); /* NOLOAD took a reference; the library stays loaded by its own */
  return found;
}

static new_handler_fn installed_new_handler(void) {
  new_handler_fn (*get)(void) = (new_handler_fn(*)(void))cxx_runtime_function(
      (void *)cxx_get_new_handler, RTLD_DEFAULT, GET_NEW_HANDLER_NAME);
  return get ? get() : NULL;
}

static _Noreturn void throw_bad_alloc(void) {
  void (*throw_fn)(void) = (void (*)(void))cxx_runtime_function((void *)cxx_throw_bad_alloc,
                                                                RTLD_DEFAULT, THROW_BAD_ALLOC_NAME);
  if (throw_fn) throw_fn();
  static const char message[] = "txalloc: operator new: out of memory, and no C++ runtime "
                                "is loaded to throw std::bad_alloc\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  abort();
}

static int power_of_two(size_t x) { return x && !(x & (x - 1)); }

/* One attempt: an alignment of 0 means the default one (16 bytes). txalloc_malloc(0)
 * returns a unique pointer already; the aligned path asks for at least one byte. */
static inline void *try_allocate(size_t size, size_t alignment) {
  if (!alignment) return txa_entry_malloc(size);
  return txalloc_aligned_alloc(alignment, size ? size : 1);
}

/* After a failed first attempt: retry after each new_handler call; NULL once none is set
 * (an exception a handler throws propagates). */
static void *retry_with_handlers(size_t size, size_t alignment) {
  for (;;) {
    new_handler_fn handler = installed_new_handler();
    if (!handler) return NULL;
    handler();
    void *p = try_allocate(size, alignment);
    if (p) return p;
  }
}

/* The throwing forms after a failed first attempt: bad_alloc when no new_handler is set (or
 * is left). Out of line, so that the fast path keeps no frame. */
static __attribute__((noinline, cold)) void *throwing_slow_path(size_t size, size_t alignment) {
  if (alignment && !power_of_two(alignment)) throw_bad_alloc(); /* as libstdc++ does */
  void *p = retry_with_handlers(size, alignment);
  if (!p) throw_bad_alloc();
  return p;
}

static inline void *allocate_or_throw(size_t size, size_t alignment) {
  void *p = try_allocate(size, alignment);
  if (__builtin_expect(p != NULL, 1)) return p;
  return throwing_slow_path(size, alignment);
}

/* The nothrow forms after a failed first attempt with a new_handler installed: the C++
 * runtime's own nothrow operator (found after this library in the lookup order, RTLD_NEXT,
 * or in libstdc++ itself) calls the throwing operator, which is ours, and turns whatever
 * escapes into NULL. Without it, the handler is called here and an exception it throws
 * propagates. */
typedef void *(*nothrow_new_fn)(size_t size, const void *tag);
typedef void *(*nothrow_aligned_new_fn)(size_t size, size_t alignment, const void *tag);
static const char nothrow_tag; /* the std::nothrow_t argument: an empty class, never read */

static __attribute__((noinline, cold)) void *nothrow_slow_path(size_t size, size_t alignment) {
  if (alignment) {
    nothrow_aligned_new_fn form = (nothrow_aligned_new_fn)cxx_runtime_function(
        NULL, RTLD_NEXT, "_Znw" SIZE_CODE ALIGN_CODE NOTHROW_CODE);
    if (form) return form(size, alignment, &nothrow_tag);
  } else {
    nothrow_new_fn form =
        (nothrow_new_fn)cxx_runtime_function(NULL, RTLD_NEXT, "_Znw" SIZE_CODE NOTHROW_CODE);
    if (form) return form(size, &nothrow_tag);
  }
  return retry_with_handlers(size, alignment);
}

static inline void *allocate_or_null(size_t size, size_t alignment) {
  void *p = try_allocate(size, alignment);
  if (__builtin_expect(p != NULL, 1)) return p;
  if ((alignment && !power_of_two(alignment)) || !installed_new_handler()) return NULL;
  return nothrow_slow_path(size, alignment);
}

/* The 20 functions, by declaration: the C name says which operator, the label is the
 * mangled name the C++ compiler emits for it. */
#pragma GCC visibility push(default)
void *cxx_new(size_t size) __asm__("_Znw" SIZE_CODE);
void *cxx_new_array(size_t size) __asm__("_Zna" SIZE_CODE);
void *cxx_new_nothrow(size_t size, const void *tag) __asm__("_Znw" SIZE_CODE NOTHROW_CODE);
void *cxx_new_array_nothrow(size_t size, const void *tag) __asm__("_Zna" SIZE_CODE NOTHROW_CODE);
void *cxx_new_aligned(size_t size, size_t alignment) __asm__("_Znw" SIZE_CODE ALIGN_CODE);
void *cxx_new_array_aligned(size_t size, size_t alignment) __asm__("_Zna" SIZE_CODE ALIGN_CODE);
void *cxx_new_aligned_nothrow(size_t size, size_t alignment,
                              const void *tag) __asm__("_Znw" SIZE_CODE ALIGN_CODE NOTHROW_CODE);
void *
cxx_new_array_aligned_nothrow(size_t size, size_t alignment,
                              const void *tag) __asm__("_Zna" SIZE_CODE ALIGN_CODE NOTHROW_CODE);

void cxx_delete(void *ptr) __asm__("_ZdlPv");
void cxx_delete_array(void *ptr) __asm__("_ZdaPv");
void cxx_delete_sized(void *ptr, size_t size) __asm__("_ZdlPv" SIZE_CODE);
void cxx_delete_array_sized(void *ptr, size_t size) __asm__("_ZdaPv" SIZE_CODE);
void cxx_delete_nothrow(void *ptr, const void *tag) __asm__("_ZdlPv" NOTHROW_CODE);
void cxx_delete_array_nothrow(void *ptr, const void *tag) __asm__("_ZdaPv" NOTHROW_CODE);
void cxx_delete_aligned(void *ptr, size_t alignment) __asm__("_ZdlPv" ALIGN_CODE);
void cxx_delete_array_aligned(void *ptr, size_t alignment) __asm__("_ZdaPv" ALIGN_CODE);
void cxx_delete_sized_aligned(void *ptr, size_t size,
                              size_t alignment) __asm__("_ZdlPv" SIZE_CODE ALIGN_CODE);
void cxx_delete_array_sized_aligned(void *ptr, size_t size,
                                    size_t alignment) __asm__("_ZdaPv" SIZE_CODE ALIGN_CODE);
void cxx_delete_aligned_nothrow(void *ptr, size_t alignment,
                                const void *tag) __asm__("_ZdlPv" ALIGN_CODE NOTHROW_CODE);
void cxx_delete_array_aligned_nothrow(void *ptr, size_t alignment,
                                      const void *tag) __asm__("_ZdaPv" ALIGN_CODE NOTHROW_CODE);
#pragma GCC visibility pop

void *cxx_new(size_t size) { return allocate_or_throw(size, 0); }
void *cxx_new_array(size_t size) { return allocate_or_throw(size, 0); }
void *cxx_new_nothrow(size_t size, const void *tag) {
  (void)tag;
  return allocate_or_null(size, 0);
}
void *cxx_new_array_nothrow(size_t size, const void *tag) {
  (void)tag;
  return allocate_or_null(size, 0);
}
void *cxx_new_aligned(size_t size, size_t alignment) { return allocate_or_throw(size, alignment); }
void *cxx_new_array_aligned(size_t size, size_t alignment) {
  return allocate_or_throw(size, alignment);
}
void *cxx_new_aligned_nothrow(size_t size, size_t alignment, const void *tag) {
  (void)tag;
  return allocate_or_null(size, alignment);
}
void *cxx_new_array_aligned_nothrow(size_t size, size_t alignment, const void *tag) {
  (void)tag;
  return allocate_or_null(size, alignment);
}

/* Every delete is txalloc_free: NULL is a no-op there, and the size and alignment are
 * not needed to find the object. */
void cxx_delete(void *ptr) { txa_entry_free(ptr); }
void cxx_delete_array(void *ptr) { txa_entry_free(ptr); }
void cxx_delete_sized(void *ptr, size_t size) {
  (void)size;
  txa_entry_free(ptr);
}
void cxx_delete_array_sized(void *ptr, size_t size) {
  (void)size;
  txa_entry_free(ptr);
}
void cxx_delete_nothrow(void *ptr, const void *tag) {
  (void)tag;
  txa_entry_free(ptr);
}
void cxx_delete_array_nothrow(void *ptr, const void *tag) {
  (void)tag;
  txa_entry_free(ptr);
}
void cxx_delete_aligned(void *ptr, size_t alignment) {
  (void)alignment;
  txa_entry_free(ptr);
}
void cxx_delete_array_aligned(void *ptr, size_t alignment) {
  (void)alignment;
  txa_entry_free(ptr);
}
void cxx_delete_sized_aligned(void *ptr, size_t size, size_t alignment) {
  (void)size, (void)alignment;
  txa_entry_free(ptr);
}
void cxx_delete_array_sized_aligned(void *ptr, size_t size, size_t alignment) {
  (void)size, (void)alignment;
  txa_entry_free(ptr);
}
void cxx_delete_aligned_nothrow(void *ptr, size_t alignment, const void *tag) {
  (void)alignment, (void)tag;
  txa_entry_free(ptr);
}
void cxx_delete_array_aligned_nothrow(void *ptr, size_t alignment, const void *tag) {
  (void)alignment, (void)tag;
  txa_entry_free(ptr);
}
