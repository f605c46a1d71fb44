/* LD_PRELOAD shim for docs/benchmarking.md: logs where MPI_Reduce_scatter_block's buffers and the heap
 * blocks Open MPI mallocs inside the call lie (rank 0, first two calls per size). mpicc -shared -fPIC. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
static __thread int in_rs;
static int logged[64];
void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    if (in_rs && n >= 1024) fprintf(stderr, "  malloc %zu -> %p (mod4096 %lu)\n", n, p, (unsigned long)((uintptr_t)p % 4096));
    return p;
}
int MPI_Reduce_scatter_block(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    int size; MPI_Type_size(dt, &size); int rank; PMPI_Comm_rank(comm, &rank);
    int b = 0; for (size_t x = (size_t)count * size; x > 1; x >>= 1) b++;
    int log = rank == 0 && logged[b] < 2;
    if (log) { logged[b]++; fprintf(stderr, "rs count %d: send %p recv %p (recv-send) mod 4096 = %ld\n", count, s, r, (long)(((intptr_t)r - (intptr_t)s) % 4096)); }
    in_rs = log;
    int rc = PMPI_Reduce_scatter_block(s, r, count, dt, op, comm);
    in_rs = 0;
    return rc;
}
