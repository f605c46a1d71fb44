/* Stand-in rocBLAS (librocblas.so): the entry points scalebench's ROCm backend calls, with
 * rocBLAS's ABI — handle create/destroy (on the calling thread's current HIP device), set
 * stream, version string, status names, and rocblas_gemm_strided_batched_ex (column-major,
 * f32/f64/f16/bf16 data; f16/bf16 accumulate in f32), run on the handle's stream thread of the
 * stand-in HIP runtime (hip.c over cuda.c's driver), with the arithmetic of gemm_arith.h that
 * the cuBLAS stand-in uses too.
 *
 * Knobs: SCALEBENCH_STANDIN_ROCBLAS_VERSION (default 4.2.0.sbs, ROCm 6.2's rocBLAS),
 * SCALEBENCH_STANDIN_DEFECT=gemm (one wrong element in every product). C must be D (the one
 * form the backend calls); anything else is refused as not implemented. CPU test doubles: no
 * number they produce is an AMD GPU's. */
#include "gemm_arith.h"

typedef int rocblas_status;
enum {
    RS_SUCCESS = 0,
    RS_INVALID_HANDLE = 1,
    RS_NOT_IMPLEMENTED = 2,
    RS_INVALID_POINTER = 3,
    RS_INVALID_SIZE = 4,
    RS_MEMORY_ERROR = 5,
    RS_INTERNAL_ERROR = 6,
    RS_INVALID_VALUE = 11,
};
/* rocblas_operation, rocblas_datatype (rocblas-types.h). */
enum { OP_NONE = 111, OP_TRANSPOSE = 112 };
enum { DT_F16 = 150, DT_F32 = 151, DT_F64 = 152, DT_BF16 = 168 };

#define HANDLE_MAGIC 0x5b726f63u

struct handle {
    uint32_t magic;
    int dev;
    void *stream;
};

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate("librocblas.so");
}

static int live_handles;

SBS_EXPORT rocblas_status rocblas_create_handle(struct handle **h) {
    if (!h)
        return RS_INVALID_POINTER;
    /* The backend makes the device current first (hipSetDevice), as rocBLAS binds a handle
     * to the current device. */
    int dev = sbs_current_device();
    if (dev < 0)
        return RS_INTERNAL_ERROR;
    struct handle *x = calloc(1, sizeof *x);
    if (!x)
        return RS_MEMORY_ERROR;
    x->magic = HANDLE_MAGIC;
    x->dev = dev;
    x->stream = NULL;
    __atomic_add_fetch(&live_handles, 1, __ATOMIC_RELAXED);
    *h = x;
    return RS_SUCCESS;
}

static struct handle *check(struct handle *h, const char *call) {
    if (!h || h->magic != HANDLE_MAGIC)
        sbs_die(call, "%p is not a live rocBLAS handle", (void *)h);
    return h;
}

SBS_EXPORT rocblas_status rocblas_destroy_handle(struct handle *h) {
    check(h, "rocblas_destroy_handle")->magic = 0;
    free(h);
    __atomic_sub_fetch(&live_handles, 1, __ATOMIC_RELAXED);
    return RS_SUCCESS;
}

__attribute__((destructor)) static void standin_unload(void) {
    int n = __atomic_load_n(&live_handles, __ATOMIC_RELAXED);
    if (n == 0)
        return;
    fprintf(stderr, "scalebench stand-in: leak at exit (librocblas.so): %d rocBLAS handle(s) were never destroyed\n", n);
    const char *w = getenv("SCALEBENCH_STANDIN_LEAKS");
    if (!(w && strcmp(w, "warn") == 0))
        abort();
}

SBS_EXPORT rocblas_status rocblas_set_stream(struct handle *h, void *stream) {
    check(h, "rocblas_set_stream");
    int sdev = sbs_stream_device(stream, "rocblas_set_stream");
    if (sdev != h->dev)
        sbs_die("rocblas_set_stream", "a stream of device %d given to a handle of device %d", sdev, h->dev);
    h->stream = stream;
    return RS_SUCCESS;
}

static const char *version(void) {
    const char *v = getenv("SCALEBENCH_STANDIN_ROCBLAS_VERSION");
    return v && *v ? v : "4.2.0.sbs";
}

SBS_EXPORT rocblas_status rocblas_get_version_string_size(size_t *len) {
    if (!len)
        return RS_INVALID_POINTER;
    *len = strlen(version()) + 1;
    return RS_SUCCESS;
}

SBS_EXPORT rocblas_status rocblas_get_version_string(char *buf, size_t len) {
    if (!buf)
        return RS_INVALID_POINTER;
    const char *v = version();
    if (len < strlen(v) + 1)
        return RS_INVALID_SIZE;
    memcpy(buf, v, strlen(v) + 1);
    return RS_SUCCESS;
}

SBS_EXPORT const char *rocblas_status_to_string(rocblas_status s) {
    switch (s) {
    case RS_SUCCESS: return "rocblas_status_success";
    case RS_INVALID_HANDLE: return "rocblas_status_invalid_handle";
    case RS_NOT_IMPLEMENTED: return "rocblas_status_not_implemented";
    case RS_INVALID_POINTER: return "rocblas_status_invalid_pointer";
    case RS_INVALID_SIZE: return "rocblas_status_invalid_size";
    case RS_MEMORY_ERROR: return "rocblas_status_memory_error";
    case RS_INTERNAL_ERROR: return "rocblas_status_internal_error";
    case RS_INVALID_VALUE: return "rocblas_status_invalid_value";
    default: return "<undefined rocblas_status>";
    }
}

SBS_EXPORT rocblas_status rocblas_gemm_strided_batched_ex(
    struct handle *h, int transa, int transb, int m, int n, int k, const void *alpha, const void *A,
    int a_type, int lda, int64_t stride_a, const void *B, int b_type, int ldb, int64_t stride_b,
    const void *beta, const void *C, int c_type, int ldc, int64_t stride_c, void *D, int d_type,
    int ldd, int64_t stride_d, int batch, int compute, int algo, int32_t solution_index,
    uint32_t flags) {
    const char *call = "rocblas_gemm_strided_batched_ex";
    (void)algo;
    (void)solution_index;
    (void)flags;
    check(h, call);
    if ((transa != OP_NONE && transa != OP_TRANSPOSE) || (transb != OP_NONE && transb != OP_TRANSPOSE))
        return RS_NOT_IMPLEMENTED;
    if (a_type != b_type || a_type != c_type || a_type != d_type)
        return RS_NOT_IMPLEMENTED;
    int t = a_type;
    int ok = (t == DT_F32 && compute == DT_F32) || (t == DT_F64 && compute == DT_F64) ||
             ((t == DT_F16 || t == DT_BF16) && compute == DT_F32);
    if (!ok)
        return RS_NOT_IMPLEMENTED;
    /* The backend passes C as D; a separate D is real rocBLAS's, not modelled here. */
    if (C != D || ldc != ldd || stride_c != stride_d)
        return RS_NOT_IMPLEMENTED;
    if (!alpha || !beta)
        return RS_INVALID_POINTER;
    int dev = sbs_current_device();
    if (dev != h->dev)
        sbs_die(call, "handle of device %d used while %s is current", h->dev, dev < 0 ? "no device" : "another device");
    int dbl = compute == DT_F64;
    /* host scalars are read before the call returns (rocblas_pointer_mode_host) */
    struct sbs_gemm g = {
        .call = call, .ta = transa == OP_TRANSPOSE, .tb = transb == OP_TRANSPOSE, .m = m, .n = n,
        .k = k, .lda = lda, .ldb = ldb, .ldc = ldc, .batch = batch,
        .type = t == DT_F64 ? SBS_G_F64 : t == DT_F32 ? SBS_G_F32 : t == DT_F16 ? SBS_G_F16 : SBS_G_BF16,
        .acc = dbl ? SBS_ACC_F64 : SBS_ACC_F32,
        .sa = stride_a, .sb = stride_b, .sc = stride_c,
        .alpha = dbl ? *(const double *)alpha : *(const float *)alpha,
        .beta = dbl ? *(const double *)beta : *(const float *)beta,
        .a = (sbs_devptr)(uintptr_t)A, .b = (sbs_devptr)(uintptr_t)B, .c = (sbs_devptr)(uintptr_t)D,
    };
    switch (sbs_gemm_submit(&g, dev, h->stream)) {
    case SBS_GEMM_OK: return RS_SUCCESS;
    case SBS_GEMM_NO_MEMORY: return RS_MEMORY_ERROR;
    case SBS_GEMM_NOT_SUPPORTED: return RS_NOT_IMPLEMENTED;
    default: return RS_INVALID_SIZE;
    }
}
