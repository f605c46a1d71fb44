/* A controlled-experiment shim for ci/bench.sh (LD_PRELOAD; no code shared with scalebench):
 * every malloc of 4 KiB or more returns a 64-byte-aligned block. glibc's free and realloc take
 * memalign'd blocks, so nothing else changes.
 *
 * Why: Open MPI allocates its collectives' temporaries with malloc inside each call (e.g.
 * reduce_scatter's butterfly, two blocks per call), and where glibc places them depends on the
 * process's allocation history: they can land 16 or 32 bytes past a page boundary while the
 * benchmark's own buffers are page-aligned. A copy whose destination lies 16-48 bytes past its
 * source modulo 4096 (the kernel's process_vm_readv for Open MPI's CMA transport, memcpy) runs
 * slower (4K aliasing and split cache lines). Two programs making the same MPI calls then
 * measure different times for a reason neither controls. Run both under this shim and that
 * placement is the same for both; what differs is the harness.
 *
 * Build: cc -O2 -shared -fPIC -o align_heap.so csrc/align_heap.c */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) { return n >= 4096 ? __libc_memalign(64, n) : __libc_malloc(n); }
