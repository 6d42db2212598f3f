/* The GCC TM ABI (the Intel TM ABI, version 1, with GCC's additions) as `gcc -fgnu-tm`
 * calls it: its constants, types and the prototypes of the entry points libtxalloc-itm.so
 * defines (docs/itm.md). The values are the ABI's; x86-64 passes every argument as the
 * System V ABI says (the ABI's regparm applies to 32-bit x86 only). */
#ifndef TXALLOC_ITM_ABI_H
#define TXALLOC_ITM_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* _ITM_abortTransaction's reasons (bits). */
typedef enum {
  itm_userAbort = 1,           /* __transaction_cancel */
  itm_userRetry = 2,           /* restart the innermost transaction */
  itm_TMConflict = 4,          /* not sent by the compiler */
  itm_exceptionBlockAbort = 8, /* not supported */
  itm_outerAbort = 16,         /* __transaction_cancel [[outer]] (with userAbort) */
} itm_abort_reason;

/* _ITM_changeTransactionMode's one mode. */
enum { itm_modeSerialIrrevocable = 0 };

/* _ITM_inTransaction's answers. */
enum {
  itm_outsideTransaction = 0,
  itm_inRetryableTransaction = 1,
  itm_inIrrevocableTransaction = 2
};

/* _ITM_beginTransaction's properties word: what the compiler knows of the block. */
enum {
  itm_pr_instrumentedCode = 0x0001,   /* an instrumented path exists */
  itm_pr_uninstrumentedCode = 0x0002, /* an uninstrumented path exists */
  itm_pr_hasNoAbort = 0x0008,         /* no __transaction_cancel inside */
  itm_pr_doesGoIrrevocable = 0x0040,  /* the block always becomes irrevocable */
  itm_pr_readOnly = 0x4000,           /* the block writes no shared memory */
};

/* _ITM_beginTransaction's result: what the compiled code does next. */
enum {
  itm_a_runInstrumentedCode = 0x01,
  itm_a_runUninstrumentedCode = 0x02,
  itm_a_saveLiveVariables = 0x04,    /* first entry: save the logged locals */
  itm_a_restoreLiveVariables = 0x08, /* re-entry after a rollback: restore them */
  itm_a_abortTransaction = 0x10,     /* cancelled: continue after the block */
};

#define ITM_NO_TRANSACTION_ID 1 /* _ITM_getTransactionId outside a transaction */
#define ITM_VERSION_STRING "0.90 (Feb 29 2008)"
#define ITM_VERSION_NUMBER 90

typedef struct itm_src_location {
  uint32_t reserved_1, flags, reserved_2, reserved_3;
  const char *psource;
} itm_src_location;
typedef uint64_t itm_transaction_id;
typedef void (*itm_user_function)(void *);

/* Every entry point below is exported (the layer is compiled with hidden visibility). */
#pragma GCC visibility push(default)

/* The vector types of the M64/M128/M256 barriers. */
typedef int itm_m64 __attribute__((vector_size(8), may_alias));
typedef float itm_m128 __attribute__((vector_size(16), may_alias));
typedef float itm_m256 __attribute__((vector_size(32), may_alias));

/* Every type the barriers and logging functions exist for, as (suffix, C type). M256 is
 * apart: its functions pass vectors in AVX registers (itm_barriers_avx.c). */
#define ITM_FOR_EACH_TYPE(X)                                                                       \
  X(U1, uint8_t)                                                                                   \
  X(U2, uint16_t)                                                                                  \
  X(U4, uint32_t)                                                                                  \
  X(U8, uint64_t)                                                                                  \
  X(F, float)                                                                                      \
  X(D, double)                                                                                     \
  X(E, long double)                                                                                \
  X(CF, float _Complex)                                                                            \
  X(CD, double _Complex)                                                                           \
  X(CE, long double _Complex)                                                                      \
  X(M64, itm_m64)                                                                                  \
  X(M128, itm_m128)

/* Reads: plain, after a read, after a write, for a write; writes: plain, after a read,
 * after a write. The hints change nothing here: every read and write is the same STM
 * access (a read-after-write finds its own write in the write set). */
#define ITM_DECLARE_BARRIERS(N, T)                                                                 \
  T _ITM_R##N(const T *addr);                                                                      \
  T _ITM_RaR##N(const T *addr);                                                                    \
  T _ITM_RaW##N(const T *addr);                                                                    \
  T _ITM_RfW##N(const T *addr);                                                                    \
  void _ITM_W##N(T *addr, T value);                                                                \
  void _ITM_WaR##N(T *addr, T value);                                                              \
  void _ITM_WaW##N(T *addr, T value);                                                              \
  void _ITM_L##N(const T *addr);
ITM_FOR_EACH_TYPE(ITM_DECLARE_BARRIERS)
ITM_DECLARE_BARRIERS(M256, itm_m256)
void _ITM_LB(const void *addr, size_t size);

/* memcpy and memmove: (R)ead and (W)rite each (n)on-transactional or (t)ransactional,
 * optionally after a read or write (aR/aW) of the same memory; memset writes only. */
#define ITM_FOR_EACH_COPY(X)                                                                       \
  X(RnWt, false, true)                                                                             \
  X(RnWtaR, false, true)                                                                           \
  X(RnWtaW, false, true)                                                                           \
  X(RtWn, true, false)                                                                             \
  X(RtWt, true, true)                                                                              \
  X(RtWtaR, true, true)                                                                            \
  X(RtWtaW, true, true)                                                                            \
  X(RtaRWn, true, false)                                                                           \
  X(RtaRWt, true, true)                                                                            \
  X(RtaRWtaR, true, true)                                                                          \
  X(RtaRWtaW, true, true)                                                                          \
  X(RtaWWn, true, false)                                                                           \
  X(RtaWWt, true, true)                                                                            \
  X(RtaWWtaR, true, true)                                                                          \
  X(RtaWWtaW, true, true)
#define ITM_DECLARE_COPY(V, rt, wt)                                                                \
  void _ITM_memcpy##V(void *dst, const void *src, size_t size);                                    \
  void _ITM_memmove##V(void *dst, const void *src, size_t size);
ITM_FOR_EACH_COPY(ITM_DECLARE_COPY)
void _ITM_memsetW(void *dst, int c, size_t size);
void _ITM_memsetWaR(void *dst, int c, size_t size);
void _ITM_memsetWaW(void *dst, int c, size_t size);

/* Transactions (itm_transaction.c; _ITM_beginTransaction is itm_begin_x86_64.S). */
uint32_t _ITM_beginTransaction(uint32_t properties, ...);
void _ITM_commitTransaction(void);
void _ITM_commitTransactionEH(void *exception);
_Noreturn void _ITM_abortTransaction(itm_abort_reason reason);
void _ITM_changeTransactionMode(int mode);
int _ITM_inTransaction(void);
itm_transaction_id _ITM_getTransactionId(void);
int _ITM_versionCompatible(int version);
const char *_ITM_libraryVersion(void);
_Noreturn void _ITM_error(const itm_src_location *where, int code);

/* Actions (itm_actions.c). */
void _ITM_addUserCommitAction(itm_user_function fn, itm_transaction_id resuming, void *arg);
void _ITM_addUserUndoAction(itm_user_function fn, void *arg);

/* Memory (itm_alloc.c). */
void *_ITM_malloc(size_t size);
void *_ITM_calloc(size_t count, size_t size);
void _ITM_free(void *ptr);
void _ITM_dropReferences(void *addr, size_t size);

/* Clone tables (itm_clone_table.c). */
void _ITM_registerTMCloneTable(void *table, size_t entries);
void _ITM_deregisterTMCloneTable(void *table);
void *_ITM_getTMCloneOrIrrevocable(void *function);
void *_ITM_getTMCloneSafe(void *function);

/* C++ (itm_cxx.c). */
void *_ITM_cxa_allocate_exception(size_t size);
void _ITM_cxa_free_exception(void *exception);
void _ITM_cxa_throw(void *object, void *type_info, void (*destructor)(void *));
void *_ITM_cxa_begin_catch(void *exception);
void _ITM_cxa_end_catch(void);

#pragma GCC visibility pop

#endif
