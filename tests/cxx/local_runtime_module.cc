/* A C++ module that dlopen_host.c loads with RTLD_LOCAL into a C program that preloads
 * libtxalloc.so: libstdc++ arrives with it, after the library's weak references to the C++
 * runtime were bound to null, and stays out of the global scope. operator new is still
 * txalloc's (the preloaded definition comes first), and must find this runtime to call
 * the module's new_handler and to throw bad_alloc. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>

namespace {

int handler_calls;

/* Throws on every third call: each failing allocation calls it three times. */
void give_up_on_third_call() {
  if (++handler_calls % 3 == 0) throw std::bad_alloc();
}

int failures;

void expect(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "local_runtime_module: FAIL: %s\n", what);
    failures++;
  }
}

template <typename New> bool throws_bad_alloc(New allocate) {
  try {
    void *p = allocate();
    asm volatile("" : : "g"(p) : "memory");
  } catch (const std::bad_alloc &) {
    return true;
  }
  return false;
}

} // namespace

/* `owned(p)` says whether txalloc owns p (the host passes txalloc_owner_of). Returns the
 * number of failed checks. */
extern "C" int local_runtime_check(int (*owned)(const void *)) {
  const size_t huge = SIZE_MAX / 2;
  int *small = new int(5);
  expect(owned(small), "operator new in the module is txalloc's");
  delete small;

  expect(throws_bad_alloc([&] { return ::operator new(huge); }), "bad_alloc with no handler");
  expect(::operator new(huge, std::nothrow) == nullptr, "nothrow nullptr with no handler");

  std::set_new_handler(give_up_on_third_call);
  handler_calls = 0;
  expect(throws_bad_alloc([&] { return ::operator new(huge); }), "handler's bad_alloc");
  expect(handler_calls == 3, "the handler was called until it threw");
  handler_calls = 0;
  expect(::operator new(huge, std::nothrow) == nullptr, "nothrow catches the handler's throw");
  expect(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr,
         "aligned nothrow catches the handler's throw");
  expect(handler_calls == 6, "nothrow: the handler was called until it threw, twice");
  std::set_new_handler(nullptr);
  return failures;
}
