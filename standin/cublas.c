/* Stand-in cuBLAS (libcublas.so): the entry points scalebench's CUDA backend calls, with the
 * real ABI — handle create/destroy, set stream, version, and cublasGemmStridedBatchedEx
 * (column-major, f32/f64/f16/bf16 data, FP32/TF32/FP64 compute), run on the handle's stream
 * thread of the libcuda stand-in; the arithmetic is gemm_arith.h's, shared with the rocBLAS
 * stand-in. SCALEBENCH_STANDIN_CUBLAS_VERSION sets the version (default 130000 = 13.0.0);
 * SCALEBENCH_STANDIN_DEFECT=gemm plants one wrong element in every product. */
#include "gemm_arith.h"

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
    int dbl = compute == C_64F || compute == C_64F_PEDANTIC;
    /* host scalars are read before the call returns (default pointer mode) */
    struct sbs_gemm g = {
        .call = call, .ta = transa, .tb = transb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
        .ldc = ldc, .batch = batch,
        .type = t == R_64F ? SBS_G_F64 : t == R_32F ? SBS_G_F32 : t == R_16F ? SBS_G_F16 : SBS_G_BF16,
        .acc = dbl ? SBS_ACC_F64 : compute == C_32F_FAST_TF32 ? SBS_ACC_TF32 : SBS_ACC_F32,
        .sa = strideA, .sb = strideB, .sc = strideC,
        .alpha = dbl ? *(const double *)alpha : *(const float *)alpha,
        .beta = dbl ? *(const double *)beta : *(const float *)beta,
        .a = (sbs_devptr)(uintptr_t)A, .b = (sbs_devptr)(uintptr_t)B, .c = (sbs_devptr)(uintptr_t)C,
    };
    switch (sbs_gemm_submit(&g, dev, h->stream)) {
    case SBS_GEMM_OK: return ST_OK;
    case SBS_GEMM_NO_MEMORY: return ST_ALLOC_FAILED;
    case SBS_GEMM_NOT_SUPPORTED: return ST_NOT_SUPPORTED;
    default: return ST_INVALID_VALUE;
    }
}
