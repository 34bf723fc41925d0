/*
 * exec_spawn.c - the exec backend's clone3(2), sharing hk-scale's memory
 * until the child execs, as vfork(2) does, and with what vfork cannot
 * take: CLONE_INTO_CGROUP.
 *
 * A child that shares our memory cannot return from the system call on
 * our stack, where the parent's frames are, so clone3 wants a stack of its
 * own for it; the kernel starts the child on it, at the instruction after
 * the system call, with every register as the parent had it.  A C
 * function cannot run there (its frame is on the parent's stack), so the
 * call is made by the few instructions below: the child calls fn(arg) on
 * its new stack and exits if fn returns.  CLONE_VFORK holds the parent
 * until the child's exec or exit, which frees the stack.
 *
 * Why: made in its cgroup by a clone3 that copied our memory, a 4 MB
 * process took 0.50 ms until its exec on a busy 2-CPU guest where vfork
 * took 0.16; sharing it, 0.21 (hakopod.toml(5), freezer, has the
 * figures).
 *
 * how is clone3's arguments without CLONE_VM, CLONE_VFORK and the stack,
 * which are added here.  x86_64 only; elsewhere spawn_vm() fails with
 * ENOSYS and the caller copies (backend_exec.c).
 */
#include <sys/mman.h>
#include <sys/types.h>

#include <errno.h>
#include <linux/sched.h>	/* struct clone_args, CLONE_* */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "exec.h"

/* Room for execvpe's path buffer and a dprintf of a failure; a guard
 * page below it. */
#define SPAWN_STACK	(256 * 1024)

#if defined(__x86_64__)
/*
 * long hk_clone3_call(struct clone_args *ca, size_t size,
 *     void (*fn)(void *), void *arg)
 * rdi, rsi are clone3's arguments as they stand; fn and arg are kept in
 * r8 and r9, which the system call preserves and the child inherits.
 * The kernel sets the child's rsp to the top of its stack, 16-byte
 * aligned here, so that fn is entered as the ABI says.  The parent
 * returns clone3's result (a pid, or -errno).
 */
long	hk_clone3_call(struct clone_args *, size_t, void (*)(void *), void *)
	    __attribute__((visibility("hidden")));
__asm__(
	"	.pushsection .text\n"
	"	.p2align 4\n"
	"	.globl	hk_clone3_call\n"
	"	.hidden	hk_clone3_call\n"
	"	.type	hk_clone3_call, @function\n"
	"hk_clone3_call:\n"
	"	movq	%rdx, %r8\n"
	"	movq	%rcx, %r9\n"
	"	movl	$435, %eax\n"		/* SYS_clone3 */
	"	syscall\n"
	"	testq	%rax, %rax\n"
	"	jnz	1f\n"
	"	xorl	%ebp, %ebp\n"		/* the child: no caller frame */
	"	movq	%r9, %rdi\n"
	"	call	*%r8\n"
	"	movl	$127, %edi\n"
	"	movl	$60, %eax\n"		/* SYS_exit */
	"	syscall\n"
	"	hlt\n"
	"1:	ret\n"
	"	.size	hk_clone3_call, .-hk_clone3_call\n"
	"	.popsection\n");
#endif

pid_t
spawn_vm(const struct clone_args *how, void (*fn)(void *), void *arg)
{
#if defined(__x86_64__)
	struct clone_args ca = *how;
	long page = sysconf(_SC_PAGESIZE), r;
	size_t len = SPAWN_STACK + (size_t)page;
	char *map;
	int saved;

	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	if (mprotect(map, (size_t)page, PROT_NONE) == -1) {
		saved = errno;
		munmap(map, len);
		errno = saved;
		return -1;
	}
	ca.flags |= CLONE_VM | CLONE_VFORK;
	ca.stack = (uint64_t)(uintptr_t)(map + page);
	ca.stack_size = SPAWN_STACK;
	r = hk_clone3_call(&ca, sizeof(ca), fn, arg);
#if defined(__SANITIZE_ADDRESS__)
	/* The child's frames never returned: their poison must not outlive
	 * the mapping, whose addresses may be handed out again. */
	__asan_unpoison_memory_region(map + page, SPAWN_STACK);
#endif
	munmap(map, len);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (pid_t)r;
#else
	(void)how;
	(void)fn;
	(void)arg;
	errno = ENOSYS;
	return -1;
#endif
}
