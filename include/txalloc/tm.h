/* txalloc's transactional-memory API: one front-end for every backend (word-based STM,
 * global lock, emulated best-effort HTM, lock elision over it). Workloads are written once
 * against this header; the backend and its parameters are options
 * (include/txalloc/options.h), chosen at run time.
 *
 *   TM_ATOMIC {
 *     long v = tm_load(&account[a]);
 *     tm_store(&account[a], v - 10);
 *     node_t *n = tm_malloc(sizeof *n);   // freed again if the transaction aborts
 *     tm_free(old);                       // takes effect only when the top level commits
 *   }
 *
 * Rules for code inside an atomic block:
 *   - Shared memory is read and written only through tm_load/tm_store (or the sized
 *     variants). Thread-private memory may be accessed directly.
 *   - Do not leave the block with return, break or goto: the commit would be skipped.
 *     `continue` is fine (it ends the block and commits).
 *   - A transaction may be rolled back and re-executed at any tm_* call: local variables
 *     of the enclosing function that the block modifies and that are read after a restart
 *     must be declared volatile (as with setjmp).
 *   - Blocks nest (closed nesting: a child's abort keeps the parent's work, unless the
 *     `nesting` option says flat).
 *   - No I/O or other irreversible action unless the transaction is irrevocable.
 * A thread is set up at its first transaction and cleaned up at its exit; tm_thread_init
 * and tm_thread_exit may be called explicitly. */
#ifndef TXALLOC_TM_H
#define TXALLOC_TM_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "txalloc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Threads ---- */
TXALLOC_API void tm_thread_init(void);
TXALLOC_API void tm_thread_exit(void);

/* ---- Atomic blocks ---- */
enum tm_flags {
  TM_FLAG_NONE = 0,
  TM_FLAG_READ_ONLY = 1,   /* a hint: the block does not store. Its attempts record no
                              reads; one that meets a version newer than its snapshot, or
                              stores, restarts with a read set (docs/stm.md) */
  TM_FLAG_IRREVOCABLE = 2, /* runs alone, never aborts: I/O allowed */
};

#define TM_ATOMIC TM_ATOMIC_FLAGS(TM_FLAG_NONE)
#define TM_ATOMIC_RO TM_ATOMIC_FLAGS(TM_FLAG_READ_ONLY)
#define TM_ATOMIC_IRREVOCABLE TM_ATOMIC_FLAGS(TM_FLAG_IRREVOCABLE)

/* The restart point of a block is taken in the caller's frame (a setjmp-like call must not
 * return before the jump back). Two entries exist; the library provides both, and a level
 * records which one began it.
 *
 * Fast entry (x86-64, not under a sanitizer or CET): tm_start_ saves the callee-saved
 * registers, the stack pointer and its return address into a context in the block's own
 * scope and begins the level, all in one call. A rollback restores that context and returns
 * from tm_start_ again: 1 after it has begun the level anew (retry), 0 to skip the block
 * (tm_abort). The signal mask is neither saved nor restored (nor is it by the portable entry).
 *
 * Portable entry (everywhere else, or with TXALLOC_TM_PORTABLE_ENTRY defined):
 * tm_checkpoint_ returns the jump buffer of the level about to begin, sigsetjmp(..., 0) fills
 * it, tm_begin_ begins the level; a rollback jumps back with TM_JUMP_RETRY (begin again) or
 * TM_JUMP_CANCEL (tm_abort: skip the block). The switch on sigsetjmp is one of the contexts
 * where C allows setjmp. The sanitizers need it: their longjmp interceptors learn of the
 * stack switch. */
enum { TM_JUMP_START = 0, TM_JUMP_RETRY = 1, TM_JUMP_CANCEL = 2 };
/* Nested blocks declare the same names in nested scopes: -Wshadow is silenced for the
 * block's header only (the pragmas end before the user's statement). */
#define TM_SHADOW_OFF_ _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")
#define TM_SHADOW_ON_ _Pragma("GCC diagnostic pop")

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define TM_SANITIZED_ 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TM_SANITIZED_ 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CET__)
#define TM_HAVE_FAST_ENTRY_ 1 /* the library defines tm_start_ */
#if !defined(TM_SANITIZED_) && !defined(TXALLOC_TM_PORTABLE_ENTRY)
#define TM_FAST_ENTRY_ 1 /* this translation unit's blocks use it */
#endif
#endif

#ifdef TM_HAVE_FAST_ENTRY_
/* rbx, rbp, r12-r15, the stack pointer after the return, the return address. */
typedef struct tm_context_ {
  void *regs_[8];
} tm_context_;
TXALLOC_API __attribute__((returns_twice)) int tm_start_(tm_context_ *ctx, int flags);
#endif

#ifdef TM_FAST_ENTRY_
/* One loop: tm_ctx_once_ is set by the init, tested before tm_start_ and cleared with the
 * commit, so the block runs once; a second return from tm_start_ (rollback) lands inside
 * the condition, 1 running the body again, 0 leaving. */
#define TM_ATOMIC_FLAGS(flags)                                                                     \
  TM_SHADOW_OFF_                                                                                   \
  for (tm_context_ tm_ctx_, *tm_ctx_once_ = &tm_ctx_;                                              \
       tm_ctx_once_ && tm_start_(&tm_ctx_, (flags)); tm_ctx_once_ = NULL, tm_commit_())            \
  TM_SHADOW_ON_
#else
/* tm_go_ lives only as long as the statement expression, so the body (a nested block's
 * tm_go_, say) may reuse its stack slot before a rollback jumps back here: every return
 * from sigsetjmp assigns it, none relies on the initialiser. */
#define TM_ATOMIC_FLAGS(flags)                                                                     \
  TM_SHADOW_OFF_                                                                                   \
  for (volatile int tm_run_ = ({                                                                   \
         volatile int tm_go_ = 1;                                                                  \
         switch (sigsetjmp(*tm_checkpoint_(flags), 0)) {                                           \
         case TM_JUMP_CANCEL: tm_go_ = 0; break;                                                   \
         default: tm_go_ = 1; tm_begin_(flags);                                                    \
         }                                                                                         \
         tm_go_;                                                                                   \
       });                                                                                         \
       tm_run_; tm_run_ = 0, tm_commit_())                                                         \
  TM_SHADOW_ON_
#endif

TXALLOC_API sigjmp_buf *tm_checkpoint_(int flags);
TXALLOC_API void tm_begin_(int flags);
TXALLOC_API void tm_commit_(void);

#ifdef __cplusplus
#define TM_NORETURN_ [[noreturn]]
#else
#define TM_NORETURN_ _Noreturn
#endif
/* Abort the innermost transaction and run it again (for a condition not yet true). */
TM_NORETURN_ TXALLOC_API void tm_restart(void);
/* Abort the innermost transaction, discard its effects, and continue after its block. */
TM_NORETURN_ TXALLOC_API void tm_abort(void);
/* Abort the outermost transaction (every level) and run it again, or discard its effects
 * and continue after its block: what a caller that nests blocks it does not see needs (the
 * GCC TM ABI's outer aborts and its switch to serial mode, src/itm). */
TM_NORETURN_ TXALLOC_API void tm_restart_outermost(void);
TM_NORETURN_ TXALLOC_API void tm_abort_outermost(void);
/* Become irrevocable now (may restart the transaction first to get there). */
TXALLOC_API void tm_become_irrevocable(void);
/* Makes every transaction running now (on any thread) validate its reads at its next load
 * of a stripe that was ever written, or at its commit, and abort if they are no longer
 * valid. For reclamation (txmem's stale-transaction hook): doomed transactions end sooner. */
TXALLOC_API void tm_request_validation(void);
TXALLOC_API bool tm_in_transaction(void);
TXALLOC_API unsigned tm_depth(void); /* 0 outside, 1 top level, 2 first child ... */
/* The running attempt is irrevocable (asked for, or a backend's fallback): it runs alone
 * among transactions and will not abort by itself. False outside a transaction. */
TXALLOC_API bool tm_is_irrevocable(void);

/* ---- Transactional loads and stores. Sub-word accesses touch only their bytes. ---- */
TXALLOC_API uint8_t tm_load_u8(const volatile uint8_t *addr);
TXALLOC_API uint16_t tm_load_u16(const volatile uint16_t *addr);
TXALLOC_API uint32_t tm_load_u32(const volatile uint32_t *addr);
TXALLOC_API uint64_t tm_load_u64(const volatile uint64_t *addr);
TXALLOC_API void *tm_load_ptr(void *const volatile *addr);
TXALLOC_API float tm_load_float(const volatile float *addr);
TXALLOC_API double tm_load_double(const volatile double *addr);
TXALLOC_API void tm_store_u8(volatile uint8_t *addr, uint8_t value);
TXALLOC_API void tm_store_u16(volatile uint16_t *addr, uint16_t value);
TXALLOC_API void tm_store_u32(volatile uint32_t *addr, uint32_t value);
TXALLOC_API void tm_store_u64(volatile uint64_t *addr, uint64_t value);
TXALLOC_API void tm_store_ptr(void *volatile *addr, void *value);
TXALLOC_API void tm_store_float(volatile float *addr, float value);
TXALLOC_API void tm_store_double(volatile double *addr, double value);

/* ---- The load fast path, inline in the caller (internal; docs/stm.md "Loads"). The common
 * load, an aligned 8-byte word under etl-wb/etl-wt with the shift-mask map whose stripe is
 * unlocked, inside the snapshot and unchanged around the read, with room in the read set,
 * is done here; everything else calls tm_load_u64. tm_fast_view_ is the thread's
 * descriptor while its attempt may take this path, else &tm_view_off_ (never NULL, so the
 * path needs no test for it: tm_view_off_'s lock check fails); tm_load_view_ mirrors the
 * descriptor's first fields (src/tm/tm_internal.h puts it there). Not used under the
 * sanitizers or with TXALLOC_TM_NO_INLINE_LOADS defined (tm_load then calls the library). */
struct tm_rentry_ {
  uint64_t seen;  /* the lock word when the read happened */
  uintptr_t addr; /* the word read (its lock is the map's lock of addr) */
};
#define TM_LOAD_VIEW_FIELDS_                                                                       \
  unsigned ort_rshift; /* lock of word w: ort_base + ((w >> ort_rshift) & ort_amask) */            \
  uint64_t ort_amask;                                                                              \
  char *ort_base;                                                                                  \
  uint64_t end; /* snapshot bound, as a lock word */                                               \
  /* read set: entries rset[0..], rlast the newest (rset - 1: empty), rlimit the last slot; a      \
   * read-only attempt's is scratch that nothing reads (src/tm/tm_internal.h, stm_read_only) */    \
  struct tm_rentry_ *rset, *rlast, *rlimit;
typedef struct tm_load_view_ {
  TM_LOAD_VIEW_FIELDS_
} tm_load_view_;
TXALLOC_API extern __thread tm_load_view_ *tm_fast_view_ __attribute__((tls_model("initial-exec")));
/* tm_fast_view_ when the inline path does not apply: its lock map sends every word to one
 * locked lock word, so tm_load_try_ fails without a test of its own. Read-only memory: the
 * path never writes it (it fails first), and a stray write would fault, not race. */
TXALLOC_API extern const tm_load_view_ tm_view_off_;
#define TM_VIEW_OFF_ ((tm_load_view_ *)&tm_view_off_)

/* The lock word of w in the view's map (tm_view_off_: its one locked word). */
static inline __attribute__((always_inline)) uint64_t *tm_view_lock_(const tm_load_view_ *v,
                                                                     uintptr_t w) {
  return (uint64_t *)(v->ort_base + ((w >> v->ort_rshift) & v->ort_amask));
}

/* Stores the word at w (8-aligned) in *out and returns 1 when the fast path applies. */
static inline __attribute__((always_inline)) int tm_load_try_(tm_load_view_ *v, uintptr_t w,
                                                              uint64_t *out) {
  uint64_t *lock = tm_view_lock_(v, w);
  uint64_t l = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
  /* A locked word (bit 63 set) is above every bound: one test for "unlocked, in the
   * snapshot". */
  if (__builtin_expect(l <= __atomic_load_n(&v->end, __ATOMIC_RELAXED), 1)) {
    uint64_t value = __atomic_load_n((const uint64_t *)w, __ATOMIC_ACQUIRE);
    struct tm_rentry_ *last = v->rlast;
    if (__builtin_expect(__atomic_load_n(lock, __ATOMIC_ACQUIRE) == l, 1)) {
      if (__builtin_expect(last != v->rlimit, 1)) {
        last[1].seen = l;
        last[1].addr = w;
        v->rlast = last + 1;
        *out = value;
        return 1;
      } /* the read set is full: the library grows it (or, read-only, empties it) */
    }
  }
  return 0;
}

#if !defined(TM_SANITIZED_) && !defined(TXALLOC_TM_NO_INLINE_LOADS)
static inline __attribute__((always_inline)) uint64_t
tm_load_inline_u64(const volatile uint64_t *addr) {
  tm_load_view_ *v = tm_fast_view_;
  uintptr_t w = (uintptr_t)addr;
  uint64_t value;
  if (__builtin_expect((w & 7) == 0, 1) && tm_load_try_(v, w, &value)) return value;
  return tm_load_u64(addr);
}
static inline __attribute__((always_inline)) void *tm_load_inline_ptr(void *const volatile *addr) {
  return (void *)(uintptr_t)tm_load_inline_u64(
      (const volatile uint64_t *)(const volatile void *)addr);
}
static inline __attribute__((always_inline)) double
tm_load_inline_double(const volatile double *addr) {
  uint64_t bits = tm_load_inline_u64((const volatile uint64_t *)(const volatile void *)addr);
  double d;
  __builtin_memcpy(&d, &bits, sizeof d);
  return d;
}
#else
#define tm_load_inline_u64 tm_load_u64
#define tm_load_inline_ptr tm_load_ptr
#define tm_load_inline_double tm_load_double
#endif

/* tm_load(p) / tm_store(p, v) pick the sized function from the type of *p (integers of
 * 1, 2, 4, 8 bytes, float, double; anything else must be a pointer); 8-byte loads take the
 * inline fast path. C only (_Generic): C++ calls the sized functions. */
#define TM_SIZED_(p, op, op8)                                                                      \
  _Generic(*(p), _Bool                                                                             \
           : tm_##op##_u8, int8_t                                                                  \
           : tm_##op##_u8, uint8_t                                                                 \
           : tm_##op##_u8, char                                                                    \
           : tm_##op##_u8, int16_t                                                                 \
           : tm_##op##_u16, uint16_t                                                               \
           : tm_##op##_u16, int32_t                                                                \
           : tm_##op##_u32, uint32_t                                                               \
           : tm_##op##_u32, long                                                                   \
           : op8##_u64, unsigned long                                                              \
           : op8##_u64, long long                                                                  \
           : op8##_u64, unsigned long long                                                         \
           : op8##_u64, float                                                                      \
           : tm_##op##_float, double                                                               \
           : op8##_double, default                                                                 \
           : op8##_ptr)
#define tm_load(p)                                                                                 \
  ((__typeof__(*(p)))TM_SIZED_(p, load, tm_load_inline)((const volatile void *)(p)))
#define tm_store(p, v) TM_SIZED_(p, store, tm_store)((volatile void *)(p), (v))

/* ---- Memory inside transactions: allocation is undone on abort; a free takes effect
 * when the top-level transaction commits. Outside a transaction: plain malloc/free. ---- */
TXALLOC_API void *tm_malloc(size_t size);
TXALLOC_API void tm_free(void *ptr);

/* ---- Lifecycle callbacks (the transaction-aware allocator subscribes here). Each is
 * called on the transaction's own thread; `depth` is the level concerned (1 = top). With
 * nesting=flat the children are part of one transaction and only depth 1 is reported. ---- */
typedef struct tm_callbacks {
  void (*on_begin)(void *ctx, unsigned depth);
  void (*on_commit)(void *ctx, unsigned depth); /* depth 1: after the commit is visible */
  void (*on_abort)(void *ctx, unsigned depth);  /* after the level's effects are undone */
  void (*on_thread_exit)(void *ctx);
  void *ctx;
} tm_callbacks;
/* Register before the first transaction; returns 0, or -1 when the table is full. */
TXALLOC_API int tm_register_callbacks(const tm_callbacks *callbacks);

/* ---- Statistics, merged over all threads (exited threads included) ---- */
typedef enum tm_abort_cause {
  TM_ABORT_READ_LOCKED,     /* read a stripe another transaction holds locked */
  TM_ABORT_WRITE_LOCKED,    /* write-write: the stripe's lock is held by another */
  TM_ABORT_VALIDATE_READ,   /* a read saw a newer version and the snapshot could not extend */
  TM_ABORT_VALIDATE_EXTEND, /* snapshot extension found a read stripe changed */
  TM_ABORT_VALIDATE_COMMIT, /* commit-time validation of the read set failed */
  TM_ABORT_KILLED,          /* the contention manager of another transaction won */
  TM_ABORT_EXPLICIT,        /* tm_restart or tm_abort */
  TM_ABORT_IRREVOCABLE,     /* rolled back to run irrevocably (fallback or request) */
  TM_ABORT_READ_ONLY,       /* a read-only attempt (no read set) met a newer version, or stored */
  TM_ABORT_CONFLICT,        /* htm-emul: another access to a line this attempt holds doomed it */
  TM_ABORT_CAPACITY,        /* htm-emul: the read or write set overflowed the modelled caches */
  TM_ABORT_UNFRIENDLY,      /* htm-emul: an operation a hardware TM cannot run (a system call) */
  TM_ABORT_ALLOC_REFILL,    /* txmem thrifty: the thread's pool ran dry; refilled, then restarted */
  TM_ABORT_CAUSE_COUNT
} tm_abort_cause;
TXALLOC_API const char *tm_abort_cause_name(tm_abort_cause cause); /* "read_locked", ... */

/* The status of the calling thread's last abort in RTM's terms (the EAX bits of XBEGIN's
 * abort path), set by the backends that model a hardware TM (htm-emul); 0 under the others
 * and for an abort with no bit to report (an unfriendly operation, as RTM reports a system
 * call). TM_XABORT_CODE extracts the code of an explicit abort. */
#define TM_XABORT_EXPLICIT (1u << 0) /* tm_restart/tm_abort, or the fallback's request */
#define TM_XABORT_RETRY (1u << 1)    /* the attempt may succeed on a retry (conflicts) */
#define TM_XABORT_CONFLICT (1u << 2) /* another thread or a plain store touched a held line */
#define TM_XABORT_CAPACITY (1u << 3) /* the read or write set overflowed */
#define TM_XABORT_NESTED (1u << 5)   /* the abort happened inside a nested block */
#define TM_XABORT_CODE(status) (((status) >> 24) & 0xffu)
TXALLOC_API unsigned tm_last_abort_status(void);

#define TM_RETRY_HISTOGRAM_BUCKETS 16
typedef struct tm_stats {
  uint64_t commits;
  uint64_t commits_read_only;
  uint64_t commits_irrevocable;
  uint64_t aborts;
  uint64_t aborts_by_cause[TM_ABORT_CAUSE_COUNT];
  /* Conflict aborts classified: true (the other transaction accessed the same word),
   * false (same ORT entry, different words), unknown (could not be decided). */
  uint64_t true_conflicts;
  uint64_t false_conflicts;
  uint64_t unknown_conflicts;
  uint64_t max_consecutive_aborts;
  /* Nanoseconds attempts spent on a fallback lock, from taking it to releasing it (htm-emul
   * and tle; 0 under the others). */
  uint64_t lock_held_ns;
  /* retry_histogram[k]: transactions that committed after k aborts (last bucket: k >= 15). */
  uint64_t retry_histogram[TM_RETRY_HISTOGRAM_BUCKETS];
} tm_stats;
TXALLOC_API void tm_stats_get(tm_stats *out);
TXALLOC_API void tm_stats_reset(void);
/* Writes `stats` as one JSON object (the keys of tm_stats; aborts_by_cause keyed by
 * tm_abort_cause_name; plus false_conflict_share = false / (true + false + unknown) and
 * abort_rate = aborts / (commits + aborts)) to `out`, without a newline. */
TXALLOC_API void tm_stats_print_json(FILE *out, const tm_stats *stats);
/* Writes the TM configuration in force (the runtime starts if it has not; options set later
 * do not apply) (backend, design, ort_log2, shift, hash, cm, nesting,
 * irrevocable_after, attribution, privatization, wait_spins) as one JSON object to `out`, without a
 * newline. */
TXALLOC_API void tm_config_print_json(FILE *out);

#ifdef __cplusplus
}
#endif
#endif
