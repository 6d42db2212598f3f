/* The C++ global allocation functions of libtxalloc.so (src/preload/cxx_operators.c).
 * Built twice: linked against libtxalloc.so, and plain (run with LD_PRELOAD); the txalloc
 * API is looked up with dlsym in both, so one source serves both.
 *
 * Checks:
 *   - each of the 8 forms of operator new hands out txalloc memory (txalloc_owner_of, the
 *     usable size), and each of the 12 forms of operator delete frees it (the frees
 *     counter); new(0) gives distinct pointers; delete of NULL frees nothing;
 *   - new-expressions (objects, arrays, over-aligned types, std::string, std::map) too;
 *   - aligned new for every alignment from 32 B to 64 KiB, all four aligned forms;
 *   - an impossible size: the throwing forms throw std::bad_alloc, the nothrow forms return
 *     nullptr; a non-power-of-two alignment the same;
 *   - under an address-space cap (a forked child): a new_handler that frees a reserve is
 *     called once and the allocation then succeeds (throwing and nothrow forms); a handler
 *     that throws bad_alloc makes nothrow new return nullptr; another exception thrown by
 *     the handler unwinds through operator new to the caller;
 *   - bad deletes reach txalloc's error hook: a double delete (plain, sized, array,
 *     aligned) as a double free, a stack address as an invalid free;
 *   - 8 threads (more than the cores) allocating std::map nodes and strings that other
 *     threads delete, behind a barrier, many rounds. */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "txalloc/txalloc.h"

/* The test deletes objects twice, and a stack address, on purpose (bad_deletes_are_reported). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

namespace {

/* The txalloc API of whichever libtxalloc.so serves this process. */
struct txalloc_api {
  decltype(&txalloc_owner_of) owner_of;
  decltype(&txalloc_usable_size) usable_size;
  decltype(&txalloc_set_error_hook) set_error_hook;
  decltype(&txalloc_stats_get) stats_get;
};
txalloc_api api;

template <typename F> void find(F &slot, const char *name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  if (!slot) {
    std::fprintf(stderr, "%s not found: run with libtxalloc.so linked or preloaded\n", name);
    std::exit(1);
  }
}

/* Keeps the compiler from pairing a new with its delete and removing both. */
void escape(void *p) { asm volatile("" : : "g"(p) : "memory"); }

uint64_t frees_so_far() {
  txalloc_stats s;
  api.stats_get(&s);
  return s.frees;
}

bool ours(const void *p, size_t size) {
  return p && api.owner_of(p) != TXALLOC_NOT_OURS && api.usable_size(p) >= size;
}

const size_t sizes[] = {0, 1, 24, 100, 4096, 100000, size_t(1) << 20};

/* Every operator delete frees exactly one object, and only one: frees counter + 1. */
template <typename Delete> void check_delete(const char *what, void *p, Delete del) {
  uint64_t before = frees_so_far();
  del(p);
  CHECKF(frees_so_far() == before + 1, "%s: frees %llu -> %llu", what, (unsigned long long)before,
         (unsigned long long)frees_so_far());
}

void every_form_is_txalloc() {
  for (size_t n : sizes) {
    void *p;
    p = ::operator new(n);
    CHECKF(ours(p, n), "new(%zu)", n);
    std::memset(p, 0xa5, n);
    check_delete("delete", p, [](void *q) { ::operator delete(q); });

    p = ::operator new[](n);
    CHECKF(ours(p, n), "new[](%zu)", n);
    check_delete("delete[]", p, [](void *q) { ::operator delete[](q); });

    p = ::operator new(n, std::nothrow);
    CHECKF(ours(p, n), "new(%zu, nothrow)", n);
    check_delete("delete(nothrow)", p, [](void *q) { ::operator delete(q, std::nothrow); });

    p = ::operator new[](n, std::nothrow);
    CHECKF(ours(p, n), "new[](%zu, nothrow)", n);
    check_delete("delete[](nothrow)", p, [](void *q) { ::operator delete[](q, std::nothrow); });

    p = ::operator new(n);
    check_delete("sized delete", p, [n](void *q) { ::operator delete(q, n); });
    p = ::operator new[](n);
    check_delete("sized delete[]", p, [n](void *q) { ::operator delete[](q, n); });
  }

  void *a = ::operator new(0), *b = ::operator new(0);
  CHECK(a && b && a != b);
  ::operator delete(a);
  ::operator delete(b);

  uint64_t before = frees_so_far();
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  ::operator delete(nullptr, size_t(8));
  ::operator delete(nullptr, std::align_val_t(64));
  ::operator delete(nullptr, std::nothrow);
  CHECK(frees_so_far() == before);
}

void new_expressions_are_txalloc() {
  struct alignas(256) over_aligned {
    char bytes[256];
  };
  int *one = new int(7);
  int *many = new int[1000];
  over_aligned *o = new over_aligned;
  over_aligned *os = new over_aligned[3];
  auto *s = new std::string(200, 'x'); /* the string and its buffer */
  CHECK(ours(one, sizeof *one) && ours(many, 1000 * sizeof *many));
  CHECK(ours(o, sizeof *o) && reinterpret_cast<uintptr_t>(o) % 256 == 0);
  CHECK(ours(os, 3 * sizeof *os) && reinterpret_cast<uintptr_t>(os) % 256 == 0);
  CHECK(ours(s, sizeof *s) && ours(s->data(), 200));
  uint64_t before = frees_so_far();
  delete one;
  delete[] many;
  delete o;
  delete[] os;
  delete s;
  CHECKF(frees_so_far() == before + 6, "6 frees, got %llu",
         (unsigned long long)(frees_so_far() - before));

  std::map<int, std::string> m;
  for (int i = 0; i < 100; i++) m[i] = std::string(64, char('a' + i % 26));
  /* A node's value sits inside the node: an interior address of a txalloc object. */
  for (auto &kv : m) CHECK(api.owner_of(&kv) != TXALLOC_NOT_OURS && ours(kv.second.data(), 64));
}

void aligned_forms() {
  for (size_t align = 32; align <= 65536; align *= 2) {
    const size_t asked[] = {1, align, 3 * align + 7};
    for (size_t n : asked) {
      auto al = std::align_val_t(align);
      void *p[4] = {::operator new(n, al), ::operator new[](n, al),
                    ::operator new(n, al, std::nothrow), ::operator new[](n, al, std::nothrow)};
      for (int k = 0; k < 4; k++)
        CHECKF(ours(p[k], n) && reinterpret_cast<uintptr_t>(p[k]) % align == 0,
               "aligned form %d: %zu bytes at %zu: %p", k, n, align, p[k]);
      check_delete("aligned delete", p[0], [al](void *q) { ::operator delete(q, al); });
      check_delete("aligned delete[]", p[1], [al](void *q) { ::operator delete[](q, al); });
      check_delete("sized aligned delete", p[2], [n, al](void *q) { ::operator delete(q, n, al); });
      check_delete("sized aligned delete[]", p[3],
                   [n, al](void *q) { ::operator delete[](q, n, al); });
      void *r = ::operator new(n, al);
      check_delete("aligned delete(nothrow)", r,
                   [al](void *q) { ::operator delete(q, al, std::nothrow); });
      r = ::operator new[](n, al);
      check_delete("aligned delete[](nothrow)", r,
                   [al](void *q) { ::operator delete[](q, al, std::nothrow); });
    }
  }
}

template <typename New> bool throws_bad_alloc(New allocate) {
  try {
    escape(allocate());
  } catch (const std::bad_alloc &) {
    return true;
  }
  return false;
}

void impossible_sizes() {
  const size_t huge = SIZE_MAX / 2;
  auto al = std::align_val_t(64);
  CHECK(throws_bad_alloc([&] { return ::operator new(huge); }));
  CHECK(throws_bad_alloc([&] { return ::operator new[](huge); }));
  CHECK(throws_bad_alloc([&] { return ::operator new(huge, al); }));
  CHECK(throws_bad_alloc([&] { return ::operator new[](huge, al); }));
  CHECK(::operator new(huge, std::nothrow) == nullptr);
  CHECK(::operator new[](huge, std::nothrow) == nullptr);
  CHECK(::operator new(huge, al, std::nothrow) == nullptr);
  CHECK(::operator new[](huge, al, std::nothrow) == nullptr);
  /* An alignment that is not a power of two: refused, as libstdc++ refuses it. */
  CHECK(throws_bad_alloc([] { return ::operator new(16, std::align_val_t(48)); }));
  CHECK(::operator new(16, std::align_val_t(48), std::nothrow) == nullptr);
}

/* ---- new_handler under an address-space cap (in a forked child) ---- */
const size_t reserve_bytes = size_t(192) << 20, request_bytes = size_t(160) << 20;
void *reserve;
int handler_calls;

void free_the_reserve() {
  handler_calls++;
  if (reserve) {
    ::operator delete(reserve);
    reserve = nullptr;
  } else {
    std::set_new_handler(nullptr); /* nothing left to give: let new fail */
  }
}

void throw_bad_alloc_handler() {
  handler_calls++;
  throw std::bad_alloc();
}

struct handler_gave_up : std::runtime_error {
  handler_gave_up() : std::runtime_error("handler gave up") {}
};
void throw_other_handler() {
  handler_calls++;
  throw handler_gave_up();
}

size_t address_space_now() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return size_t(pages) * size_t(sysconf(_SC_PAGESIZE));
}

/* Child: returns the number of checks that failed in it (its exit status). */
int handler_child() {
  int failures_before = check_failures;
  rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return 100;
  reserve = ::operator new(1); /* the allocator and the C++ runtime set up before the cap */
  ::operator delete(reserve);
  std::set_new_handler(nullptr);
  rlim_t cap = rlim_t(address_space_now() + (size_t(256) << 20));
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < cap) cap = rl.rlim_max;
  rl.rlim_cur = cap;
  if (setrlimit(RLIMIT_AS, &rl) != 0) {
    std::perror("setrlimit");
    return 100;
  }

  /* Without a handler the request does not fit beside the reserve. */
  reserve = ::operator new(reserve_bytes);
  CHECK(ours(reserve, reserve_bytes));
  CHECK(throws_bad_alloc([] { return ::operator new(request_bytes); }));
  CHECK(::operator new(request_bytes, std::nothrow) == nullptr);

  /* Throwing form: the handler frees the reserve, the retry succeeds. */
  handler_calls = 0;
  std::set_new_handler(free_the_reserve);
  void *p = ::operator new(request_bytes);
  CHECKF(handler_calls == 1 && ours(p, request_bytes), "throwing new: %d handler calls, %p",
         handler_calls, p);
  ::operator delete(p);

  /* Nothrow form, aligned: the same. */
  reserve = ::operator new(reserve_bytes);
  handler_calls = 0;
  std::set_new_handler(free_the_reserve);
  p = ::operator new(request_bytes, std::align_val_t(4096), std::nothrow);
  CHECKF(handler_calls == 1 && ours(p, request_bytes) && reinterpret_cast<uintptr_t>(p) % 4096 == 0,
         "nothrow new: %d handler calls, %p", handler_calls, p);
  ::operator delete(p, std::align_val_t(4096));

  /* A handler that throws bad_alloc: nothrow returns nullptr, throwing new throws. */
  reserve = ::operator new(reserve_bytes);
  handler_calls = 0;
  std::set_new_handler(throw_bad_alloc_handler);
  CHECK(::operator new(request_bytes, std::nothrow) == nullptr);
  CHECK(::operator new[](request_bytes, std::align_val_t(64), std::nothrow) == nullptr);
  CHECK(throws_bad_alloc([] { return ::operator new(request_bytes); }));
  CHECKF(handler_calls == 3, "%d handler calls, want 3", handler_calls);

  /* Any other exception from the handler unwinds through operator new. */
  std::set_new_handler(throw_other_handler);
  bool caught = false;
  try {
    escape(::operator new(request_bytes));
  } catch (const handler_gave_up &) {
    caught = true;
  }
  CHECK(caught);
  std::set_new_handler(nullptr);
  ::operator delete(reserve);
  return check_failures - failures_before;
}

void new_handler_under_cap() {
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) _exit(handler_child());
  CHECK(pid > 0 && check_wait_child(pid, "new_handler child"));
}

/* ---- bad deletes reach the error hook ---- */
int hook_calls;
txalloc_error_kind hook_kind;
const void *hook_ptr;

void record(txalloc_error_kind kind, const void *ptr, const char *, void *) {
  hook_calls++;
  hook_kind = kind;
  hook_ptr = ptr;
}

template <typename Delete>
void expect_report(const char *what, void *p, Delete del, txalloc_error_kind kind) {
  hook_calls = 0;
  del(p);
  CHECKF(hook_calls == 1 && hook_kind == kind && hook_ptr == p,
         "%s: %d reports, kind %d (want %d), %p (want %p)", what, hook_calls, int(hook_kind),
         int(kind), hook_ptr, p);
}

void bad_deletes_are_reported() {
  api.set_error_hook(record, nullptr);
  auto al = std::align_val_t(128);
  void *p = ::operator new(48);
  ::operator delete(p);
  expect_report(
      "delete twice", p, [](void *q) { ::operator delete(q); }, TXALLOC_ERROR_DOUBLE_FREE);
  p = ::operator new(48);
  ::operator delete(p, size_t(48));
  expect_report(
      "sized delete twice", p, [](void *q) { ::operator delete(q, size_t(48)); },
      TXALLOC_ERROR_DOUBLE_FREE);
  p = ::operator new[](200);
  ::operator delete[](p);
  expect_report(
      "delete[] twice", p, [](void *q) { ::operator delete[](q); }, TXALLOC_ERROR_DOUBLE_FREE);
  p = ::operator new(100, al);
  ::operator delete(p, al);
  expect_report(
      "aligned delete twice", p, [al](void *q) { ::operator delete(q, 100, al); },
      TXALLOC_ERROR_DOUBLE_FREE);
  int on_stack = 0;
  expect_report(
      "delete of a stack address", &on_stack, [](void *q) { ::operator delete(q); },
      TXALLOC_ERROR_INVALID_FREE);
  api.set_error_hook(nullptr, nullptr);

  /* Still handing out each object once. */
  std::vector<void *> v;
  for (int i = 0; i < 2000; i++) v.push_back(::operator new(48));
  std::vector<void *> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  for (void *q : v) ::operator delete(q);
}

/* ---- threads: nodes made by one thread, destroyed by another ---- */
void cross_thread_nodes() {
  const int threads = 8;
  const long rounds = check_scaled(200, 20);
  std::vector<std::map<int, std::string> *> slots(threads);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, threads);
  std::atomic<long> bad{0};
  auto worker = [&](int id) {
    for (long r = 0; r < rounds; r++) {
      auto *m = new std::map<int, std::string>;
      for (int i = 0; i < 64; i++) (*m)[i] = std::string(16 + (i * 7 + id) % 80, char('a' + id));
      slots[size_t(id)] = m;
      pthread_barrier_wait(&barrier);
      auto *theirs = slots[size_t((id + 1) % threads)];
      for (auto &kv : *theirs)
        if (kv.second.size() != size_t(16 + (kv.first * 7 + (id + 1) % threads) % 80) ||
            kv.second[0] != char('a' + (id + 1) % threads))
          bad++;
      pthread_barrier_wait(&barrier);
      delete theirs; /* freed by a thread that did not allocate it */
      pthread_barrier_wait(&barrier);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) pool.emplace_back(worker, t);
  for (auto &t : pool) t.join();
  pthread_barrier_destroy(&barrier);
  CHECK(bad.load() == 0);
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1) {
    bool help = std::strcmp(argv[1], "--help") == 0;
    std::fprintf(help ? stdout : stderr,
                 "usage: %s\nChecks C++ operator new/delete of libtxalloc.so (linked or "
                 "LD_PRELOADed); takes no arguments.\n",
                 argv[0]);
    return help ? 0 : 2;
  }
  find(api.owner_of, "txalloc_owner_of");
  find(api.usable_size, "txalloc_usable_size");
  find(api.set_error_hook, "txalloc_set_error_hook");
  find(api.stats_get, "txalloc_stats_get");

  every_form_is_txalloc();
  new_expressions_are_txalloc();
  aligned_forms();
  impossible_sizes();
  new_handler_under_cap();
  bad_deletes_are_reported();
  cross_thread_nodes();
  return check_exit();
}
