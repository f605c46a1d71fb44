/* A model of the hybrid backend's per-collective synchronisation (src/backend/team.rs), to
 * measure what the protocol alone costs on this machine, without MPI or the harness.
 *
 * Two threads, each pinned to its own CPU, run a 1-rank x 2-device all-reduce of N floats the
 * way scalebench's team does (the work split on 64-element chunks, so small messages fall to
 * worker 1: dst0 = src0 + src1, dst1 = dst0), back to back, in three variants:
 *   old:     the job starts and ends with a sense-reversing counter barrier (an atomic add per
 *            thread on one shared line, then a sense flip), and the worker finds its arguments
 *            through what the leader wrote for this call (a closure on the leader's stack
 *            pointing to freshly built pointer tables): the team before this change.
 *   flags:   the leader releases the job with a sequence number on its own line; the worker
 *            answers with its own sequence number on its own line; no read-modify-write; the
 *            arguments are still chased as in `old`.
 *   new:     flags, and the arguments travel on the release's line, pointing to tables that
 *            are not rewritten when unchanged: the team after this change.
 * Per size it prints the median over ROUNDS alternating rounds (each the median of 101
 * batches) of ns per operation, and the ratios measured in the same run.
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

/* A job's arguments. */
struct tables { float *src0, *src1, *dst0, *dst1; };
struct args { size_t n; const struct tables *t; };

static struct {
    /* barrier2 */
    struct line_u32 arrived, sense;
    /* flags: the leader's line carries the release number and, in `new`, the arguments */
    _Alignas(LINE) _Atomic uint32_t go;
    struct args inline_args;
    struct args *_Atomic chased; /* `old`, `flags`: where this call's arguments are */
    struct line_u32 done;
    int protocol, exit;
} S;

/* `new`: the tables, written once; `old`/`flags`: rewritten for every call. */
static struct tables fixed_tables;
static _Alignas(LINE) struct tables fresh_tables;

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

static void work(int w, const struct args *x) {
    size_t a, b;
    const struct tables *t = x->t;
    chunk(x->n, w, &a, &b);
    for (size_t i = a; i < b; i++) t->dst0[i] = t->src0[i] + t->src1[i];
    memcpy(t->dst1 + a, t->dst0 + a, (b - a) * sizeof(float));
}

static const struct args *job_args(void) {
    return S.protocol == 2 ? &S.inline_args : atomic_load_explicit(&S.chased, memory_order_relaxed);
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
            while (atomic_load_explicit(&S.go, memory_order_acquire) != seq) relax();
        }
        if (S.exit) return NULL;
        work(1, job_args());
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
    fixed_tables = (struct tables){src0, src1, dst0, dst1};
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
        /* This call's arguments, as each variant hands them over. */
        volatile struct args frame; /* the leader's stack, like a closure's captures */
        if (protocol == 2) {
            S.inline_args = (struct args){n, &fixed_tables};
        } else {
            fresh_tables = (struct tables){src0, src1, dst0, dst1};
            frame.n = n;
            frame.t = &fresh_tables;
            atomic_store_explicit(&S.chased, (struct args *)&frame, memory_order_relaxed);
        }
        if (protocol == 0) {
            barrier2(&sense);
        } else {
            seq++;
            atomic_store_explicit(&S.go, seq, memory_order_seq_cst);
        }
        if (i == total) break;
        work(0, protocol == 2 ? &S.inline_args : (const struct args *)&frame);
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
    printf("%9s %9s %11s %9s %11s %11s\n", "size (B)", "old (ns)", "flags (ns)", "new (ns)",
           "old / new", "flags / new");
    for (size_t s = 0; s < sizeof sizes_bytes / sizeof *sizes_bytes; s++) {
        size_t n = sizes_bytes[s] / sizeof(float);
        long per = sizes_bytes[s] <= 4096 ? 500 : (sizes_bytes[s] <= 65536 ? 50 : 5);
        double a[1000], b[1000], c[1000], r[1000], q[1000];
        for (int k = 0; k < rounds; k++) {
            a[k] = round_ns(0, n, per);
            b[k] = round_ns(1, n, per);
            c[k] = round_ns(2, n, per);
            r[k] = a[k] / c[k];
            q[k] = b[k] / c[k];
        }
        double ra = median(a, rounds), rb = median(b, rounds), rc = median(c, rounds);
        printf("%9zu %9.1f %11.1f %9.1f %11.2f %11.2f\n", sizes_bytes[s], ra, rb, rc,
               median(r, rounds), median(q, rounds));
    }
    return 0;
}
