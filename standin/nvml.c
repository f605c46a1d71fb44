/* Stand-in NVML (libnvidia-ml.so.1): what scalebench's telemetry sampler calls through
 * nvml-wrapper — init/shutdown, device by UUID, utilisation, and clock/power/temperature
 * (answered NVML_ERROR_NOT_SUPPORTED, as boards without those sensors do, so the sampler
 * leaves them out rather than record made-up figures).
 *
 * GPU utilisation is measured, not invented: the share of wall time since the previous query
 * that this process's stream threads of the device (in the libcuda stand-in) spent running
 * work. Memory utilisation is not modelled and reads 0. */
#define _GNU_SOURCE
#include "standin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <strings.h>
#include <time.h>

typedef int nvmlReturn_t;
enum { NV_OK = 0, NV_UNINITIALIZED = 1, NV_INVALID_ARGUMENT = 2, NV_NOT_SUPPORTED = 3, NV_NOT_FOUND = 6 };

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

struct device {
    int index;
    uint64_t last_busy, last_wall;
};

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static int g_inits;
static struct device g_dev[16];

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate("libnvidia-ml.so.1");
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The libcuda stand-in's busy counter, where this process loaded it. */
static uint64_t busy_ns(int dev, int *ok) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    uint64_t (*f)(int) = h ? (uint64_t(*)(int))dlsym(h, "sbs_device_busy_ns") : NULL;
    *ok = f != NULL;
    uint64_t v = f ? f(dev) : 0;
    if (h)
        dlclose(h);
    return v;
}

SBS_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    pthread_mutex_lock(&M);
    if (g_inits++ == 0) {
        for (int i = 0; i < 16; i++) {
            int ok;
            g_dev[i].index = i;
            g_dev[i].last_busy = busy_ns(i, &ok);
            g_dev[i].last_wall = now_ns();
        }
    }
    pthread_mutex_unlock(&M);
    return NV_OK;
}

SBS_EXPORT nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&M);
    nvmlReturn_t r = g_inits > 0 ? (g_inits--, NV_OK) : NV_UNINITIALIZED;
    pthread_mutex_unlock(&M);
    return r;
}

SBS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, struct device **out) {
    if (!uuid || !out)
        return NV_INVALID_ARGUMENT;
    if (!g_inits)
        return NV_UNINITIALIZED;
    /* NVML ignores CUDA_VISIBLE_DEVICES: every stand-in device of the host */
    for (int i = 0; i < sbs_device_count(); i++) {
        char s[48];
        sbs_uuid_string(i, s);
        if (strcasecmp(s, uuid) == 0) {
            *out = &g_dev[i];
            return NV_OK;
        }
    }
    return NV_NOT_FOUND;
}

static int valid(struct device *d) {
    return g_inits && d >= g_dev && d < g_dev + 16;
}

SBS_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(struct device *d, nvmlUtilization_t *u) {
    if (!u || !valid(d))
        return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;
    int ok;
    uint64_t busy = busy_ns(d->index, &ok);
    if (!ok)
        return NV_NOT_SUPPORTED;
    pthread_mutex_lock(&M);
    uint64_t wall = now_ns();
    uint64_t db = busy - d->last_busy, dw = wall - d->last_wall;
    d->last_busy = busy;
    d->last_wall = wall;
    pthread_mutex_unlock(&M);
    double pct = dw ? 100.0 * (double)db / (double)dw : 0.0;
    u->gpu = (unsigned)(pct > 100.0 ? 100.0 : pct + 0.5);
    u->memory = 0;
    return NV_OK;
}

SBS_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(struct device *d, int type, unsigned int *mhz) {
    (void)type;
    (void)mhz;
    return valid(d) ? NV_NOT_SUPPORTED : NV_INVALID_ARGUMENT;
}

SBS_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(struct device *d, unsigned int *mw) {
    (void)mw;
    return valid(d) ? NV_NOT_SUPPORTED : NV_INVALID_ARGUMENT;
}

SBS_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(struct device *d, int sensor, unsigned int *c) {
    (void)sensor;
    (void)c;
    return valid(d) ? NV_NOT_SUPPORTED : NV_INVALID_ARGUMENT;
}
