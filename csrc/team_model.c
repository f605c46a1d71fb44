/* A model of the hybrid backend's per-collective synchronisation (src/backend/team.rs), to
 * measure what the protocol alone costs on this machine, without MPI or the harness.
 *
 * Two threads, each pinned to its own CPU, run a 1-rank x 2-device all-reduce of N floats the
 * way scalebench's team does (the work split on 64-element chunks, so small messages fall to
 * worker 1: dst0 = src0 + src1, dst1 = dst0), back to back, with one of two protocols:
 *   barrier2: the job starts and ends with a sense-reversing counter barrier (an atomic add
 *             per thread on one shared line, then a sense flip): the team before this change.
 *   flags:    the leader releases the job with a sequence number on its own line; the worker
 *             answers with its own sequence number on its own line; no read-modify-write.
 * Per size it prints the median over ROUNDS alternating rounds (each the median of 101
 * batches) of ns per operation and the ratio barrier2 / flags measured in the same run.
 * Usage: team_model [ROUNDS] [CPU_A CPU_B]     (default: 5, the first two allowed CPUs)
 * Build: cc -O2 -pthread -o team_model csrc/team_model.c */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 128
#define MAXN (1 << 20)

struct line_u32 { _Alignas(LINE) _Atomic uint32_t v; };

static struct {
    /* barrier2 */
    struct line_u32 arrived, sense;
    /* flags */
    struct line_u32 go, done;
    /* the job: size and exit, written by the leader before a start */
    _Alignas(LINE) size_t n;
    int protocol, exit;
} S;

static float *src0, *src1, *dst0, *dst1;
static int cpu_a, cpu_b;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "team_model: cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

static inline void relax(void) { __builtin_ia32_pause(); }

/* Sense-reversing barrier for 2 threads; *local is the thread's sense. */
static void barrier2(uint32_t *local) {
    uint32_t target = *local ^ 1;
    *local = target;
    if (atomic_fetch_add_explicit(&S.arrived.v, 1, memory_order_acq_rel) + 1 == 2) {
        atomic_store_explicit(&S.arrived.v, 0, memory_order_relaxed);
        atomic_store_explicit(&S.sense.v, target, memory_order_seq_cst);
    } else {
        while (atomic_load_explicit(&S.sense.v, memory_order_acquire) != target) relax();
    }
}

/* The split of scalebench's chunk(): boundaries on 64-element multiples. */
static void chunk(size_t n, int w, size_t *a, size_t *b) {
    size_t lines = (n + 63) / 64;
    size_t x = lines * w / 2 * 64, y = lines * (w + 1) / 2 * 64;
    *a = x < n ? x : n;
    *b = y < n ? y : n;
}

static void work(int w, size_t n) {
    size_t a, b;
    chunk(n, w, &a, &b);
    for (size_t i = a; i < b; i++) dst0[i] = src0[i] + src1[i];
    memcpy(dst1 + a, dst0 + a, (b - a) * sizeof(float));
}

static void *worker(void *arg) {
    (void)arg;
    pin(cpu_b);
    uint32_t sense = 0, seq = 0;
    for (;;) {
        if (S.protocol == 0) {
            barrier2(&sense);
        } else {
            seq++;
            while (atomic_load_explicit(&S.go.v, memory_order_acquire) != seq) relax();
        }
        if (S.exit) return NULL;
        work(1, S.n);
        if (S.protocol == 0) {
            barrier2(&sense);
        } else {
            atomic_store_explicit(&S.done.v, seq, memory_order_seq_cst);
        }
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b);
static double median(double *v, int n);

/* One round: a fresh worker thread, BATCHES batches of `per` operations of n floats; the
 * median batch's ns per operation (a batch in which a thread was preempted, as happens on a
 * loaded machine, is an outlier the median leaves out). */
#define BATCHES 101
static double round_ns(int protocol, size_t n, long per) {
    memset(&S, 0, sizeof S);
    S.protocol = protocol;
    S.n = n;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    uint32_t sense = 0, seq = 0;
    double batch[BATCHES], t0 = 0;
    long total = per * BATCHES;
    for (long i = -per; i <= total; i++) {
        if (i >= 0 && i % per == 0) {
            double t1 = now_s();
            if (i > 0) batch[i / per - 1] = (t1 - t0) / per * 1e9;
            t0 = t1;
        }
        if (i == total) S.exit = 1;
        if (protocol == 0) {
            barrier2(&sense);
        } else {
            seq++;
            atomic_store_explicit(&S.go.v, seq, memory_order_seq_cst);
        }
        if (i == total) break;
        work(0, n);
        if (protocol == 0) {
            barrier2(&sense);
        } else {
            while (atomic_load_explicit(&S.done.v, memory_order_acquire) != seq) relax();
        }
    }
    pthread_join(t, NULL);
    return median(batch, BATCHES);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 1000) {
        fprintf(stderr, "team_model: ROUNDS must be 1..1000\n");
        return 2;
    }
    if (argc > 3) {
        cpu_a = atoi(argv[2]);
        cpu_b = atoi(argv[3]);
    } else {
        cpu_set_t set;
        sched_getaffinity(0, sizeof set, &set);
        int found = 0;
        for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
            if (CPU_ISSET(c, &set)) (found++ ? (cpu_b = c) : (cpu_a = c));
        if (found < 2) {
            fprintf(stderr, "team_model: needs 2 CPUs, this process may use %d\n", found);
            return 2;
        }
    }
    pin(cpu_a);
    float **bufs[] = {&src0, &src1, &dst0, &dst1};
    for (int i = 0; i < 4; i++) {
        if (posix_memalign((void **)bufs[i], 4096, MAXN * sizeof(float)) != 0) return 4;
        for (size_t k = 0; k < MAXN; k++) (*bufs[i])[k] = (float)(k % 7);
    }
    const size_t sizes_bytes[] = {8, 256, 4096, 65536, 1 << 20};
    printf("# team_model: CPUs %d,%d; %d alternating rounds; ns per 1x2 all-reduce\n", cpu_a, cpu_b,
           rounds);
    printf("%9s %14s %12s %8s\n", "size (B)", "barrier2 (ns)", "flags (ns)", "ratio");
    for (size_t s = 0; s < sizeof sizes_bytes / sizeof *sizes_bytes; s++) {
        size_t n = sizes_bytes[s] / sizeof(float);
        long per = sizes_bytes[s] <= 4096 ? 500 : (sizes_bytes[s] <= 65536 ? 50 : 5);
        double a[1000], b[1000], r[1000];
        for (int k = 0; k < rounds; k++) {
            a[k] = round_ns(0, n, per);
            b[k] = round_ns(1, n, per);
            r[k] = a[k] / b[k];
        }
        double ra = median(a, rounds), rb = median(b, rounds), rr = median(r, rounds);
        printf("%9zu %14.1f %12.1f %8.2f\n", sizes_bytes[s], ra, rb, rr);
    }
    return 0;
}
