/* GEMM micro-kernel model for ci/bench-gemm-kernel.sh (no code shared with scalebench): how
 * close an in-cache GEMM inner loop gets to the FMA peak on this core. Two loops, alternating
 * round by round, each timed by this thread's CPU time:
 *   fma:    12 independent FMA chains on registers (what scalebench's one-CPU peak measures);
 *   kernel: the shape of OpenBLAS's f32 micro-kernels: 12 accumulators = 2 vectors of packed A
 *           x 6 broadcasts of packed B per k step, A and B panels resident in L1 (K = 256).
 * Prints the median GFLOP/s of each and kernel/fma. What a whole GEMM loses beyond this
 * ratio is packing and cache traffic, not the inner loop. Compile with -O3 -march=native;
 * uses 512-bit vectors where the compiler targets AVX-512F, else 256-bit AVX2+FMA.
 * Usage: gemm_microkernel [ROUNDS] */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __AVX512F__
typedef __m512 vec;
#define LANES 16
#define VSET1(x) _mm512_set1_ps(x)
#define VLOAD(p) _mm512_load_ps(p)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSUM(v) _mm512_reduce_add_ps(v)
#define ISA "AVX-512F"
#else
typedef __m256 vec;
#define LANES 8
#define VSET1(x) _mm256_set1_ps(x)
#define VLOAD(p) _mm256_load_ps(p)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float VSUM(__m256 v) { float t[8]; _mm256_storeu_ps(t, v); float s = 0; for (int i = 0; i < 8; i++) s += t[i]; return s; }
#define ISA "AVX2+FMA"
#endif

#define K 256
static double cpu_s(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
static volatile float sink;

static double fma_rate(long reps) {
    vec c[12], m = VSET1(0.999999f), d = VSET1(1e-7f);
    for (int i = 0; i < 12; i++) c[i] = VSET1((float)i);
    double t = cpu_s();
    for (long r = 0; r < reps; r++)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < 12; i++) c[i] = VFMA(c[i], m, d);
    t = cpu_s() - t;
    float s = 0;
    for (int i = 0; i < 12; i++) s += VSUM(c[i]);
    sink = s;
    return reps * (double)K * 12 * LANES * 2 / t / 1e9;
}

static double kernel_rate(long reps, const float *A, const float *B) {
    vec c[12];
    for (int i = 0; i < 12; i++) c[i] = VSET1(0.0f);
    double t = cpu_s();
    for (long r = 0; r < reps; r++) {
        const float *a = A, *b = B;
        for (int k = 0; k < K; k++) {
            vec a0 = VLOAD(a), a1 = VLOAD(a + LANES);
            for (int j = 0; j < 6; j++) {
                vec bj = VSET1(b[j]);
                c[2 * j] = VFMA(a0, bj, c[2 * j]);
                c[2 * j + 1] = VFMA(a1, bj, c[2 * j + 1]);
            }
            a += 2 * LANES;
            b += 6;
        }
    }
    t = cpu_s() - t;
    float s = 0;
    for (int i = 0; i < 12; i++) s += VSUM(c[i]);
    sink = s;
    return reps * (double)K * 12 * LANES * 2 / t / 1e9;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    if (rounds < 1 || rounds > 1000) { fprintf(stderr, "usage: gemm_microkernel [ROUNDS 1..1000]\n"); return 2; }
    float *A = aligned_alloc(64, sizeof(float) * 2 * LANES * K), *B = aligned_alloc(64, sizeof(float) * 6 * K);
    for (int i = 0; i < 2 * LANES * K; i++) A[i] = 1e-3f * (i % 7);
    for (int i = 0; i < 6 * K; i++) B[i] = 1e-3f * (i % 5);
    long reps = 20000; /* about 10 ms a run at 200 GFLOP/s with 512-bit vectors */
    double f[1000], k[1000], ratio[1000];
    fma_rate(reps / 10), kernel_rate(reps / 10, A, B); /* warm up */
    for (int r = 0; r < rounds; r++) {
        if (r % 2) { k[r] = kernel_rate(reps, A, B); f[r] = fma_rate(reps); }
        else { f[r] = fma_rate(reps); k[r] = kernel_rate(reps, A, B); }
        ratio[r] = k[r] / f[r];
    }
    qsort(f, rounds, sizeof f[0], cmp); qsort(k, rounds, sizeof k[0], cmp); qsort(ratio, rounds, sizeof ratio[0], cmp);
    printf("%s f32, %d rounds: fma %.1f GFLOP/s, kernel %.1f GFLOP/s, kernel/fma %.3f (range %.3f-%.3f)\n",
           ISA, rounds, f[rounds / 2], k[rounds / 2], ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
    free(A); free(B);
    return 0;
}
