/* _ITM_beginTransaction for the sanitizer builds, x86-64 System V.
 *
 * The sanitizers must see every jump back into a frame (ThreadSanitizer unwinds its shadow
 * stack at a longjmp, AddressSanitizer unpoisons the stack jumped over), so the level's
 * checkpoint here is the runtime's own sigjmp_buf (tm_checkpoint_, the portable entry of
 * tm.h) and the runtime's rollback is the intercepted siglongjmp. Otherwise as
 * itm_begin_x86_64.S: itm_begin_prepare returns the level's checkpoint, the entry keeps it
 * in rbx and stores its own return address and the caller's rbx there. __sigsetjmp is
 * called with the entry's frame still live (rsp: the caller's stack pointer after the
 * return, less 16); a longjmp restores that stack pointer and rbx, and the stack slots
 * there may have been reused since the first return, so every return goes through the
 * checkpoint (the caller's rbx back, a jump to the saved return address).
 * __sigsetjmp's return says what happened: 0 (its first return) or TM_JUMP_RETRY (1), the
 * level begins (tm_begin_), and the answer is the first one, or after a rollback or a
 * restart itm_begin_result(checkpoint, 1)'s; TM_JUMP_CANCEL (2): itm_begin_result(checkpoint,
 * 0) answers, or says 0: take a checkpoint and begin again (the switch to serial mode). */
#include "itm/itm_checkpoint.h"

#if defined(__x86_64__)
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
.cfi_endproc
.size _ITM_beginTransaction, .-_ITM_beginTransaction
#endif

/* No executable stack. */
.section .note.GNU-stack,"",@progbits
