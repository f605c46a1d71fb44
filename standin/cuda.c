/* Stand-in CUDA driver (libcuda.so.1): exactly the driver entry points scalebench's CUDA
 * backend (through cudarc's cuda-11040 bindings) calls, with the real ABI.
 *
 * Model: "device" memory is host memory behind fake device addresses (a host dereference of
 * one faults, as on a GPU); every stream is a FIFO run by a thread of its own, so work is
 * really asynchronous and streams really run concurrently; events time the stream thread's
 * progress with CLOCK_MONOTONIC. Copies follow CUDA's documented synchronisation: pageable
 * host→device is staged before the call returns, device→pageable host returns when done,
 * pinned copies are asynchronous (and the destination is poisoned until the copy runs, so an
 * unsynchronised read sees garbage, not luck).
 *
 * Knobs: SCALEBENCH_STANDIN_DEVICES (2), SCALEBENCH_STANDIN_DRIVER_VERSION (13000),
 * SCALEBENCH_STANDIN_MEM_BYTES (4 GiB per device), SCALEBENCH_STANDIN_FAULT=alloc (every
 * allocation fails), SCALEBENCH_STANDIN_ALLOC_FAIL_AFTER=N (device allocations after the N-th
 * fail), SCALEBENCH_STANDIN_COPY_DELAY_US, SCALEBENCH_STANDIN_LEAKS=warn (default: abort on
 * leaks at exit). CUDA_VISIBLE_DEVICES is honoured as CUDA does (indices). */
#define _GNU_SOURCE
#include "standin.h"

#include <pthread.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef sbs_devptr CUdeviceptr;

enum {
    OK = 0,
    E_INVALID_VALUE = 1,
    E_OUT_OF_MEMORY = 2,
    E_NOT_INITIALIZED = 3,
    E_NO_DEVICE = 100,
    E_INVALID_DEVICE = 101,
    E_INVALID_CONTEXT = 201,
    E_INVALID_HANDLE = 400,
    E_NOT_READY = 600,
    E_NOT_SUPPORTED = 801,
};

#define MAXDEV 16
#define CTX_MAGIC 0x5b5c7478u
#define STREAM_MAGIC 0x5b537472u
#define EVENT_MAGIC 0x5b457674u
#define EV_DISABLE_TIMING 2u

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t CV = PTHREAD_COND_INITIALIZER;
static int g_inited;
static int g_ndev;          /* visible devices */
static int g_phys[MAXDEV];  /* visible ordinal -> stand-in device index */
static size_t g_mem_bytes;
static long g_allocs_made;
static uint64_t g_busy_ns[MAXDEV];

struct ctx {
    uint32_t magic;
    int dev;
    int refs;
};
static struct ctx g_ctx[MAXDEV];
static __thread struct ctx *t_cur;

struct alloc {
    CUdeviceptr base;
    size_t size;
    void *host;
    int dev;
};
static struct alloc *g_allocs;
static size_t g_nallocs, g_capallocs;
static CUdeviceptr g_next[MAXDEV];
static size_t g_used[MAXDEV];

struct pinned {
    void *p;
    size_t size;
};
static struct pinned *g_pinned;
static size_t g_npinned, g_cappinned __attribute__((unused));

struct op {
    struct op *next;
    sbs_run_fn run;
    void *arg;
};
struct stream {
    uint32_t magic;
    int dev;
    int is_default;
    int stop;
    struct op *head, *tail;
    uint64_t enq, done;
    pthread_t th;
    struct stream *next_all;
};
static struct stream *g_streams;
static struct stream *g_default[MAXDEV];

struct event {
    uint32_t magic;
    int dev;
    unsigned flags;
    uint64_t rec, done;
    struct timespec t;
    struct event *next_all;
};
static struct event *g_events;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* hip.c builds this driver into the HIP runtime stand-in under its own name. */
#ifndef SBS_DRIVER_LIB
#define SBS_DRIVER_LIB "libcuda.so.1"
#endif

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate(SBS_DRIVER_LIB);
}

/* ---------- leaks at exit ---------- */
__attribute__((destructor)) static void standin_unload(void) {
    pthread_mutex_lock(&G);
    size_t bytes = 0;
    for (size_t i = 0; i < g_nallocs; i++)
        bytes += g_allocs[i].size;
    int streams = 0, events = 0, ctxs = 0;
    for (struct stream *s = g_streams; s; s = s->next_all)
        streams += !s->is_default && s->magic == STREAM_MAGIC;
    for (struct event *e = g_events; e; e = e->next_all)
        events += e->magic == EVENT_MAGIC;
    for (int d = 0; d < MAXDEV; d++)
        ctxs += g_ctx[d].refs > 0;
#ifdef SBS_HIP_RUNTIME
    /* the HIP runtime keeps each device's primary context for the life of the process */
    ctxs = 0;
#endif
    size_t nallocs = g_nallocs, npinned = g_npinned;
    pthread_mutex_unlock(&G);
    if (!nallocs && !npinned && !streams && !events && !ctxs)
        return;
    fprintf(stderr,
            "scalebench stand-in: leak at exit (" SBS_DRIVER_LIB "): %zu device allocation(s) of %zu "
            "byte(s), %zu pinned host allocation(s), %d stream(s), %d event(s), %d retained "
            "primary context(s) were never released\n",
            nallocs, bytes, npinned, streams, events, ctxs);
    const char *w = getenv("SCALEBENCH_STANDIN_LEAKS");
    if (!(w && strcmp(w, "warn") == 0))
        abort();
}

/* ---------- helpers (call with G held where noted) ---------- */
static int visible_init(void) {
    int n = sbs_device_count();
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) {
        for (int i = 0; i < n; i++)
            g_phys[i] = i;
        return n;
    }
    /* CUDA's rule: indices up to the first entry that is not one */
    int k = 0;
    const char *p = v;
    while (*p && k < MAXDEV) {
        while (*p == ' ')
            p++;
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 0 || x >= n)
            break;
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= g_phys[j] == (int)x;
        if (dup)
            break;
        g_phys[k++] = (int)x;
        p = end;
        while (*p == ' ')
            p++;
        if (*p != ',')
            break;
        p++;
    }
    return k;
}

static struct ctx *need_ctx(void) {
    struct ctx *c = t_cur;
    if (!c || c->magic != CTX_MAGIC || c->refs <= 0)
        return NULL;
    return c;
}

static int valid_dev(CUdevice d) {
    return g_inited && d >= 0 && d < g_ndev;
}

/* G held */
static struct alloc *find_alloc(CUdeviceptr p) {
    for (size_t i = 0; i < g_nallocs; i++) {
        struct alloc *a = &g_allocs[i];
        if (p >= a->base && p <= a->base + a->size)
            return a;
    }
    return NULL;
}

/* G held */
static int is_pinned(const void *p, size_t n) {
    const char *c = p;
    for (size_t i = 0; i < g_npinned; i++) {
        const char *b = g_pinned[i].p;
        if (c >= b && c + n <= b + g_pinned[i].size)
            return 1;
    }
    return 0;
}

SBS_EXPORT void *sbs_translate(sbs_devptr p, size_t bytes, int dev, const char *call,
                               const char *what) {
    pthread_mutex_lock(&G);
    struct alloc *a = find_alloc(p);
    if (!a) {
        pthread_mutex_unlock(&G);
        sbs_die(call, "%s 0x%llx is not device memory (never allocated, already freed, or a host pointer)",
                what, (unsigned long long)p);
    }
    if (a->dev != dev) {
        int adev = a->dev;
        pthread_mutex_unlock(&G);
        sbs_die(call, "%s 0x%llx is memory of device %d used on device %d", what,
                (unsigned long long)p, adev, dev);
    }
    size_t off = (size_t)(p - a->base);
    if (bytes > a->size - off) {
        size_t size = a->size;
        pthread_mutex_unlock(&G);
        sbs_die(call, "%s [0x%llx, +%zu bytes) runs %zu byte(s) past the end of its %zu-byte allocation",
                what, (unsigned long long)p, bytes, bytes - (size - off), size);
    }
    void *h = (char *)a->host + off;
    pthread_mutex_unlock(&G);
    return h;
}

SBS_EXPORT int sbs_current_device(void) {
    struct ctx *c = need_ctx();
    return c ? c->dev : -1;
}

static void *worker(void *p);

/* G held. Starts a stream on device `dev`. */
static struct stream *new_stream(int dev, int is_default) {
    struct stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->magic = STREAM_MAGIC;
    s->dev = dev;
    s->is_default = is_default;
    if (pthread_create(&s->th, NULL, worker, s) != 0) {
        free(s);
        return NULL;
    }
    s->next_all = g_streams;
    g_streams = s;
    return s;
}

/* G held. The stream a handle names (0 and 2 = the current context's default stream). */
static struct stream *stream_of(void *h, const char *call) {
    if (h == NULL || h == (void *)2) {
        struct ctx *c = need_ctx();
        if (!c)
            sbs_die(call, "the default stream was used with no current context");
        if (!g_default[c->dev])
            g_default[c->dev] = new_stream(c->dev, 1);
        if (!g_default[c->dev])
            sbs_die(call, "could not start the default stream's thread");
        return g_default[c->dev];
    }
    for (struct stream *s = g_streams; s; s = s->next_all)
        if (s == h && s->magic == STREAM_MAGIC)
            return s;
    sbs_die(call, "stream %p is not a live stream (destroyed, or not a stream)", h);
}

/* G held. */
static struct event *event_of(void *h, const char *call) {
    for (struct event *e = g_events; e; e = e->next_all)
        if (e == h && e->magic == EVENT_MAGIC)
            return e;
    sbs_die(call, "event %p is not a live event (destroyed, or not an event)", h);
}

SBS_EXPORT int sbs_stream_device(void *stream, const char *call) {
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(stream, call);
    int d = s->dev;
    pthread_mutex_unlock(&G);
    return d;
}

static void *worker(void *p) {
    struct stream *s = p;
    pthread_mutex_lock(&G);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&CV, &G);
        if (!s->head)
            break;
        struct op *o = s->head;
        pthread_mutex_unlock(&G);
        uint64_t t0 = now_ns();
        o->run(o->arg);
        __atomic_add_fetch(&g_busy_ns[g_phys[s->dev]], now_ns() - t0, __ATOMIC_RELAXED);
        pthread_mutex_lock(&G);
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        s->done++;
        free(o);
        pthread_cond_broadcast(&CV);
    }
    pthread_mutex_unlock(&G);
    return NULL;
}

/* G held; returns the sequence number of the op. */
static uint64_t enqueue_locked(struct stream *s, sbs_run_fn run, void *arg, const char *call) {
    struct op *o = malloc(sizeof *o);
    if (!o)
        sbs_die(call, "out of host memory for a queued operation");
    o->next = NULL;
    o->run = run;
    o->arg = arg;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    pthread_cond_broadcast(&CV);
    return ++s->enq;
}

SBS_EXPORT void sbs_enqueue(void *stream, sbs_run_fn run, void *arg, const char *call,
                            int check_current) {
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(stream, call);
    struct ctx *c = need_ctx();
    if (check_current && (!c || c->dev != s->dev)) {
        int sd = s->dev;
        pthread_mutex_unlock(&G);
        sbs_die(call, "work for a stream of device %d issued while the current context is %s", sd,
                c ? "another device's" : "none");
    }
    enqueue_locked(s, run, arg, call);
    pthread_mutex_unlock(&G);
}

SBS_EXPORT uint64_t sbs_device_busy_ns(int dev) {
    if (dev < 0 || dev >= MAXDEV)
        return 0;
    return __atomic_load_n(&g_busy_ns[dev], __ATOMIC_RELAXED);
}

/* G held */
static void wait_stream(struct stream *s, uint64_t seq) {
    while (s->done < seq)
        pthread_cond_wait(&CV, &G);
}

/* ---------- init, versions, devices ---------- */
SBS_EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0)
        return E_INVALID_VALUE;
    pthread_mutex_lock(&G);
    if (!g_inited) {
        g_ndev = visible_init();
        g_mem_bytes = (size_t)sbs_env_long("SCALEBENCH_STANDIN_MEM_BYTES", 4L << 30);
        for (int d = 0; d < MAXDEV; d++) {
            g_ctx[d].magic = CTX_MAGIC;
            g_ctx[d].dev = d;
            g_next[d] = 0x100000000000ull + (CUdeviceptr)d * 0x10000000000ull;
        }
        g_inited = 1;
    }
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuDriverGetVersion(int *v) {
    if (!v)
        return E_INVALID_VALUE;
    *v = (int)sbs_env_long("SCALEBENCH_STANDIN_DRIVER_VERSION", 13000);
    return OK;
}

SBS_EXPORT CUresult cuDeviceGetCount(int *n) {
    if (!n)
        return E_INVALID_VALUE;
    if (!g_inited)
        return E_NOT_INITIALIZED;
    *n = g_ndev;
    return OK;
}

SBS_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (!d)
        return E_INVALID_VALUE;
    if (!g_inited)
        return E_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= g_ndev)
        return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

SBS_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (!name || len <= 0)
        return E_INVALID_VALUE;
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    snprintf(name, (size_t)len, "%s", SBS_NAME);
    return OK;
}

SBS_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    if (!bytes)
        return E_INVALID_VALUE;
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    *bytes = g_mem_bytes;
    return OK;
}

typedef struct {
    char bytes[16];
} CUuuid;

SBS_EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
    if (!u)
        return E_INVALID_VALUE;
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    sbs_uuid(g_phys[d], (unsigned char *)u->bytes);
    return OK;
}

SBS_EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    if (!v)
        return E_INVALID_VALUE;
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    switch (attr) {
    case 16: /* MULTIPROCESSOR_COUNT: one stream thread at a time, honestly */
        *v = 1;
        return OK;
    case 33: /* PCI_BUS_ID */
        *v = 0x5b;
        return OK;
    case 34: /* PCI_DEVICE_ID */
        *v = g_phys[d];
        return OK;
    case 38: /* L2_CACHE_SIZE: a small L2, so that --buffers rotate has sets to go through */
        *v = 4 << 20;
        return OK;
    case 50: /* PCI_DOMAIN_ID: one no real machine has, so no sysfs locality is found */
        *v = 0xfffe;
        return OK;
    case 75: /* COMPUTE_CAPABILITY_MAJOR */
        *v = 0;
        return OK;
    case 76:
        *v = 0;
        return OK;
    case 115: /* MEMORY_POOLS_SUPPORTED: no stream-ordered pools here */
        *v = 0;
        return OK;
    default:
        fprintf(stderr, "scalebench stand-in: cuDeviceGetAttribute(%d) is not modelled\n", attr);
        return E_INVALID_VALUE;
    }
}

/* ---------- contexts ---------- */
SBS_EXPORT CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice d) {
    if (!pctx)
        return E_INVALID_VALUE;
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    pthread_mutex_lock(&G);
    g_ctx[d].refs++;
    *pctx = &g_ctx[d];
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    if (!valid_dev(d))
        return g_inited ? E_INVALID_DEVICE : E_NOT_INITIALIZED;
    pthread_mutex_lock(&G);
    if (g_ctx[d].refs <= 0) {
        pthread_mutex_unlock(&G);
        sbs_die("cuDevicePrimaryCtxRelease_v2", "device %d's primary context was not retained", d);
    }
    g_ctx[d].refs--;
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuCtxGetCurrent(void **pctx) {
    if (!pctx)
        return E_INVALID_VALUE;
    *pctx = t_cur;
    return OK;
}

SBS_EXPORT CUresult cuCtxSetCurrent(void *ctx) {
    if (ctx) {
        struct ctx *c = ctx;
        int ok = 0;
        for (int d = 0; d < MAXDEV; d++)
            ok |= c == &g_ctx[d];
        if (!ok || c->refs <= 0)
            sbs_die("cuCtxSetCurrent", "%p is not a retained context", ctx);
    }
    t_cur = ctx;
    return OK;
}

SBS_EXPORT CUresult cuCtxSynchronize(void) {
    struct ctx *c = need_ctx();
    if (!c)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    for (struct stream *s = g_streams; s; s = s->next_all)
        if (s->magic == STREAM_MAGIC && s->dev == c->dev)
            wait_stream(s, s->enq);
    pthread_mutex_unlock(&G);
    return OK;
}

/* ---------- memory ---------- */
SBS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dp, size_t bytes) {
    if (!dp || bytes == 0)
        return E_INVALID_VALUE;
    struct ctx *c = need_ctx();
    if (!c)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    long after = sbs_env_long("SCALEBENCH_STANDIN_ALLOC_FAIL_AFTER", -1);
    int fault = sbs_fault("alloc") || (after >= 0 && g_allocs_made >= after);
    g_allocs_made++;
    if (fault || bytes > g_mem_bytes - g_used[c->dev]) {
        pthread_mutex_unlock(&G);
        return E_OUT_OF_MEMORY;
    }
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    void *h = NULL;
    if (posix_memalign(&h, 4096, rounded) != 0) {
        pthread_mutex_unlock(&G);
        return E_OUT_OF_MEMORY;
    }
    if (g_nallocs == g_capallocs) {
        size_t cap = g_capallocs ? 2 * g_capallocs : 64;
        struct alloc *n = realloc(g_allocs, cap * sizeof *n);
        if (!n) {
            free(h);
            pthread_mutex_unlock(&G);
            return E_OUT_OF_MEMORY;
        }
        g_allocs = n;
        g_capallocs = cap;
    }
    /* addresses are never reused, and a page of gap follows each allocation: a stale or
     * overrunning pointer never lands in another allocation */
    CUdeviceptr base = g_next[c->dev];
    g_next[c->dev] += rounded + 4096;
    g_allocs[g_nallocs++] = (struct alloc){base, bytes, h, c->dev};
    g_used[c->dev] += bytes;
    *dp = base;
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    if (!need_ctx())
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    for (size_t i = 0; i < g_nallocs; i++) {
        if (g_allocs[i].base == p) {
            free(g_allocs[i].host);
            g_used[g_allocs[i].dev] -= g_allocs[i].size;
            g_allocs[i] = g_allocs[--g_nallocs];
            pthread_mutex_unlock(&G);
            return OK;
        }
    }
    pthread_mutex_unlock(&G);
    sbs_die("cuMemFree_v2", "0x%llx is not the start of a live allocation", (unsigned long long)p);
}

/* Left out of the missing-symbol build (build.sh), like an entry point an older driver lacks. */
#ifndef SBS_OMIT_HOST_ALLOC
SBS_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
    (void)flags;
    if (!pp || bytes == 0)
        return E_INVALID_VALUE;
    if (!need_ctx())
        return E_INVALID_CONTEXT;
    if (sbs_fault("alloc"))
        return E_OUT_OF_MEMORY;
    void *h = NULL;
    if (posix_memalign(&h, 4096, (bytes + 4095) & ~(size_t)4095) != 0)
        return E_OUT_OF_MEMORY;
    pthread_mutex_lock(&G);
    if (g_npinned == g_cappinned) {
        size_t cap = g_cappinned ? 2 * g_cappinned : 16;
        struct pinned *n = realloc(g_pinned, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&G);
            free(h);
            return E_OUT_OF_MEMORY;
        }
        g_pinned = n;
        g_cappinned = cap;
    }
    g_pinned[g_npinned++] = (struct pinned){h, bytes};
    pthread_mutex_unlock(&G);
    *pp = h;
    return OK;
}
#endif

SBS_EXPORT CUresult cuMemFreeHost(void *p) {
    pthread_mutex_lock(&G);
    for (size_t i = 0; i < g_npinned; i++) {
        if (g_pinned[i].p == p) {
            g_pinned[i] = g_pinned[--g_npinned];
            pthread_mutex_unlock(&G);
            free(p);
            return OK;
        }
    }
    pthread_mutex_unlock(&G);
    sbs_die("cuMemFreeHost", "%p is not pinned memory from cuMemHostAlloc", p);
}

struct copy {
    CUdeviceptr dev_ptr;
    void *host;     /* destination (D2H) or source (H2D) */
    void *staging;  /* owned copy of a pageable source, or NULL */
    size_t n;
    int dev;
    int to_device;
    const char *call;
};

static void run_copy(void *p) {
    struct copy *c = p;
    /* SCALEBENCH_STANDIN_COPY_DELAY_US holds each copy back: a slow copy engine, which makes
     * a read that did not wait for it fail every time (contract tests) */
    long delay = sbs_env_long("SCALEBENCH_STANDIN_COPY_DELAY_US", 0);
    if (delay > 0)
        usleep((useconds_t)delay);
    /* translate again: memory freed while the copy was queued is caught here */
    void *d = sbs_translate(c->dev_ptr, c->n, c->dev, c->call, "queued copy's device memory");
    if (c->to_device)
        memcpy(d, c->staging ? c->staging : c->host, c->n);
    else
        memcpy(c->host, d, c->n);
    free(c->staging);
    free(c);
}

static CUresult copy_async(CUdeviceptr dp, void *host, size_t n, void *hstream, int to_device,
                           const char *call) {
    if (n == 0)
        return OK;
    if (!host)
        return E_INVALID_VALUE;
    struct ctx *cx = need_ctx();
    if (!cx)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(hstream, call);
    int sdev = s->dev;
    int pinned = is_pinned(host, n);
    pthread_mutex_unlock(&G);
    if (sdev != cx->dev)
        sbs_die(call, "a stream of device %d used while device %d's context is current", sdev, cx->dev);
    sbs_translate(dp, n, sdev, call, to_device ? "destination" : "source");
    struct copy *c = calloc(1, sizeof *c);
    if (!c)
        return E_OUT_OF_MEMORY;
    *c = (struct copy){dp, host, NULL, n, sdev, to_device, call};
    if (to_device && !pinned) {
        /* pageable source: staged before the call returns, as CUDA documents */
        c->staging = malloc(n);
        if (!c->staging) {
            free(c);
            return E_OUT_OF_MEMORY;
        }
        memcpy(c->staging, host, n);
    }
    if (!to_device && pinned)
        memset(host, 0xA5, n); /* unspecified until the copy ran: make a premature read visible */
    pthread_mutex_lock(&G);
    uint64_t seq = enqueue_locked(s, run_copy, c, call);
    if (!to_device && !pinned)
        wait_stream(s, seq); /* device -> pageable returns once the copy is done */
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
    return copy_async(dst, (void *)src, n, stream, 1, "cuMemcpyHtoDAsync_v2");
}

SBS_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
    return copy_async(src, dst, n, stream, 0, "cuMemcpyDtoHAsync_v2");
}

struct dcopy {
    CUdeviceptr dst, src;
    size_t n;
    int dev;
};

static void run_dcopy(void *p) {
    struct dcopy *c = p;
    /* translate again: memory freed while the copy was queued is caught here */
    void *d = sbs_translate(c->dst, c->n, c->dev, "cuMemcpyDtoDAsync_v2", "queued copy's destination");
    const void *s = sbs_translate(c->src, c->n, c->dev, "cuMemcpyDtoDAsync_v2", "queued copy's source");
    memcpy(d, s, c->n);
    free(c);
}

/* Device-to-device copy on one device (ddp_step: a gradient into its bucket). Overlapping
 * ranges are undefined behaviour in CUDA: refused. */
SBS_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *hstream) {
    static const char *call = "cuMemcpyDtoDAsync_v2";
    if (n == 0)
        return OK;
    struct ctx *cx = need_ctx();
    if (!cx)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(hstream, call);
    int sdev = s->dev;
    pthread_mutex_unlock(&G);
    if (sdev != cx->dev)
        sbs_die(call, "a stream of device %d used while device %d's context is current", sdev, cx->dev);
    sbs_translate(dst, n, sdev, call, "destination");
    sbs_translate(src, n, sdev, call, "source");
    if (dst < src + n && src < dst + n)
        sbs_die(call, "source [0x%llx, +%zu) and destination [0x%llx, +%zu) overlap",
                (unsigned long long)src, n, (unsigned long long)dst, n);
    struct dcopy *c = malloc(sizeof *c);
    if (!c)
        return E_OUT_OF_MEMORY;
    *c = (struct dcopy){dst, src, n, sdev};
    pthread_mutex_lock(&G);
    enqueue_locked(s, run_dcopy, c, call);
    pthread_mutex_unlock(&G);
    return OK;
}

/* A host function run in stream order (fault slow_comm: a sleep on the communication
 * stream). Like CUDA's, it runs on a driver thread (here: the stream's own). */
SBS_EXPORT CUresult cuLaunchHostFunc(void *hstream, void (*fn)(void *), void *arg) {
    if (!fn)
        return E_INVALID_VALUE;
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(hstream, "cuLaunchHostFunc");
    enqueue_locked(s, fn, arg, "cuLaunchHostFunc");
    pthread_mutex_unlock(&G);
    return OK;
}

/* ---------- streams ---------- */
SBS_EXPORT CUresult cuStreamCreate(void **ps, unsigned int flags) {
    (void)flags;
    if (!ps)
        return E_INVALID_VALUE;
    struct ctx *c = need_ctx();
    if (!c)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    struct stream *s = new_stream(c->dev, 0);
    pthread_mutex_unlock(&G);
    if (!s)
        return E_OUT_OF_MEMORY;
    *ps = s;
    return OK;
}

SBS_EXPORT CUresult cuStreamDestroy_v2(void *h) {
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(h, "cuStreamDestroy_v2");
    if (s->is_default) {
        pthread_mutex_unlock(&G);
        sbs_die("cuStreamDestroy_v2", "the default stream cannot be destroyed");
    }
    /* CUDA lets queued work finish after the call; the thread drains, then stops */
    wait_stream(s, s->enq);
    s->stop = 1;
    s->magic = 0;
    pthread_cond_broadcast(&CV);
    pthread_mutex_unlock(&G);
    pthread_join(s->th, NULL);
    pthread_mutex_lock(&G);
    for (struct stream **pp = &g_streams; *pp; pp = &(*pp)->next_all)
        if (*pp == s) {
            *pp = s->next_all;
            break;
        }
    pthread_mutex_unlock(&G);
    free(s);
    return OK;
}

SBS_EXPORT CUresult cuStreamSynchronize(void *h) {
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(h, "cuStreamSynchronize");
    wait_stream(s, s->enq);
    pthread_mutex_unlock(&G);
    return OK;
}

/* ---------- events ---------- */
SBS_EXPORT CUresult cuEventCreate(void **pe, unsigned int flags) {
    if (!pe)
        return E_INVALID_VALUE;
    struct ctx *c = need_ctx();
    if (!c)
        return E_INVALID_CONTEXT;
    struct event *e = calloc(1, sizeof *e);
    if (!e)
        return E_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    e->dev = c->dev;
    e->flags = flags;
    pthread_mutex_lock(&G);
    e->next_all = g_events;
    g_events = e;
    pthread_mutex_unlock(&G);
    *pe = e;
    return OK;
}

SBS_EXPORT CUresult cuEventDestroy_v2(void *h) {
    pthread_mutex_lock(&G);
    struct event *e = event_of(h, "cuEventDestroy_v2");
    while (e->done < e->rec) /* a queued record still refers to it */
        pthread_cond_wait(&CV, &G);
    e->magic = 0;
    for (struct event **pp = &g_events; *pp; pp = &(*pp)->next_all)
        if (*pp == e) {
            *pp = e->next_all;
            break;
        }
    pthread_mutex_unlock(&G);
    free(e);
    return OK;
}

struct rec {
    struct event *e;
    uint64_t seq;
};

static void run_record(void *p) {
    struct rec *r = p;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&G);
    if (r->seq > r->e->done) {
        r->e->done = r->seq;
        r->e->t = ts;
    }
    pthread_cond_broadcast(&CV);
    pthread_mutex_unlock(&G);
    free(r);
}

SBS_EXPORT CUresult cuEventRecord(void *he, void *hs) {
    struct ctx *c = need_ctx();
    if (!c)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    struct event *e = event_of(he, "cuEventRecord");
    struct stream *s = stream_of(hs, "cuEventRecord");
    if (e->dev != s->dev || s->dev != c->dev) {
        int ed = e->dev, sd = s->dev;
        pthread_mutex_unlock(&G);
        sbs_die("cuEventRecord", "event of device %d recorded on a stream of device %d (current: %d)", ed, sd, c->dev);
    }
    struct rec *r = malloc(sizeof *r);
    if (!r) {
        pthread_mutex_unlock(&G);
        return E_OUT_OF_MEMORY;
    }
    r->e = e;
    r->seq = ++e->rec;
    enqueue_locked(s, run_record, r, "cuEventRecord");
    pthread_mutex_unlock(&G);
    return OK;
}

struct waitev {
    struct event *e;
    uint64_t target;
};

static void run_wait(void *p) {
    struct waitev *w = p;
    pthread_mutex_lock(&G);
    while (w->e->done < w->target)
        pthread_cond_wait(&CV, &G);
    pthread_mutex_unlock(&G);
    free(w);
}

SBS_EXPORT CUresult cuStreamWaitEvent(void *hs, void *he, unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&G);
    struct stream *s = stream_of(hs, "cuStreamWaitEvent");
    struct event *e = event_of(he, "cuStreamWaitEvent");
    if (e->rec == 0) {
        /* CUDA makes it a no-op, so the ordering the caller meant silently does not happen */
        pthread_mutex_unlock(&G);
        sbs_die("cuStreamWaitEvent", "event %p was never recorded: the wait would order nothing (CUDA treats it as a no-op); record it on the producing stream first", he);
    }

    struct waitev *w = malloc(sizeof *w);
    if (!w) {
        pthread_mutex_unlock(&G);
        return E_OUT_OF_MEMORY;
    }
    w->e = e;
    w->target = e->rec;
    enqueue_locked(s, run_wait, w, "cuStreamWaitEvent");
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuEventSynchronize(void *h) {
    pthread_mutex_lock(&G);
    struct event *e = event_of(h, "cuEventSynchronize");
    while (e->done < e->rec)
        pthread_cond_wait(&CV, &G);
    pthread_mutex_unlock(&G);
    return OK;
}

SBS_EXPORT CUresult cuEventElapsedTime(float *ms, void *ha, void *hb) {
    if (!ms)
        return E_INVALID_VALUE;
    pthread_mutex_lock(&G);
    struct event *a = event_of(ha, "cuEventElapsedTime");
    struct event *b = event_of(hb, "cuEventElapsedTime");
    for (int i = 0; i < 2; i++) {
        struct event *e = i ? b : a;
        if (e->flags & EV_DISABLE_TIMING) {
            pthread_mutex_unlock(&G);
            sbs_die("cuEventElapsedTime", "the %s event was created with CU_EVENT_DISABLE_TIMING", i ? "end" : "start");
        }
        if (e->rec == 0) {
            pthread_mutex_unlock(&G);
            sbs_die("cuEventElapsedTime", "the %s event was read before it was ever recorded", i ? "end" : "start");
        }
    }
    if (a->done < a->rec || b->done < b->rec) {
        pthread_mutex_unlock(&G);
        return E_NOT_READY;
    }
    double d = (double)(b->t.tv_sec - a->t.tv_sec) * 1e3 + (double)(b->t.tv_nsec - a->t.tv_nsec) * 1e-6;
    pthread_mutex_unlock(&G);
    *ms = (float)d;
    return OK;
}

/* ---------- errors ---------- */
static const char *err_name(CUresult r) {
    switch (r) {
    case OK: return "CUDA_SUCCESS";
    case E_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case E_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case E_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case E_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case E_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case E_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case E_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case E_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case E_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return NULL;
    }
}

static const char *err_text(CUresult r) {
    switch (r) {
    case OK: return "no error";
    case E_INVALID_VALUE: return "invalid argument";
    case E_OUT_OF_MEMORY: return "out of memory (scalebench stand-in device)";
    case E_NOT_INITIALIZED: return "initialization error";
    case E_NO_DEVICE: return "no CUDA-capable device is detected";
    case E_INVALID_DEVICE: return "invalid device ordinal";
    case E_INVALID_CONTEXT: return "invalid device context";
    case E_INVALID_HANDLE: return "invalid resource handle";
    case E_NOT_READY: return "device not ready";
    case E_NOT_SUPPORTED: return "operation not supported";
    default: return NULL;
    }
}

SBS_EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
    if (!s)
        return E_INVALID_VALUE;
    *s = err_name(r);
    return *s ? OK : E_INVALID_VALUE;
}

SBS_EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
    if (!s)
        return E_INVALID_VALUE;
    *s = err_text(r);
    return *s ? OK : E_INVALID_VALUE;
}
