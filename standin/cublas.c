/* Stand-in cuBLAS (libcublas.so): the entry points scalebench's CUDA backend calls, with the
 * real ABI — handle create/destroy, set stream, version, and cublasGemmStridedBatchedEx
 * (column-major, f32/f64/f16/bf16 data, FP32/TF32/FP64 compute), run on the handle's stream
 * thread of the libcuda stand-in. SCALEBENCH_STANDIN_CUBLAS_VERSION sets the version
 * (default 130000 = 13.0.0). */
#include "standin.h"

typedef int cublasStatus_t;
enum {
    ST_OK = 0,
    ST_NOT_INITIALIZED = 1,
    ST_ALLOC_FAILED = 3,
    ST_INVALID_VALUE = 7,
    ST_NOT_SUPPORTED = 15,
};
enum { R_32F = 0, R_64F = 1, R_16F = 2, R_16BF = 14 };
enum { C_32F = 68, C_32F_PEDANTIC = 69, C_64F = 70, C_64F_PEDANTIC = 71, C_32F_FAST_TF32 = 77 };

#define HANDLE_MAGIC 0x5b626c61u

struct handle {
    uint32_t magic;
    int dev;
    void *stream;
};

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate("libcublas.so");
}

static int live_handles;

SBS_EXPORT cublasStatus_t cublasCreate_v2(struct handle **h) {
    if (!h)
        return ST_INVALID_VALUE;
    int dev = sbs_current_device();
    if (dev < 0)
        return ST_NOT_INITIALIZED;
    struct handle *x = calloc(1, sizeof *x);
    if (!x)
        return ST_ALLOC_FAILED;
    x->magic = HANDLE_MAGIC;
    x->dev = dev;
    x->stream = NULL;
    __atomic_add_fetch(&live_handles, 1, __ATOMIC_RELAXED);
    *h = x;
    return ST_OK;
}

static struct handle *check(struct handle *h, const char *call) {
    if (!h || h->magic != HANDLE_MAGIC)
        sbs_die(call, "%p is not a live cuBLAS handle", (void *)h);
    return h;
}

SBS_EXPORT cublasStatus_t cublasDestroy_v2(struct handle *h) {
    check(h, "cublasDestroy_v2")->magic = 0;
    free(h);
    __atomic_sub_fetch(&live_handles, 1, __ATOMIC_RELAXED);
    return ST_OK;
}

__attribute__((destructor)) static void standin_unload(void) {
    int n = __atomic_load_n(&live_handles, __ATOMIC_RELAXED);
    if (n == 0)
        return;
    fprintf(stderr, "scalebench stand-in: leak at exit (libcublas.so): %d cuBLAS handle(s) were never destroyed\n", n);
    const char *w = getenv("SCALEBENCH_STANDIN_LEAKS");
    if (!(w && strcmp(w, "warn") == 0))
        abort();
}

SBS_EXPORT cublasStatus_t cublasSetStream_v2(struct handle *h, void *stream) {
    check(h, "cublasSetStream_v2");
    int sdev = sbs_stream_device(stream, "cublasSetStream_v2");
    if (sdev != h->dev)
        sbs_die("cublasSetStream_v2", "a stream of device %d given to a handle of device %d", sdev, h->dev);
    h->stream = stream;
    return ST_OK;
}

SBS_EXPORT cublasStatus_t cublasGetVersion_v2(struct handle *h, int *v) {
    check(h, "cublasGetVersion_v2");
    if (!v)
        return ST_INVALID_VALUE;
    *v = (int)sbs_env_long("SCALEBENCH_STANDIN_CUBLAS_VERSION", 130000);
    return ST_OK;
}

/* ---- element conversions (round to nearest even, as the hardware converts) ---- */
static float bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0xfffu + ((u >> 13) & 1u);
        u &= ~0x1fffu;
    }
    memcpy(&f, &u, 4);
    return f;
}

static double load(const void *p, size_t i, int t) {
    switch (t) {
    case R_32F: return ((const float *)p)[i];
    case R_64F: return ((const double *)p)[i];
    case R_16F: return (double)((const _Float16 *)p)[i];
    default: return bf16_to_f(((const uint16_t *)p)[i]);
    }
}
static void store(void *p, size_t i, int t, double v) {
    switch (t) {
    case R_32F: ((float *)p)[i] = (float)v; break;
    case R_64F: ((double *)p)[i] = v; break;
    case R_16F: ((_Float16 *)p)[i] = (_Float16)(float)v; break;
    default: ((uint16_t *)p)[i] = f_to_bf16((float)v); break;
    }
}

struct gemm {
    int ta, tb, m, n, k, lda, ldb, ldc, batch, type, compute;
    long long sa, sb, sc;
    double alpha, beta;
    sbs_devptr a, b, c;
    size_t abytes, bbytes, cbytes;
    int dev;
};

static size_t elem_size(int t) {
    return t == R_64F ? 8 : t == R_32F ? 4 : 2;
}

/* Elements a column-major operand spans: `batch` matrices `stride` apart. */
static size_t span(int rows, int cols, int ld, long long stride, int batch) {
    if (rows == 0 || cols == 0)
        return 0;
    size_t one = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    return one + (size_t)stride * (size_t)(batch - 1);
}

static void run_gemm(void *p) {
    struct gemm *g = p;
    const char *call = "cublasGemmStridedBatchedEx";
    const void *A = sbs_translate(g->a, g->abytes, g->dev, call, "A");
    const void *B = sbs_translate(g->b, g->bbytes, g->dev, call, "B");
    void *C = sbs_translate(g->c, g->cbytes, g->dev, call, "C");
    int dbl = g->compute == C_64F || g->compute == C_64F_PEDANTIC;
    int t32 = g->compute == C_32F_FAST_TF32;
    double *acc = malloc(sizeof(double) * (size_t)(g->m > 0 ? g->m : 1));
    float *accf = malloc(sizeof(float) * (size_t)(g->m > 0 ? g->m : 1));
    if (!acc || !accf)
        sbs_die(call, "out of host memory");
    for (int bi = 0; bi < g->batch; bi++) {
        size_t oa = (size_t)(g->sa * bi), ob = (size_t)(g->sb * bi), oc = (size_t)(g->sc * bi);
        for (int j = 0; j < g->n; j++) {
            for (int i = 0; i < g->m; i++) {
                acc[i] = 0;
                accf[i] = 0;
            }
            for (int l = 0; l < g->k; l++) {
                size_t bidx = g->tb ? (size_t)j + (size_t)l * g->ldb : (size_t)l + (size_t)j * g->ldb;
                double bv = load(B, ob + bidx, g->type);
                for (int i = 0; i < g->m; i++) {
                    size_t aidx = g->ta ? (size_t)l + (size_t)i * g->lda : (size_t)i + (size_t)l * g->lda;
                    double av = load(A, oa + aidx, g->type);
                    if (dbl) {
                        acc[i] += av * bv;
                    } else if (t32) {
                        accf[i] += tf32((float)av) * tf32((float)bv);
                    } else {
                        accf[i] += (float)av * (float)bv;
                    }
                }
            }
            for (int i = 0; i < g->m; i++) {
                size_t ci = oc + (size_t)i + (size_t)j * g->ldc;
                double s = dbl ? acc[i] : (double)accf[i];
                double old = g->beta != 0 ? load(C, ci, g->type) : 0;
                double v = dbl ? g->alpha * s + g->beta * old
                               : (double)((float)g->alpha * (float)s + (float)g->beta * (float)old);
                store(C, ci, g->type, v);
            }
        }
    }
    free(acc);
    free(accf);
    free(g);
}

SBS_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    struct handle *h, int transa, int transb, int m, int n, int k, const void *alpha, const void *A,
    int Atype, int lda, long long strideA, const void *B, int Btype, int ldb, long long strideB,
    const void *beta, void *C, int Ctype, int ldc, long long strideC, int batch, int compute,
    int algo) {
    const char *call = "cublasGemmStridedBatchedEx";
    (void)algo;
    check(h, call);
    if (transa < 0 || transa > 1 || transb < 0 || transb > 1)
        return ST_NOT_SUPPORTED;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || strideA < 0 || strideB < 0 || strideC < 0)
        return ST_INVALID_VALUE;
    int arows = transa ? k : m, acols = transa ? m : k;
    int brows = transb ? n : k, bcols = transb ? k : n;
    if (lda < (arows > 1 ? arows : 1) || ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1))
        return ST_INVALID_VALUE;
    if (Atype != Btype || Atype != Ctype)
        return ST_NOT_SUPPORTED;
    int t = Atype;
    int ok = (t == R_32F && (compute == C_32F || compute == C_32F_PEDANTIC || compute == C_32F_FAST_TF32)) ||
             (t == R_64F && (compute == C_64F || compute == C_64F_PEDANTIC)) ||
             ((t == R_16F || t == R_16BF) && (compute == C_32F || compute == C_32F_PEDANTIC));
    if (!ok)
        return ST_NOT_SUPPORTED;
    if (!alpha || !beta)
        return ST_INVALID_VALUE;
    int dev = sbs_current_device();
    if (dev != h->dev)
        sbs_die(call, "handle of device %d used while %s is current", h->dev, dev < 0 ? "no context" : "another device's context");
    if (m == 0 || n == 0 || batch == 0)
        return ST_OK;
    struct gemm *g = calloc(1, sizeof *g);
    if (!g)
        return ST_ALLOC_FAILED;
    int dbl = compute == C_64F || compute == C_64F_PEDANTIC;
    /* host scalars are read before the call returns (default pointer mode) */
    g->alpha = dbl ? *(const double *)alpha : *(const float *)alpha;
    g->beta = dbl ? *(const double *)beta : *(const float *)beta;
    size_t es = elem_size(t);
    *g = (struct gemm){transa, transb, m, n, k, lda, ldb, ldc, batch, t, compute, strideA, strideB,
                       strideC, g->alpha, g->beta, (sbs_devptr)(uintptr_t)A, (sbs_devptr)(uintptr_t)B,
                       (sbs_devptr)(uintptr_t)C, es * span(arows, acols, lda, strideA, batch),
                       es * span(brows, bcols, ldb, strideB, batch), es * span(m, n, ldc, strideC, batch),
                       h->dev};
    if (k == 0)
        g->abytes = g->bbytes = 0;
    sbs_translate(g->a, g->abytes, dev, call, "A");
    sbs_translate(g->b, g->bbytes, dev, call, "B");
    char *cp = sbs_translate(g->c, g->cbytes, dev, call, "C");
    const char *ap = sbs_translate(g->a, 0, dev, call, "A");
    const char *bp = sbs_translate(g->b, 0, dev, call, "B");
    if ((ap < cp + g->cbytes && cp < ap + g->abytes) || (bp < cp + g->cbytes && cp < bp + g->bbytes))
        sbs_die(call, "C overlaps A or B: cuBLAS writes C while it reads them");
    sbs_enqueue(h->stream, run_gemm, g, call, 1);
    return ST_OK;
}
