// Fibers: the threads of a block of a host-compiled kernel (hostkernels.c),
// each on a stack of its own, switched by hand at barriers. A fiber runs
// one function at a time and is reused for the next once it returns, so a
// kernel without barriers needs one fiber, not one per thread.
//
// The switch saves the callee-saved registers and swaps stacks, in a few
// instructions of assembly on x86-64 and arm64: ucontext's swapcontext
// makes a system call each time (the signal mask), and a block of 1024
// threads switches 1024 times per barrier. Elsewhere ucontext does it.

#include <sys/mman.h>

#include "fakecuda.h"

// A fiber's stack: kernels keep little on theirs (libm's calls the
// deepest), and a fiber runs no Go. The pages are only reserved until
// touched; a guard page below catches an overflow.
enum { FIBER_STACK = 64 << 10 };

#if defined(__x86_64__) || defined(__aarch64__)

struct fiber {
	void *sp;   // the fiber's saved stack pointer, while it is switched out
	void *back; // its resumer's, while it runs
	void (*fn)(void *);
	void *arg;
	int returned;
	char *stack;
};

// fiber_swap saves the callee-saved registers on the current stack, stores
// the stack pointer in *save and continues on load, a stack fiber_swap
// saved (or fiber_new made to look so).
void fiber_swap(void **save, void *load) __attribute__((visibility("hidden")));
void fiber_entry(void) __attribute__((visibility("hidden")));

#if defined(__x86_64__)
// The frame: r15, r14, r13, r12, rbx, rbp, the return address. A new
// fiber "returns" to fiber_entry with the fiber in r12. The floating-point
// control registers are not switched (they cost more than the rest): the
// fibers of a worker all run kernels, which leave them as they are.
__asm__(".text\n"
        ".globl fiber_swap\n.hidden fiber_swap\n.type fiber_swap,@function\n"
        "fiber_swap:\n"
        "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
        "\tmovq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n"
        "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
        "\tret\n"
        ".size fiber_swap,.-fiber_swap\n"
        ".globl fiber_entry\n.hidden fiber_entry\n.type fiber_entry,@function\n"
        "fiber_entry:\n"
        "\tmovq %r12, %rdi\n\tcall fiber_main\n\tud2\n"
        ".size fiber_entry,.-fiber_entry\n");
enum { FRAME_WORDS = 7 };
static void frame(uint64_t *w, struct fiber *f) {
	w[3] = (uint64_t)(uintptr_t)f; // r12
	w[6] = (uint64_t)(uintptr_t)fiber_entry;
}
#else
// The frame: x19 to x28, x29, x30 (the return address), d8 to d15, and
// 16 bytes unused (sp stays aligned); fpcr is not switched, as on x86-64.
// A new fiber "returns" to fiber_entry with the fiber in x19.
__asm__(".text\n"
        ".globl fiber_swap\n.hidden fiber_swap\n.type fiber_swap,%function\n"
        "fiber_swap:\n"
        "\tsub sp, sp, #176\n"
        "\tstp x19, x20, [sp, #0]\n\tstp x21, x22, [sp, #16]\n\tstp x23, x24, [sp, #32]\n"
        "\tstp x25, x26, [sp, #48]\n\tstp x27, x28, [sp, #64]\n\tstp x29, x30, [sp, #80]\n"
        "\tstp d8, d9, [sp, #96]\n\tstp d10, d11, [sp, #112]\n\tstp d12, d13, [sp, #128]\n\tstp d14, d15, [sp, #144]\n"
        "\tmov x9, sp\n\tstr x9, [x0]\n\tmov sp, x1\n"
        "\tldp x19, x20, [sp, #0]\n\tldp x21, x22, [sp, #16]\n\tldp x23, x24, [sp, #32]\n"
        "\tldp x25, x26, [sp, #48]\n\tldp x27, x28, [sp, #64]\n\tldp x29, x30, [sp, #80]\n"
        "\tldp d8, d9, [sp, #96]\n\tldp d10, d11, [sp, #112]\n\tldp d12, d13, [sp, #128]\n\tldp d14, d15, [sp, #144]\n"
        "\tadd sp, sp, #176\n\tret\n"
        ".size fiber_swap,.-fiber_swap\n"
        ".globl fiber_entry\n.hidden fiber_entry\n.type fiber_entry,%function\n"
        "fiber_entry:\n"
        "\tmov x0, x19\n\tbl fiber_main\n\tbrk #0\n"
        ".size fiber_entry,.-fiber_entry\n");
enum { FRAME_WORDS = 22 };
static void frame(uint64_t *w, struct fiber *f) {
	w[0] = (uint64_t)(uintptr_t)f; // x19
	w[11] = (uint64_t)(uintptr_t)fiber_entry; // x30
}
#endif

// fiber_main is each fiber's life: run the function given, say so, wait
// for the next.
void fiber_main(struct fiber *f) __attribute__((visibility("hidden"), noreturn));
void fiber_main(struct fiber *f) {
	for (;;) {
		f->fn(f->arg);
		f->returned = 1;
		fiber_swap(&f->sp, f->back);
	}
}

struct fiber *fiber_new(void) {
	long page = sysconf(_SC_PAGESIZE);
	char *mem = mmap(NULL, FIBER_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) return NULL;
	mprotect(mem, page, PROT_NONE);
	struct fiber *f = calloc(1, sizeof *f);
	if (!f) {
		munmap(mem, FIBER_STACK + page);
		return NULL;
	}
	f->stack = mem;
	uint64_t *top = (uint64_t *)(mem + page + FIBER_STACK); // 16-aligned
	// The frame ends where fiber_entry starts with its stack aligned to 16.
	uint64_t *w = top - 2 - FRAME_WORDS;
	memset(w, 0, FRAME_WORDS * 8);
	frame(w, f);
	f->sp = w;
	return f;
}

void fiber_start(struct fiber *f, void (*fn)(void *), void *arg) {
	f->fn = fn;
	f->arg = arg;
	f->returned = 0;
}

int fiber_resume(struct fiber *f) {
	fiber_swap(&f->back, f->sp);
	return f->returned;
}

void fiber_yield(struct fiber *f) { fiber_swap(&f->sp, f->back); }

#else // ucontext, slower but anywhere

#include <ucontext.h>

struct fiber {
	ucontext_t self, back;
	void (*fn)(void *);
	void *arg;
	int returned;
};

static void fiber_main(unsigned hi, unsigned lo) {
	struct fiber *f = (struct fiber *)(((uintptr_t)hi << 16 << 16) | lo);
	for (;;) {
		f->fn(f->arg);
		f->returned = 1;
		swapcontext(&f->self, &f->back);
	}
}

struct fiber *fiber_new(void) {
	long page = sysconf(_SC_PAGESIZE);
	char *mem = mmap(NULL, FIBER_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) return NULL;
	mprotect(mem, page, PROT_NONE);
	struct fiber *f = calloc(1, sizeof *f);
	if (!f) return NULL;
	getcontext(&f->self);
	f->self.uc_stack.ss_sp = mem + page;
	f->self.uc_stack.ss_size = FIBER_STACK;
	uintptr_t p = (uintptr_t)f;
	makecontext(&f->self, (void (*)(void))fiber_main, 2, (unsigned)(p >> 16 >> 16), (unsigned)p);
	return f;
}

void fiber_start(struct fiber *f, void (*fn)(void *), void *arg) {
	f->fn = fn;
	f->arg = arg;
	f->returned = 0;
}

int fiber_resume(struct fiber *f) {
	swapcontext(&f->back, &f->self);
	return f->returned;
}

void fiber_yield(struct fiber *f) { swapcontext(&f->self, &f->back); }

#endif
