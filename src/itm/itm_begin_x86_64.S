/* _ITM_beginTransaction(properties, ...), x86-64 System V.
 *
 * itm_begin_prepare(properties, caller_sp) (itm_transaction.c) returns the checkpoint of the level
 * about to begin; the entry stores its own return address and the caller's rbx there, keeps
 * the checkpoint in rbx and calls tm_start_ (tm.h's fast entry), which saves rbx, rbp,
 * r12-r15, the stack pointer and the return address below, and begins the level. A rollback
 * returns from tm_start_ again (1: begun again, 0: cancelled) with those registers and that
 * stack pointer; the stack slots at and above it may have been reused since the first
 * return, so the return address is written back from the checkpoint before `ret`.
 * The first return answers what itm_begin_prepare left in the checkpoint; after a rollback
 * itm_begin_result(checkpoint, started) makes the ABI's answer (a_restoreLiveVariables with
 * a_runInstrumentedCode or a_abortTransaction) or 0: begin again (the cancelled attempt was
 * a switch to serial mode).
 *
 * ITM_PORTABLE_ENTRY (defined in the sanitizer builds): the sanitizers must see every jump
 * back into a frame (ThreadSanitizer unwinds its shadow stack at a longjmp, AddressSanitizer
 * unpoisons the stack jumped over), so the checkpoint is the runtime's own sigjmp_buf
 * (tm_checkpoint_, tm.h's portable entry) and a rollback is the intercepted siglongjmp.
 * __sigsetjmp is called with the entry's frame still live (rsp: the caller's stack pointer
 * after the return, less 16); a longjmp restores that stack pointer and rbx, and since the
 * block may have reused those stack slots, every return goes through the checkpoint (the
 * caller's rbx back, a jump to the saved return address). __sigsetjmp's return says what
 * happened: 0 (its first return) or TM_JUMP_RETRY (1), the level begins (tm_begin_) and the
 * answer is the first one, or after a rollback or a restart itm_begin_result(checkpoint,
 * 1)'s; TM_JUMP_CANCEL (2): itm_begin_result(checkpoint, 0) answers, or says 0: take a
 * checkpoint and begin again (the switch to serial mode). */
#include "itm/itm_checkpoint.h"

#if defined(__x86_64__) && (!defined(__CET__) || defined(ITM_PORTABLE_ENTRY))
.text
.globl _ITM_beginTransaction
.type _ITM_beginTransaction, @function
.p2align 4
_ITM_beginTransaction:
.cfi_startproc
	pushq	%rbx			/* the stack is 16-aligned below it for the calls */
.cfi_adjust_cfa_offset 8
.cfi_rel_offset %rbx, 0
	leaq	16(%rsp), %rsi		/* the caller's stack pointer after the return */
	call	itm_begin_prepare	/* edi: properties */
	movq	%rax, %rbx
	movq	8(%rsp), %rcx
	movq	%rcx, ITM_CP_RETURN(%rbx)
	movq	(%rsp), %rcx
	movq	%rcx, ITM_CP_RBX(%rbx)
#ifndef ITM_PORTABLE_ENTRY
.Lstart:
	movq	%rbx, %rdi
	movl	ITM_CP_FLAGS(%rbx), %esi
	call	tm_start_
	movq	ITM_CP_RETURN(%rbx), %rcx
	movq	%rcx, 8(%rsp)
	cmpl	$0, ITM_CP_ENTERED(%rbx)
	jne	.Lagain
	movl	$1, ITM_CP_ENTERED(%rbx)	/* the first return: the answer is ready */
	movl	ITM_CP_FIRST(%rbx), %eax
.Lreturn:
	movq	ITM_CP_RBX(%rbx), %rbx
	addq	$8, %rsp
.cfi_adjust_cfa_offset -8
.cfi_restore %rbx
	ret
	/* after a rollback */
.Lagain:
.cfi_adjust_cfa_offset 8
.cfi_rel_offset %rbx, 0
	movq	%rbx, %rdi
	movl	%eax, %esi
	call	itm_begin_result
	testl	%eax, %eax
	jz	.Lstart
	jmp	.Lreturn
#else
.Lstart:
	movl	ITM_CP_FLAGS(%rbx), %edi
	call	tm_checkpoint_@PLT	/* the level's sigjmp_buf */
	movq	%rax, %rdi
	xorl	%esi, %esi
	call	__sigsetjmp@PLT
	cmpl	$2, %eax		/* TM_JUMP_CANCEL */
	je	.Lcancelled
	movl	ITM_CP_FLAGS(%rbx), %edi	/* 0 or TM_JUMP_RETRY: the level begins */
	call	tm_begin_@PLT
	cmpl	$0, ITM_CP_ENTERED(%rbx)
	jne	.Lagain
	movl	$1, ITM_CP_ENTERED(%rbx)	/* the first return: the answer is ready */
	movl	ITM_CP_FIRST(%rbx), %eax
.Lreturn:
	movq	ITM_CP_RETURN(%rbx), %rcx
	movq	ITM_CP_RBX(%rbx), %rbx
	addq	$16, %rsp
.cfi_adjust_cfa_offset -16
.cfi_restore %rbx
	jmp	*%rcx
	/* begun again: after a retry, or after the switch to serial mode (.Lstart again) */
.Lagain:
.cfi_adjust_cfa_offset 16
.cfi_rel_offset %rbx, 0
	movq	%rbx, %rdi
	movl	$1, %esi
	call	itm_begin_result
	jmp	.Lreturn
.Lcancelled:
	movq	%rbx, %rdi
	xorl	%esi, %esi
	call	itm_begin_result
	testl	%eax, %eax
	jz	.Lstart
	jmp	.Lreturn
#endif
.cfi_endproc
.size _ITM_beginTransaction, .-_ITM_beginTransaction
#endif

/* No executable stack. */
.section .note.GNU-stack,"",@progbits
