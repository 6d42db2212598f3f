/* What the ABI tests share: the ABI entry points they call by name (declared
 * transaction_pure so that transactional code may call them; their values are the ABI's,
 * GCC's libitm.h), and a reading of txalloc's counters. */
#ifndef TXALLOC_TESTS_ITM_TEST_H
#define TXALLOC_TESTS_ITM_TEST_H

#include <stddef.h>
#include <stdint.h>

#define ITM_PURE __attribute__((transaction_pure))

enum { outside_transaction = 0, in_retryable_transaction = 1, in_irrevocable_transaction = 2 };
int _ITM_inTransaction(void) ITM_PURE;
uint64_t _ITM_getTransactionId(void) ITM_PURE;
int _ITM_versionCompatible(int version) ITM_PURE;
const char *_ITM_libraryVersion(void) ITM_PURE;
typedef void (*itm_action)(void *);
void _ITM_addUserCommitAction(itm_action fn, uint64_t resuming, void *arg) ITM_PURE;
void _ITM_addUserUndoAction(itm_action fn, void *arg) ITM_PURE;
void _ITM_changeTransactionMode(int mode) ITM_PURE;

#endif
