/* Virtual memory from the OS: reserve address space, commit and decommit parts of it.
 * Never allocates; every call is one system call (or none). Failures return NULL / -1
 * with errno set, so the allocator can turn them into ENOMEM. */
#ifndef TXALLOC_OS_MEM_H
#define TXALLOC_OS_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The page size the allocator assumes (x86-64 base pages); checked against the
 * kernel's at initialisation. */
#define TXA_OS_PAGE ((size_t)4096)

/* Reserves `size` bytes of address space aligned to `align` (a power of two >= page),
 * inaccessible (PROT_NONE) and not charged against the commit limit. */
void *txa_os_reserve(size_t size, size_t align);
/* Maps `size` bytes readable and writable at an address aligned to `align`, lazily backed
 * (MAP_NORESERVE): pages cost memory only once touched. */
void *txa_os_map(size_t size, size_t align);
/* Makes [addr, addr+size) of a reservation readable and writable. 0 or -1. */
int txa_os_commit(void *addr, size_t size);
/* Gives the physical memory of [addr, addr+size) back to the OS; the range stays mapped
 * and reads as zero afterwards. */
void txa_os_decommit(void *addr, size_t size);
/* Returns [addr, addr+size) to the OS entirely. */
void txa_os_unmap(void *addr, size_t size);
/* Tries to grow the mapping [addr, addr+old_size) to new_size without moving it. */
bool txa_os_grow_in_place(void *addr, size_t old_size, size_t new_size);
/* Moves the mapping [addr, addr+old_size) (within one mapping) onto `target`, a
 * reservation of new_size bytes (txa_os_reserve) that it replaces atomically, resized to
 * new_size, without copying: its pages, touched or not, go with it (mremap); the rest
 * reads as zero. False when it cannot: the mapping and the reservation are unchanged. */
bool txa_os_move_to(void *addr, size_t old_size, size_t new_size, void *target);
/* The system-call observer: when set, it is called on the calling thread before each
 * memory system call this file makes (mmap, munmap, mprotect, madvise, mremap), with the
 * call's name. The layer above that must know of such calls (the emulated hardware TM,
 * which cannot run them inside a transaction) installs it; the allocator stays unaware.
 * The observer must not allocate or call back into this file; it returns normally (it may
 * record what it saw, never unwind), so the caller's state is never left half-changed.
 * NULL removes it. One observer per process. */
typedef void (*txa_os_observer_fn)(const char *call);
void txa_os_set_observer(txa_os_observer_fn observer);

/* The kernel's page size. */
size_t txa_os_page_size(void);

/* Monotonic milliseconds (coarse clock; a vDSO read, no system call in practice). */
uint64_t txa_os_now_ms(void);

#endif
