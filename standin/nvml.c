/* Stand-in NVML (libnvidia-ml.so.1): what scalebench's telemetry sampler and its GPU
 * ceilings call through nvml-wrapper — init/shutdown, device by UUID, utilisation, current
 * clock/power/temperature (answered NVML_ERROR_NOT_SUPPORTED, as boards without those sensors
 * do, so the sampler leaves them out rather than record made-up figures), and the values the
 * ceilings read: name, PCIe generation and width (current, maximum), NVLink link count, common
 * speed and per-link state, memory bus width and maximum clocks.
 *
 * GPU utilisation is measured, not invented: the share of wall time since the previous query
 * that this process's stream threads of the device (in the libcuda stand-in) spent running
 * work. Memory utilisation is not modelled and reads 0.
 *
 * Ceiling values: SCALEBENCH_STANDIN_NVML names a file in the format of `scalebench ceilings
 * --gpu-values` (the TOML files of tests/fixtures/ceilings/gpu: `[[nvidia]]` tables with `index`, `name`,
 * `pcie = { gen_current, width_current, gen_max, width_max }`, `nvlink = { links_present,
 * links_active, speed_mbps_per_link }`, `memory_bus_width_bits`, `memory_clock_max_mhz`,
 * `sm_clock_max_mhz`; one `key = value` per line, inline tables on one line; `[[amd]]` tables
 * are skipped). Stand-in device i answers with the table whose index is i; a value the table
 * lacks is NOT_SUPPORTED. Without the variable the default is labelled: every device is named
 * "scalebench stand-in" (in no table of peaks), PCIe Gen4 x16 of Gen4 x16, no NVLink, and the
 * memory bus and clocks NOT_SUPPORTED. The harness labels every ceiling read here STAND-IN. A
 * file that cannot be read or parsed fails nvmlInit_v2 with NVML_ERROR_UNKNOWN, naming the file
 * and line on stderr. */
#define _GNU_SOURCE
#include "standin.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

typedef int nvmlReturn_t;
enum {
    NV_OK = 0,
    NV_UNINITIALIZED = 1,
    NV_INVALID_ARGUMENT = 2,
    NV_NOT_SUPPORTED = 3,
    NV_NOT_FOUND = 6,
    NV_INSUFFICIENT_SIZE = 7,
    NV_UNKNOWN = 999
};

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


/* ---- ceiling values (SCALEBENCH_STANDIN_NVML) ---- */
#define SBS_NVML_ENV "SCALEBENCH_STANDIN_NVML"
#define MAX_KEYS 32

struct values {
    int used;
    int nkeys;
    char key[MAX_KEYS][48];
    char val[MAX_KEYS][128];
};

static struct values g_val[16];
static int g_from_file;

static void put(struct values *v, const char *prefix, const char *k, size_t klen, const char *val,
                size_t vlen) {
    if (v->nkeys >= MAX_KEYS)
        return;
    snprintf(v->key[v->nkeys], sizeof v->key[0], "%s%.*s", prefix, (int)klen, k);
    snprintf(v->val[v->nkeys], sizeof v->val[0], "%.*s", (int)vlen, val);
    v->nkeys++;
}

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* One `key = value` at p (value: a quoted string, or a bare token up to `,` `}` or the end);
 * returns the position after it, or NULL if malformed. */
static const char *pair(const char *p, struct values *v, const char *prefix) {
    p = skip_ws(p);
    const char *k = p;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    size_t klen = (size_t)(p - k);
    p = skip_ws(p);
    if (klen == 0 || *p != '=')
        return NULL;
    p = skip_ws(p + 1);
    if (*p == '"') {
        const char *s = ++p;
        while (*p && *p != '"')
            p++;
        if (*p != '"')
            return NULL;
        put(v, prefix, k, klen, s, (size_t)(p - s));
        return p + 1;
    }
    if (*p == '{') {
        char sub[48];
        snprintf(sub, sizeof sub, "%.*s.", (int)klen, k);
        p = skip_ws(p + 1);
        while (*p != '}') {
            p = pair(p, v, sub);
            if (!p)
                return NULL;
            p = skip_ws(p);
            if (*p == ',')
                p = skip_ws(p + 1);
            else if (*p != '}')
                return NULL;
        }
        return p + 1;
    }
    const char *s = p;
    while (*p && *p != ',' && *p != '}' && *p != ' ' && *p != '\t' && *p != '#' && *p != '\n' &&
           *p != '\r')
        p++;
    if (p == s)
        return NULL;
    put(v, prefix, k, klen, s, (size_t)(p - s));
    return p;
}

static long lookup_long(const struct values *v, const char *key, int *ok);

/* Reads the file into g_val; 0, or -1 after saying on stderr what is wrong, with file and line. */
static int load_values(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "scalebench stand-in NVML: cannot read %s=%s: %s\n", SBS_NVML_ENV, path,
                strerror(errno));
        return -1;
    }
    static struct values tables[16];
    memset(tables, 0, sizeof tables);
    int n = -1, skipping = 0, line = 0, bad = 0;
    char prefix[48] = "";
    char buf[1024];
    while (fgets(buf, sizeof buf, f)) {
        line++;
        const char *p = skip_ws(buf);
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == 0)
            continue;
        if (strncmp(p, "[[nvidia]]", 10) == 0) {
            if (++n >= 16) {
                fprintf(stderr, "scalebench stand-in NVML: %s, line %d: more than 16 [[nvidia]] tables\n",
                        path, line);
                bad = 1;
                break;
            }
            skipping = 0;
            prefix[0] = 0;
            continue;
        }
        if (strncmp(p, "[[", 2) == 0) {
            skipping = 1; /* [[amd]]: not NVML's */
            continue;
        }
        if (*p == '[') {
            /* [nvidia.pcie] style: keys below get the prefix `pcie.` */
            const char *e = strchr(p, ']');
            const char *dot = strchr(p, '.');
            if (!e || !dot || dot > e || skipping || n < 0) {
                if (skipping)
                    continue;
                fprintf(stderr, "scalebench stand-in NVML: %s, line %d: expected [[nvidia]] or [nvidia.<table>]\n",
                        path, line);
                bad = 1;
                break;
            }
            snprintf(prefix, sizeof prefix, "%.*s.", (int)(e - dot - 1), dot + 1);
            continue;
        }
        if (skipping)
            continue;
        if (n < 0) {
            fprintf(stderr, "scalebench stand-in NVML: %s, line %d: a value before the first [[nvidia]]\n",
                    path, line);
            bad = 1;
            break;
        }
        const char *end = pair(p, &tables[n], prefix);
        if (end) {
            end = skip_ws(end);
            if (*end && *end != '#' && *end != '\n' && *end != '\r')
                end = NULL;
        }
        if (!end) {
            fprintf(stderr, "scalebench stand-in NVML: %s, line %d: expected `key = value` (a number, a quoted string or an inline table on one line)\n",
                    path, line);
            bad = 1;
            break;
        }
    }
    fclose(f);
    if (bad)
        return -1;
    memset(g_val, 0, sizeof g_val);
    for (int i = 0; i <= n && i < 16; i++) {
        int ok;
        long idx = lookup_long(&tables[i], "index", &ok);
        if (!ok || idx < 0 || idx >= 16) {
            fprintf(stderr, "scalebench stand-in NVML: %s: [[nvidia]] table %d has no index 0-15\n",
                    path, i + 1);
            return -1;
        }
        g_val[idx] = tables[i];
        g_val[idx].used = 1;
    }
    g_from_file = 1;
    return 0;
}

static const char *lookup(const struct values *v, const char *key) {
    for (int i = 0; i < v->nkeys; i++)
        if (strcmp(v->key[i], key) == 0)
            return v->val[i];
    return NULL;
}

static long lookup_long(const struct values *v, const char *key, int *ok) {
    const char *s = lookup(v, key);
    char *end;
    long x = s ? strtol(s, &end, 10) : 0;
    *ok = s && *s && *end == 0 && x >= 0;
    return *ok ? x : 0;
}

/* Device d's value of `key`: from the file, else the labelled default. */
static nvmlReturn_t value(int d, const char *key, unsigned int *out) {
    if (!out)
        return NV_INVALID_ARGUMENT;
    if (g_from_file) {
        int ok;
        long x = lookup_long(&g_val[d], key, &ok);
        if (!g_val[d].used || !ok)
            return NV_NOT_SUPPORTED;
        *out = (unsigned int)x;
        return NV_OK;
    }
    static const struct {
        const char *key;
        unsigned int v;
    } dflt[] = {{"pcie.gen_current", 4},
                {"pcie.width_current", 16},
                {"pcie.gen_max", 4},
                {"pcie.width_max", 16},
                {"nvlink.links_present", 0}};
    for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
        if (strcmp(dflt[i].key, key) == 0) {
            *out = dflt[i].v;
            return NV_OK;
        }
    return NV_NOT_SUPPORTED;
}

SBS_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    pthread_mutex_lock(&M);
    if (g_inits == 0) {
        const char *path = getenv(SBS_NVML_ENV);
        g_from_file = 0;
        if (path && *path && load_values(path) != 0) {
            pthread_mutex_unlock(&M);
            return NV_UNKNOWN;
        }
    }
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

/* ---- the values the ceilings read ---- */

SBS_EXPORT nvmlReturn_t nvmlDeviceGetName(struct device *d, char *name, unsigned int len) {
    if (!name || !valid(d))
        return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;
    const char *n = g_from_file ? lookup(&g_val[d->index], "name") : NULL;
    if (!n)
        n = "scalebench stand-in";
    if (strlen(n) + 1 > len)
        return NV_INSUFFICIENT_SIZE;
    strcpy(name, n);
    return NV_OK;
}

#define VALUE_CALL(fn, key)                                                                        \
    SBS_EXPORT nvmlReturn_t fn(struct device *d, unsigned int *out) {                              \
        if (!valid(d))                                                                             \
            return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;                               \
        return value(d->index, key, out);                                                          \
    }
VALUE_CALL(nvmlDeviceGetCurrPcieLinkGeneration, "pcie.gen_current")
VALUE_CALL(nvmlDeviceGetCurrPcieLinkWidth, "pcie.width_current")
VALUE_CALL(nvmlDeviceGetMaxPcieLinkGeneration, "pcie.gen_max")
VALUE_CALL(nvmlDeviceGetMaxPcieLinkWidth, "pcie.width_max")
VALUE_CALL(nvmlDeviceGetMemoryBusWidth, "memory_bus_width_bits")

enum { CLOCK_GRAPHICS = 0, CLOCK_SM = 1, CLOCK_MEM = 2 };

SBS_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(struct device *d, int type, unsigned int *mhz) {
    if (!valid(d))
        return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;
    switch (type) {
    case CLOCK_SM:
        return value(d->index, "sm_clock_max_mhz", mhz);
    case CLOCK_MEM:
        return value(d->index, "memory_clock_max_mhz", mhz);
    default:
        return NV_NOT_SUPPORTED;
    }
}

/* nvmlFieldValue_t as nvml.h lays it out. */
typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        long long sllVal;
    } value;
} nvmlFieldValue_t;

enum { FI_NVLINK_SPEED_MBPS_COMMON = 90, FI_NVLINK_LINK_COUNT = 91, VALUE_TYPE_UNSIGNED_INT = 1 };

SBS_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(struct device *d, int count, nvmlFieldValue_t *v) {
    if (!valid(d))
        return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;
    if (count < 0 || (count > 0 && !v))
        return NV_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        const char *key = v[i].fieldId == FI_NVLINK_LINK_COUNT          ? "nvlink.links_present"
                          : v[i].fieldId == FI_NVLINK_SPEED_MBPS_COMMON ? "nvlink.speed_mbps_per_link"
                                                                        : NULL;
        v[i].timestamp = (long long)(now_ns() / 1000);
        v[i].latencyUsec = 0;
        v[i].valueType = VALUE_TYPE_UNSIGNED_INT;
        v[i].value.ullVal = 0;
        v[i].nvmlReturn = key ? value(d->index, key, &v[i].value.uiVal) : NV_NOT_SUPPORTED;
    }
    return NV_OK;
}

/* The first links_active links are up, the rest of links_present down. */
SBS_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(struct device *d, unsigned int link, int *active) {
    if (!valid(d) || !active)
        return g_inits ? NV_INVALID_ARGUMENT : NV_UNINITIALIZED;
    unsigned int present, up;
    nvmlReturn_t r = value(d->index, "nvlink.links_present", &present);
    if (r != NV_OK)
        return r;
    if (link >= present)
        return NV_INVALID_ARGUMENT;
    r = value(d->index, "nvlink.links_active", &up);
    if (r != NV_OK)
        return r;
    *active = link < up;
    return NV_OK;
}
