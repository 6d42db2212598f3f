/* The fast entry of TM_ATOMIC (include/txalloc/tm.h), x86-64 System V.
 *
 * tm_start_(ctx, flags) stores the caller's callee-saved registers, its stack pointer after
 * the return and the return address into *ctx (tm_context_), calls tm_enter_(ctx, flags)
 * (tm_runtime.c: begins the level) and returns 1. tm_jump_(ctx, value) makes tm_start_
 * return `value` again: the registers and stack pointer are those of that first return,
 * which is all a returns_twice call's caller may rely on. Not for sanitizer builds (their
 * longjmp interceptors must see stack switches) nor CET shadow stacks (the jump does not
 * unwind the shadow stack); tm.h falls back to the portable entry there. */
#if defined(__x86_64__) && !defined(__CET__)
.text
.globl tm_start_
.type tm_start_, @function
.p2align 4
tm_start_:
.cfi_startproc
	movq	(%rsp), %rax
	leaq	8(%rsp), %rdx
	movq	%rbx, 0(%rdi)
	movq	%rbp, 8(%rdi)
	movq	%r12, 16(%rdi)
	movq	%r13, 24(%rdi)
	movq	%r14, 32(%rdi)
	movq	%r15, 40(%rdi)
	movq	%rdx, 48(%rdi)
	movq	%rax, 56(%rdi)
	subq	$8, %rsp		/* the call finds the stack aligned as the ABI says */
.cfi_adjust_cfa_offset 8
	call	tm_enter_	/* tm_runtime.c, hidden */
	addq	$8, %rsp
.cfi_adjust_cfa_offset -8
	movl	$1, %eax
	ret
.cfi_endproc
.size tm_start_, .-tm_start_
.globl tm_jump_
.hidden tm_jump_
.type tm_jump_, @function
.p2align 4
tm_jump_:
.cfi_startproc
	movq	0(%rdi), %rbx
	movq	8(%rdi), %rbp
	movq	16(%rdi), %r12
	movq	24(%rdi), %r13
	movq	32(%rdi), %r14
	movq	40(%rdi), %r15
	movq	48(%rdi), %rsp
	movl	%esi, %eax
	jmpq	*56(%rdi)
.cfi_endproc
.size tm_jump_, .-tm_jump_
#endif

/* No executable stack. */
.section .note.GNU-stack,"",@progbits
