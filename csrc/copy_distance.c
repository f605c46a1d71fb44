/* Copy-distance model for docs/benchmarking.md (no code shared with scalebench): the copy Open
 * MPI's shared-memory transport makes for a large message (vader with single_copy_mechanism=cma)
 * is process_vm_readv(), i.e. the kernel's copy_to_user (rep movsb on FSRM CPUs). This times it,
 * glibc memcpy and a user-space rep movsb with the destination D bytes past the source modulo
 * 4096, alternating D round by round so a slow phase of the machine hits every D alike. It reads
 * from this very process (allowed without ptrace rights). Usage: copy_distance [BYTES] [ROUNDS] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
static void movsb(void *d, const void *s, size_t n) { __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); }
int main(int argc, char **argv) {
    size_t bytes = argc > 1 ? strtoul(argv[1], 0, 0) : 32768;
    int rounds = argc > 2 ? atoi(argv[2]) : 15, reps = 400;
    int dist[] = {0, 16, 32, 48, 64, 128, 256, 272, 464, 2048, 4032, 4080};
    int nd = sizeof dist / sizeof *dist;
    char *src, *dst;
    if (bytes < 64 || bytes > (1u << 30) || rounds < 1 || posix_memalign((void **)&src, 4096, bytes + 8192) ||
        posix_memalign((void **)&dst, 4096, bytes + 8192)) {
        fprintf(stderr, "copy_distance: BYTES 64..1 GiB, ROUNDS >= 1, and memory for two buffers\n");
        return 2;
    }
    memset(src, 1, bytes + 8192); memset(dst, 0, bytes + 8192);
    double *t = calloc((size_t)3 * nd * rounds, sizeof *t);
    if (!t) return 2;
    pid_t self = getpid();
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nd; k++)
            for (int how = 0; how < 3; how++) {
                char *d = dst + 4096 + dist[k], *s = src + 4096;
                struct iovec l = {d, bytes}, rm = {s, bytes};
                double t0 = now();
                for (int i = 0; i < reps; i++) {
                    if (how == 0) { if (process_vm_readv(self, &l, 1, &rm, 1, 0) != (ssize_t)bytes) { perror("process_vm_readv"); return 1; } }
                    else if (how == 1) memcpy(d, s, bytes);
                    else movsb(d, s, bytes);
                    __asm__ volatile("" ::: "memory");
                }
                t[(how * nd + k) * rounds + r] = (now() - t0) / reps;
            }
    printf("# %zu B copies, destination - source = D (mod 4096); GB/s, median of %d alternating rounds x %d\n", bytes, rounds, reps);
    printf("%6s %18s %10s %14s\n", "D", "process_vm_readv", "memcpy", "rep movsb");
    for (int k = 0; k < nd; k++) {
        printf("%6d", dist[k]);
        for (int how = 0; how < 3; how++) {
            double *x = t + (how * nd + k) * rounds;
            qsort(x, rounds, sizeof *x, cmp);
            printf(how == 0 ? " %18.2f" : how == 1 ? " %10.2f" : " %14.2f", bytes / x[rounds / 2] / 1e9);
        }
        printf("\n");
    }
    return 0;
}
