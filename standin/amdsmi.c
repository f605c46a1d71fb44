/* Stand-in AMD SMI (libamd_smi.so): what scalebench's ROCm telemetry calls — init/shut-down,
 * socket and processor handles, each processor's PCI address (amdsmi_bdf_t), GPU activity,
 * the GFX clock and a temperature — with AMD SMI's ABI (amdsmi_status_t an int, 0 success;
 * handles pointers; amdsmi_bdf_t a u64 with function in bits 0-2, device 3-7, bus 8-15,
 * domain 16-63).
 *
 * Like the real one it lists every stand-in device of the node (SCALEBENCH_STANDIN_DEVICES),
 * whatever CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES hide from HIP: processor i sits at
 * fffe:5b:<i>.0, the address the stand-in HIP runtime gives stand-in device i, so a caller
 * must match by address, not by HIP ordinal.
 *
 * Figures: GFX activity is measured, not invented: the share of wall time since the previous
 * query that this process's stream threads of the device (in the stand-in HIP runtime) spent
 * running work, as the NVML stand-in measures. Memory-controller activity and the clock are
 * not modelled (the "not supported" marker UINT32_MAX, and AMDSMI_STATUS_NOT_SUPPORTED). The
 * temperature is made up and says so: 40 °C plus the device's index, so that a test can tell
 * which GCD was read; no AMD GPU reads it.
 *
 * Version and power: amdsmi_get_lib_version reports SCALEBENCH_STANDIN_AMDSMI_VERSION
 * ("YEAR.MAJOR.MINOR" up to 24, e.g. "24.6.0" for ROCm 6.2, the default; "0.25.3" for ROCm
 * 6.4's 25.3, whose struct kept an unused year member; "MAJOR.MINOR.RELEASE" from 26, e.g.
 * "26.1.0") in that release's amdsmi_version_t, and amdsmi_get_power_info writes that
 * release's amdsmi_power_info_t: 23.0-23.3 average first; 23.4-24.x current, average, then
 * u32 voltages; 25 and later a u64 socket power, current, average, then voltages. The
 * power is made up and says so: 100 W plus the device's index, in the field the release keeps
 * it in (the other power fields hold other numbers or "not supported", and the voltages
 * 800 mV and up), so a reader that takes the wrong layout reads a wrong number. */
#define _GNU_SOURCE
#include "standin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

typedef int amdsmi_status_t;
enum { AS_SUCCESS = 0, AS_INVAL = 1, AS_NOT_SUPPORTED = 2, AS_NOT_INIT = 32, AS_OUT_OF_RESOURCES = 15 };
enum { INIT_AMD_GPUS = 1 << 1 };

typedef struct {
    uint32_t gfx_activity;
    uint32_t umc_activity;
    uint32_t mm_activity;
    uint32_t reserved[13];
} amdsmi_engine_usage_t;

#define PROC_MAGIC 0x5b736d69u
struct proc {
    uint32_t magic;
    int index;
    uint64_t last_busy, last_wall;
};

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static int g_inits;
static int g_socket; /* its address is the one socket handle */
static struct proc g_proc[16];

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate("libamd_smi.so");
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The stand-in HIP runtime's busy counter of device `dev` (its index before any visibility
 * variable), where this process loaded it. */
static uint64_t busy_ns(int dev, int *ok) {
    void *h = dlopen("libamdhip64.so", RTLD_LAZY | RTLD_NOLOAD);
    uint64_t (*f)(int) = h ? (uint64_t(*)(int))dlsym(h, "sbs_device_busy_ns") : NULL;
    *ok = f != NULL;
    uint64_t v = f ? f(dev) : 0;
    if (h)
        dlclose(h);
    return v;
}

SBS_EXPORT amdsmi_status_t amdsmi_init(uint64_t flags) {
    if (!(flags & INIT_AMD_GPUS))
        return AS_INVAL;
    pthread_mutex_lock(&M);
    if (g_inits++ == 0) {
        int n = sbs_device_count();
        for (int i = 0; i < n; i++) {
            int ok;
            g_proc[i] = (struct proc){PROC_MAGIC, i, busy_ns(i, &ok), now_ns()};
        }
    }
    pthread_mutex_unlock(&M);
    return AS_SUCCESS;
}

SBS_EXPORT amdsmi_status_t amdsmi_shut_down(void) {
    pthread_mutex_lock(&M);
    int was = g_inits;
    if (g_inits > 0)
        g_inits--;
    pthread_mutex_unlock(&M);
    if (was == 0)
        sbs_die("amdsmi_shut_down", "called without a matching amdsmi_init");
    return AS_SUCCESS;
}

static void need_init(const char *call) {
    pthread_mutex_lock(&M);
    int n = g_inits;
    pthread_mutex_unlock(&M);
    if (n == 0)
        sbs_die(call, "called before amdsmi_init");
}

/* A null array asks for the count, as AMD SMI's callers do first. */
SBS_EXPORT amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, void **sockets) {
    need_init("amdsmi_get_socket_handles");
    if (!count)
        return AS_INVAL;
    if (sockets) {
        if (*count < 1)
            return AS_OUT_OF_RESOURCES;
        sockets[0] = &g_socket;
    }
    *count = 1;
    return AS_SUCCESS;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_processor_handles(void *socket, uint32_t *count, void **procs) {
    need_init("amdsmi_get_processor_handles");
    if (socket != &g_socket)
        sbs_die("amdsmi_get_processor_handles", "%p is not a socket handle from amdsmi_get_socket_handles", socket);
    if (!count)
        return AS_INVAL;
    uint32_t n = (uint32_t)sbs_device_count();
    if (procs) {
        if (*count < n)
            return AS_OUT_OF_RESOURCES;
        for (uint32_t i = 0; i < n; i++)
            procs[i] = &g_proc[i];
    }
    *count = n;
    return AS_SUCCESS;
}

static struct proc *proc_of(void *h, const char *call) {
    need_init(call);
    struct proc *p = h;
    if (!p || p < g_proc || p >= g_proc + 16 || p->magic != PROC_MAGIC)
        sbs_die(call, "%p is not a processor handle from amdsmi_get_processor_handles", h);
    return p;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_gpu_device_bdf(void *h, uint64_t *bdf) {
    struct proc *p = proc_of(h, "amdsmi_get_gpu_device_bdf");
    if (!bdf)
        return AS_INVAL;
    *bdf = (0xfffeull << 16) | (0x5bull << 8) | ((uint64_t)p->index << 3);
    return AS_SUCCESS;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_gpu_activity(void *h, amdsmi_engine_usage_t *u) {
    struct proc *p = proc_of(h, "amdsmi_get_gpu_activity");
    if (!u)
        return AS_INVAL;
    int ok;
    uint64_t busy = busy_ns(p->index, &ok), wall = now_ns();
    if (!ok)
        return AS_NOT_SUPPORTED;
    pthread_mutex_lock(&M);
    uint64_t db = busy - p->last_busy, dw = wall - p->last_wall;
    p->last_busy = busy;
    p->last_wall = wall;
    pthread_mutex_unlock(&M);
    memset(u, 0, sizeof *u);
    /* several stream threads may overlap: the share is capped at 100 % */
    uint64_t pct = dw ? (100 * db + dw / 2) / dw : 0;
    u->gfx_activity = (uint32_t)(pct > 100 ? 100 : pct);
    u->umc_activity = UINT32_MAX;
    u->mm_activity = UINT32_MAX;
    return AS_SUCCESS;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_clock_info(void *h, int clk_type, void *info) {
    proc_of(h, "amdsmi_get_clock_info");
    (void)clk_type;
    return info ? AS_NOT_SUPPORTED : AS_INVAL;
}

/* Sensor types edge 0, hotspot (junction) 1, VRAM 2; metric current 0. */
SBS_EXPORT amdsmi_status_t amdsmi_get_temp_metric(void *h, int sensor, int metric, int64_t *celsius) {
    struct proc *p = proc_of(h, "amdsmi_get_temp_metric");
    if (!celsius)
        return AS_INVAL;
    if (sensor < 0 || sensor > 2 || metric != 0)
        return AS_NOT_SUPPORTED;
    *celsius = 40 + p->index;
    return AS_SUCCESS;
}

/* The release this stand-in claims, as its amdsmi_version_t holds it: "A.B.C" with A >= 26 is
 * (major, minor, release) without a year member (ROCm 7); otherwise (year, major, minor) with
 * one: 23.x and 24.x, or "0.25.3" for ROCm 6.4's AMD SMI 25, which kept the member unused.
 * Returns whether the struct has the year member; *major is the library's major version. */
static int claimed_version(uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *major) {
    const char *v = getenv("SCALEBENCH_STANDIN_AMDSMI_VERSION");
    unsigned x = 24, y = 6, z = 0;
    if (v && *v && sscanf(v, "%u.%u.%u", &x, &y, &z) < 2)
        sbs_die("amdsmi_get_lib_version", "SCALEBENCH_STANDIN_AMDSMI_VERSION=%s is not YEAR.MAJOR.MINOR or MAJOR.MINOR.RELEASE", v);
    *a = x;
    *b = y;
    *c = z;
    int year_member = x < 26;
    *major = year_member && y >= 25 ? y : year_member ? 0 : x;
    return year_member;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_lib_version(void *out) {
    need_init("amdsmi_get_lib_version");
    if (!out)
        return AS_INVAL;
    uint32_t a, b, c, major;
    static const char build[] = "STAND-IN";
    if (claimed_version(&a, &b, &c, &major)) {
        struct { uint32_t year, major, minor, release; const char *build; } *v = out;
        *v = (typeof(*v)){a, b, c, 0, build};
    } else {
        struct { uint32_t major, minor, release; const char *build; } *v = out;
        *v = (typeof(*v)){a, b, c, build};
    }
    return AS_SUCCESS;
}

SBS_EXPORT amdsmi_status_t amdsmi_get_power_info(void *h, void *out) {
    struct proc *p = proc_of(h, "amdsmi_get_power_info");
    if (!out)
        return AS_INVAL;
    uint32_t year, b, c, major;
    claimed_version(&year, &b, &c, &major);
    uint32_t w = 100 + (uint32_t)p->index;
    if (major == 0 && year == 23 && b < 4) {
        struct { uint32_t average, gfx_mv, soc_mv, mem_mv, limit, reserved[11]; } *v = out;
        *v = (typeof(*v)){w, 800, 900, 1000, 500, {0}};
    } else if (major == 0) {
        /* MI300 reports current, MI200 average: the current one is read first */
        struct { uint32_t current, average, gfx_mv, soc_mv, mem_mv, limit, reserved[11]; } *v = out;
        *v = (typeof(*v)){w, w - 10, 800 + (uint32_t)p->index, 900, 1000, 500, {0}};
    } else if (major == 25) {
        struct { uint64_t socket; uint32_t current, average, gfx_mv, soc_mv, mem_mv, limit, reserved[2]; } *v = out;
        *v = (typeof(*v)){w, UINT32_MAX, w - 10, 800, 900, 1000, 500, {0}};
    } else {
        struct { uint64_t socket; uint32_t current, average; uint64_t gfx_mv, soc_mv, mem_mv; uint32_t limit; uint64_t reserved[18]; } *v = out;
        *v = (typeof(*v)){w, UINT32_MAX, w - 10, 800, 900, 1000, 500, {0}};
    }
    return AS_SUCCESS;
}
