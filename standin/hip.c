/* Stand-in HIP runtime (libamdhip64.so): the HIP entry points scalebench's ROCm backend calls,
 * with HIP's ABI (hipError_t is an int, 0 = success; streams and events are opaque handles;
 * device pointers are void *), built over the stand-in driver of cuda.c compiled into the
 * same library. So the RCCL stand-in (nccl.c built as librccl.so) finds the driver services
 * (queues, memory table) it needs in this library, as the NCCL stand-in finds them in libcuda.
 *
 * HIP's runtime model is kept: each thread has a current device (0 until hipSetDevice), whose
 * primary context the runtime holds for the life of the process; hipMemcpyAsync orders a copy
 * on a stream of the current device (a stream of another device is a contract violation, as
 * the driver stand-in checks).
 *
 * Knobs (besides the driver's): SCALEBENCH_STANDIN_HIP_VERSION (60200000: HIP 6.2.0, encoded
 * as hipRuntimeGetVersion does, major·10^7 + minor·10^5 + patch). Built with
 * -DSBS_OMIT_HIP_ELAPSED it lacks hipEventElapsedTime (the missing-symbol test). These are CPU
 * test doubles: no number they produce is an AMD GPU's. */
#define SBS_DRIVER_LIB "libamdhip64.so"
#define SBS_HIP_RUNTIME 1
#include "cuda.c"

typedef int hipError_t;

static pthread_mutex_t H = PTHREAD_MUTEX_INITIALIZER;
static void *g_hip_ctx[MAXDEV];

/* Makes device `d`'s primary context current on this thread (retained once per process). */
static hipError_t use_device(int d) {
    CUresult r = cuInit(0);
    if (r != OK)
        return r;
    if (!valid_dev(d))
        return g_ndev == 0 ? E_NO_DEVICE : E_INVALID_DEVICE;
    pthread_mutex_lock(&H);
    if (!g_hip_ctx[d])
        r = cuDevicePrimaryCtxRetain(&g_hip_ctx[d], d);
    void *ctx = g_hip_ctx[d];
    pthread_mutex_unlock(&H);
    if (r != OK)
        return r;
    return cuCtxSetCurrent(ctx);
}

/* HIP's implicit device: 0 until the thread chose one. */
static hipError_t current(void) {
    return t_cur ? OK : use_device(0);
}

SBS_EXPORT hipError_t hipRuntimeGetVersion(int *v) {
    SBS_ENTRY("hipRuntimeGetVersion");
    if (!v)
        return E_INVALID_VALUE;
    *v = (int)sbs_env_long("SCALEBENCH_STANDIN_HIP_VERSION", 60200000);
    return OK;
}

SBS_EXPORT hipError_t hipGetDeviceCount(int *n) {
    SBS_ENTRY("hipGetDeviceCount");
    if (!n)
        return E_INVALID_VALUE;
    CUresult r = cuInit(0);
    if (r != OK)
        return r;
    *n = g_ndev;
    return g_ndev ? OK : E_NO_DEVICE;
}

SBS_EXPORT hipError_t hipSetDevice(int d) {
    SBS_ENTRY("hipSetDevice");
    return use_device(d);
}

SBS_EXPORT hipError_t hipDeviceGetName(char *name, int len, int d) {
    SBS_ENTRY("hipDeviceGetName");
    CUresult r = cuInit(0);
    return r != OK ? r : cuDeviceGetName(name, len, d);
}

SBS_EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
    SBS_ENTRY("hipDeviceTotalMem");
    CUresult r = cuInit(0);
    return r != OK ? r : cuDeviceTotalMem_v2(bytes, d);
}

SBS_EXPORT hipError_t hipDeviceGetPCIBusId(char *id, int len, int d) {
    SBS_ENTRY("hipDeviceGetPCIBusId");
    if (!id || len <= 0)
        return E_INVALID_VALUE;
    CUresult r = cuInit(0);
    if (r != OK)
        return r;
    if (!valid_dev(d))
        return E_INVALID_DEVICE;
    /* domain 0xfffe: one no real machine has, so no sysfs locality is found */
    snprintf(id, (size_t)len, "fffe:5b:%02x.0", g_phys[d]);
    return OK;
}

/* hipDeviceAttribute_t as ROCm 5.0+ numbers it (hip_runtime_api.h), not CUDA's numbers: only
 * the attributes the backend asks for are modelled; any other is a contract violation, so a
 * backend change that reads one cannot pass on a made-up value. */
SBS_EXPORT hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
    SBS_ENTRY("hipDeviceGetAttribute");
    if (!v)
        return E_INVALID_VALUE;
    CUresult r = cuInit(0);
    if (r != OK)
        return r;
    if (!valid_dev(d))
        return E_INVALID_DEVICE;
    switch (attr) {
    case 19: /* hipDeviceAttributeL2CacheSize: 4 MiB, as the CUDA stand-in, so --buffers rotate
              * has sets to go through (an MI250X GCD has 8 MiB) */
        *v = 4 << 20;
        return OK;
    default:
        sbs_die("hipDeviceGetAttribute", "attribute %d is not modelled by the stand-in", attr);
    }
}

SBS_EXPORT hipError_t hipMalloc(void **p, size_t bytes) {
    SBS_ENTRY("hipMalloc");
    if (!p)
        return E_INVALID_VALUE;
    hipError_t r = current();
    if (r != OK)
        return r;
    CUdeviceptr dp = 0;
    r = cuMemAlloc_v2(&dp, bytes);
    *p = r == OK ? (void *)(uintptr_t)dp : NULL;
    return r;
}

SBS_EXPORT hipError_t hipFree(void *p) {
    SBS_ENTRY("hipFree");
    if (!p)
        return OK;
    hipError_t r = current();
    return r != OK ? r : cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
}

/* Synchronous, as hipMemset is for the host: the device finishes its queued work first. */
SBS_EXPORT hipError_t hipMemset(void *p, int value, size_t bytes) {
    SBS_ENTRY("hipMemset");
    hipError_t r = current();
    if (r != OK)
        return r;
    if (bytes == 0)
        return OK;
    r = cuCtxSynchronize();
    if (r != OK)
        return r;
    void *h = sbs_translate((sbs_devptr)(uintptr_t)p, bytes, t_cur->dev, "hipMemset", "destination");
    memset(h, value, bytes);
    return OK;
}

/* hipMemcpyKind: host-to-device 1, device-to-host 2, device-to-device 3 (the ones modelled). */
SBS_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, void *stream) {
    SBS_ENTRY("hipMemcpyAsync");
    hipError_t r = current();
    if (r != OK)
        return r;
    switch (kind) {
    case 1: return cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)dst, src, bytes, stream);
    case 2: return cuMemcpyDtoHAsync_v2(dst, (CUdeviceptr)(uintptr_t)src, bytes, stream);
    case 3:
        return cuMemcpyDtoDAsync_v2((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, stream);
    default:
        fprintf(stderr, "scalebench stand-in: hipMemcpyAsync kind %d is not modelled\n", kind);
        return E_INVALID_VALUE;
    }
}

/* Page-locked host memory: the driver stand-in's pinned allocations (copies from them are
 * asynchronous and poisoned until they ran, as on the CUDA side). Flags are not modelled. */
SBS_EXPORT hipError_t hipHostMalloc(void **p, size_t bytes, unsigned int flags) {
    hipError_t r = current();
    return r != OK ? r : cuMemHostAlloc(p, bytes, flags);
}

SBS_EXPORT hipError_t hipHostFree(void *p) {
    return p ? cuMemFreeHost(p) : OK;
}

SBS_EXPORT hipError_t hipStreamCreate(void **s) {
    SBS_ENTRY("hipStreamCreate");
    hipError_t r = current();
    return r != OK ? r : cuStreamCreate(s, 0);
}

SBS_EXPORT hipError_t hipStreamDestroy(void *s) {
    SBS_ENTRY("hipStreamDestroy");
    return cuStreamDestroy_v2(s);
}

SBS_EXPORT hipError_t hipStreamSynchronize(void *s) {
    SBS_ENTRY("hipStreamSynchronize");
    hipError_t r = current();
    return r != OK ? r : cuStreamSynchronize(s);
}

SBS_EXPORT hipError_t hipEventCreate(void **e) {
    SBS_ENTRY("hipEventCreate");
    hipError_t r = current();
    return r != OK ? r : cuEventCreate(e, 0);
}

SBS_EXPORT hipError_t hipEventDestroy(void *e) {
    SBS_ENTRY("hipEventDestroy");
    return cuEventDestroy_v2(e);
}

SBS_EXPORT hipError_t hipEventRecord(void *e, void *s) {
    SBS_ENTRY("hipEventRecord");
    hipError_t r = current();
    return r != OK ? r : cuEventRecord(e, s);
}

SBS_EXPORT hipError_t hipEventSynchronize(void *e) {
    SBS_ENTRY("hipEventSynchronize");
    return cuEventSynchronize(e);
}

SBS_EXPORT hipError_t hipStreamWaitEvent(void *s, void *e, unsigned int flags) {
    SBS_ENTRY("hipStreamWaitEvent");
    hipError_t r = current();
    return r != OK ? r : cuStreamWaitEvent(s, e, flags);
}

SBS_EXPORT hipError_t hipLaunchHostFunc(void *s, void (*fn)(void *), void *arg) {
    SBS_ENTRY("hipLaunchHostFunc");
    hipError_t r = current();
    return r != OK ? r : cuLaunchHostFunc(s, fn, arg);
}

#ifndef SBS_OMIT_HIP_ELAPSED
SBS_EXPORT hipError_t hipEventElapsedTime(float *ms, void *a, void *b) {
    SBS_ENTRY("hipEventElapsedTime");
    return cuEventElapsedTime(ms, a, b);
}
#endif

SBS_EXPORT hipError_t hipDeviceSynchronize(void) {
    SBS_ENTRY("hipDeviceSynchronize");
    hipError_t r = current();
    return r != OK ? r : cuCtxSynchronize();
}

/* HIP's names for the codes the driver stand-in returns (the same numbers in both APIs). */
SBS_EXPORT const char *hipGetErrorName(hipError_t r) {
    switch (r) {
    case OK: return "hipSuccess";
    case E_INVALID_VALUE: return "hipErrorInvalidValue";
    case E_OUT_OF_MEMORY: return "hipErrorOutOfMemory";
    case E_NOT_INITIALIZED: return "hipErrorNotInitialized";
    case E_NO_DEVICE: return "hipErrorNoDevice";
    case E_INVALID_DEVICE: return "hipErrorInvalidDevice";
    case E_INVALID_CONTEXT: return "hipErrorInvalidContext";
    case E_INVALID_HANDLE: return "hipErrorInvalidHandle";
    case E_NOT_READY: return "hipErrorNotReady";
    case E_NOT_SUPPORTED: return "hipErrorNotSupported";
    default: return "hipErrorUnknown";
    }
}

SBS_EXPORT const char *hipGetErrorString(hipError_t r) {
    const char *s = err_text(r);
    return s ? s : "unknown error";
}
