/* An independent reference for scalebench's collective timings, written from the published
 * descriptions of the two loops it reproduces (no code shared with scalebench or copied from
 * the tools). Built by ci/bench.sh with mpicc; run under mpirun.
 *
 *   osu   OSU Micro-Benchmarks' loop: t0 = MPI_Wtime(); call; t1 = MPI_Wtime(); barrier, for
 *         skip + iterations calls (1000 + 100 up to 8 KiB, 100 + 10 above); per-rank mean of
 *         the timed calls, averaged over ranks.
 *   nccl  nccl-tests' loop: the same warm-up, barrier, `iterations` calls back to back,
 *         elapsed / iterations per rank, averaged over ranks.
 *
 * Collectives: allreduce, allgather, broadcast (root 0), reduce_scatter, alltoall; MPI_FLOAT,
 * MPI_SUM, out of place except broadcast (MPI_Bcast has one buffer). Sizes follow nccl-tests:
 * the buffer (allreduce, broadcast), the total output (allgather), the total input
 * (reduce_scatter), each rank's total send (alltoall); the per-rank block of the last three is
 * rounded down to a multiple of 16 bytes. Every buffer is page-aligned (posix_memalign, as OSU
 * allocates) and written once before timing.
 *
 * `-d 1` times the calls on a duplicate of MPI_COMM_WORLD, as a harness or an application that
 * makes its own communicator does (scalebench does). In Open MPI 4.1 a communicator's creation
 * runs a non-blocking allreduce, which registers coll/libnbc's progress function for the rest of
 * the process, so every later wait polls it too (results/benchmarking-log.md shows what that
 * costs).
 *
 * `-r 1` also prints each rank's mean (`# rank R collective mode requested_bytes time_us`), to see
 * which rank a difference sits on.
 *
 * `-n N` times N calls per size and mode (warm-up N / 10) instead of OSU's counts, e.g. to see
 * how a pipelined small-message time depends on the length of the timed batch.
 *
 * Usage: ref_collectives [-m MIN_BYTES] [-M MAX_BYTES] [-c COLL,...] [-t osu,nccl] [-d 0|1] [-n N] [-r 0|1]
 * Output (rank 0): `collective mode requested_bytes bytes time_us` per line; `#` lines are
 * comments. Exit 2 on bad arguments. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum coll { ALLREDUCE, ALLGATHER, BROADCAST, REDUCE_SCATTER, ALLTOALL, NCOLL };
/* The communicator of the timed calls: MPI_COMM_WORLD, or a duplicate of it with `-d 1`. */
static MPI_Comm comm;

static const char *coll_names[NCOLL] = {"allreduce", "allgather", "broadcast",
                                        "reduce_scatter", "alltoall"};

struct bufs {
    float *send, *recv;
    int send_count, recv_count, block; /* block: per-rank count of the blocked collectives */
    long long bytes;                   /* S after rounding */
};

static void *page_alloc(size_t bytes, long page) {
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    if (posix_memalign(&p, (size_t)page, bytes) != 0) {
        fprintf(stderr, "ref_collectives: cannot allocate %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    memset(p, 0, bytes); /* first touch by the rank that uses it */
    return p;
}

/* Counts for one size; returns 0 when the size rounds to nothing at this many ranks. */
static int layout(enum coll c, long long size, int n, struct bufs *b) {
    long long count = size / (long long)sizeof(float);
    long long base = (count / n) / 4 * 4; /* 16-byte blocks */
    switch (c) {
    case ALLREDUCE:
    case BROADCAST:
        b->send_count = b->recv_count = (int)count;
        b->block = (int)count;
        b->bytes = count * (long long)sizeof(float);
        return count > 0;
    case ALLGATHER:
        b->send_count = (int)base;
        b->recv_count = (int)(base * n);
        break;
    case REDUCE_SCATTER:
        b->send_count = (int)(base * n);
        b->recv_count = (int)base;
        break;
    case ALLTOALL:
        b->send_count = b->recv_count = (int)(base * n);
        break;
    default:
        return 0;
    }
    b->block = (int)base;
    b->bytes = base * n * (long long)sizeof(float);
    return base > 0;
}

static void call(enum coll c, struct bufs *b) {
    switch (c) {
    case ALLREDUCE:
        MPI_Allreduce(b->send, b->recv, b->send_count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case BROADCAST:
        MPI_Bcast(b->recv, b->recv_count, MPI_FLOAT, 0, comm);
        break;
    case ALLGATHER:
        MPI_Allgather(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, comm);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM, comm);
        break;
    case ALLTOALL:
        MPI_Alltoall(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, comm);
        break;
    default:
        break;
    }
}

/* Mean seconds per call on this rank. */
static double osu_loop(enum coll c, struct bufs *b, int iters, int skip) {
    double timer = 0.0;
    for (int i = 0; i < iters + skip; i++) {
        double t0 = MPI_Wtime();
        call(c, b);
        double t1 = MPI_Wtime();
        if (i >= skip) timer += t1 - t0;
        MPI_Barrier(comm);
    }
    return timer / iters;
}

static double nccl_loop(enum coll c, struct bufs *b, int iters, int skip) {
    for (int i = 0; i < skip; i++) call(c, b);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) call(c, b);
    double t1 = MPI_Wtime();
    return (t1 - t0) / iters;
}

static int usage(int rank, const char *why) {
    if (rank == 0)
        fprintf(stderr,
                "ref_collectives: %s\nusage: ref_collectives [-m MIN_BYTES] [-M MAX_BYTES] "
                "[-c allreduce,allgather,broadcast,reduce_scatter,alltoall] [-t osu,nccl] [-d 0|1] [-n N]\n",
                why);
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long long min_bytes = 8, max_bytes = 4 << 20;
    int want[NCOLL] = {1, 1, 1, 1, 1};
    int modes[2] = {1, 1}; /* osu, nccl */
    int dup = 0, fixed_iters = 0, per_rank = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return usage(rank, "every option takes a value");
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "-m") || !strcmp(argv[i - 1], "-M")) {
            char *end;
            long long x = strtoll(v, &end, 10);
            if (*end || x < 4) return usage(rank, "sizes are whole numbers of bytes, at least 4");
            if (argv[i - 1][1] == 'm') min_bytes = x; else max_bytes = x;
        } else if (!strcmp(argv[i - 1], "-n")) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < 10 || x > 100000000) return usage(rank, "-n takes a whole number of calls, 10 to 10^8");
            fixed_iters = (int)x;
        } else if (!strcmp(argv[i - 1], "-r")) {
            if (strcmp(v, "0") && strcmp(v, "1")) return usage(rank, "-r takes 0 or 1");
            per_rank = v[0] == '1';
        } else if (!strcmp(argv[i - 1], "-d")) {
            if (strcmp(v, "0") && strcmp(v, "1")) return usage(rank, "-d takes 0 or 1");
            dup = v[0] == '1';
        } else if (!strcmp(argv[i - 1], "-c") || !strcmp(argv[i - 1], "-t")) {
            int is_coll = argv[i - 1][1] == 'c';
            int *flags = is_coll ? want : modes;
            int nflags = is_coll ? NCOLL : 2;
            for (int k = 0; k < nflags; k++) flags[k] = 0;
            char *list = strdup(v);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                int found = 0;
                for (int k = 0; k < nflags; k++) {
                    const char *name = is_coll ? coll_names[k] : (k == 0 ? "osu" : "nccl");
                    if (!strcmp(tok, name)) flags[k] = found = 1;
                }
                if (!found) {
                    free(list);
                    return usage(rank, "unknown collective or mode");
                }
            }
            free(list);
        } else {
            return usage(rank, "unknown option");
        }
    }
    comm = MPI_COMM_WORLD;
    if (dup) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    long page = sysconf(_SC_PAGESIZE);
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl) *nl = '\0';
        printf("# ref_collectives: %d ranks, page-aligned buffers (%ld B), MPI_FLOAT sum, %s, %s\n", n,
               page, dup ? "on a duplicate of MPI_COMM_WORLD" : "on MPI_COMM_WORLD", lib);
        printf("# collective mode requested_bytes bytes time_us\n");
    }
    for (int c = 0; c < NCOLL; c++) {
        if (!want[c]) continue;
        for (long long size = min_bytes; size <= max_bytes; size *= 2) {
            struct bufs b;
            if (!layout((enum coll)c, size, n, &b)) continue;
            b.send = page_alloc((size_t)b.send_count * sizeof(float), page);
            b.recv = page_alloc((size_t)b.recv_count * sizeof(float), page);
            for (int k = 0; k < b.send_count; k++) b.send[k] = 1.0f;
            for (int k = 0; k < b.recv_count; k++) b.recv[k] = (float)rank;
            int small = b.bytes <= 8192;
            int iters = small ? 1000 : 100, skip = small ? 100 : 10;
            if (fixed_iters) iters = fixed_iters, skip = fixed_iters / 10;
            for (int m = 0; m < 2; m++) {
                if (!modes[m]) continue;
                double mine = m == 0 ? osu_loop((enum coll)c, &b, iters, skip)
                                     : nccl_loop((enum coll)c, &b, iters, skip);
                double sum = 0.0;
                MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                if (rank == 0)
                    printf("%s %s %lld %lld %.4f\n", coll_names[c], m == 0 ? "osu" : "nccl", size,
                           b.bytes, sum / n * 1e6);
                if (per_rank) {
                    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
                    MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                    for (int r = 0; rank == 0 && r < n; r++)
                        printf("# rank %d %s %s %lld %.4f\n", r, coll_names[c],
                               m == 0 ? "osu" : "nccl", size, all[r] * 1e6);
                    free(all);
                }
            }
            free(b.send);
            free(b.recv);
        }
    }
    if (dup) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
