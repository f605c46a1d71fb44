/* LD_PRELOAD shim for ci/bench-temporaries.sh (no code shared with scalebench): counts the
 * process_vm_readv() calls Open MPI's shared-memory transport makes for large messages (its CMA
 * single copy) per (destination, source) pair and, at exit, writes the pairs used more than
 * 100 times to /tmp/cma_log.<pid>: count, the destination's and the source's offsets modulo
 * 4096, and the length. A destination 16-48 bytes past its source modulo 4096 is the slow,
 * 4K-aliased copy (csrc/copy_distance.c). Build: cc -O2 -shared -fPIC -o cma_log.so cma_log.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>
#define PAIRS 64
static struct { unsigned long dst, src, len, n; } seen[PAIRS];
static int used;
static void dump(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/cma_log.%d", (int)getpid());
    FILE *o = fopen(path, "w");
    if (!o) return;
    for (int i = 0; i < used; i++)
        if (seen[i].n > 100)
            fprintf(o, "%lu dst+%#lx src+%#lx len=%lu\n", seen[i].n, seen[i].dst % 4096, seen[i].src % 4096, seen[i].len);
    fclose(o);
}
ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nl, const struct iovec *remote, unsigned long nr, unsigned long flags) {
    static ssize_t (*real)(pid_t, const struct iovec *, unsigned long, const struct iovec *, unsigned long, unsigned long);
    if (!real) {
        real = (ssize_t (*)(pid_t, const struct iovec *, unsigned long, const struct iovec *, unsigned long, unsigned long))dlsym(RTLD_NEXT, "process_vm_readv");
        atexit(dump);
    }
    if (nl > 0 && nr > 0) {
        unsigned long d = (unsigned long)local[0].iov_base, s = (unsigned long)remote[0].iov_base;
        int i = 0;
        while (i < used && !(seen[i].dst == d && seen[i].src == s)) i++;
        if (i < used) seen[i].n++;
        else if (used < PAIRS) { seen[used].dst = d; seen[used].src = s; seen[used].len = local[0].iov_len; seen[used].n = 1; used++; }
    }
    return real(pid, local, nl, remote, nr, flags);
}
