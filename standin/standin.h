/* Shared by the scalebench stand-in libraries (libcuda, libcublas, libnccl, libnvidia-ml):
 * the load gate, environment knobs, contract-violation reports, device identities, and the
 * driver services that the cuBLAS and NCCL stand-ins call (exported by the libcuda stand-in).
 *
 * These libraries are test doubles: "device" memory is host memory, work runs on CPU threads,
 * one per stream. They exist so the CUDA backend's device path runs in CI; no number they
 * produce is a GPU's. */
#ifndef SCALEBENCH_STANDIN_H
#define SCALEBENCH_STANDIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SBS_NAME "scalebench stand-in"
#define SBS_GATE_ENV "SCALEBENCH_STANDIN"
#define SBS_EXPORT __attribute__((visibility("default")))
#define SBS_FN static __attribute__((unused))

/* Refuses to load (exit 2, one sentence) unless SCALEBENCH_STANDIN=1: nothing may use a
 * stand-in by accident and mistake its results for a GPU's. Called from each library's
 * constructor, so even a dlopen probe is refused. */
SBS_FN void sbs_gate(const char *lib) {
    const char *v = getenv(SBS_GATE_ENV);
    if (v && strcmp(v, "1") == 0)
        return;
    char msg[640];
    int n = snprintf(msg, sizeof msg,
                     "error: %s is the scalebench stand-in (a CPU test double, not the vendor's "
                     "library) and refuses to load without %s=1: set %s=1 to test a GPU "
                     "backend on purpose, or remove the stand-in directory from "
                     "LD_LIBRARY_PATH to use the real library\n",
                     lib, SBS_GATE_ENV, SBS_GATE_ENV);
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
    }
    _exit(2);
}

/* The entry point the caller called, where a wrapper forwards it to the driver call that
 * checks it (the HIP stand-in wraps cuda.c's driver): a violation names both, the caller's
 * first. Set for the wrapper's duration by SBS_ENTRY; NULL elsewhere. */
static __thread const char *sbs_entry __attribute__((unused));
SBS_FN void sbs_entry_end(const char **unused) {
    (void)unused;
    sbs_entry = NULL;
}
#define SBS_ENTRY(name) \
    __attribute__((cleanup(sbs_entry_end))) const char *sbs_entry_guard_ = (sbs_entry = (name))

/* A contract violation: the caller broke a rule the real library would punish with undefined
 * behaviour (or a hang). Abort loudly, naming the call. */
static void sbs_die(const char *call, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
SBS_FN void sbs_die(const char *call, const char *fmt, ...) {
    char msg[1024];
    int n = sbs_entry && strcmp(sbs_entry, call) != 0
                ? snprintf(msg, sizeof msg, "scalebench stand-in: contract violation in %s (%s): ", sbs_entry, call)
                : snprintf(msg, sizeof msg, "scalebench stand-in: contract violation in %s: ", call);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof msg)
        n += vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof msg - 1)
        n = (int)sizeof msg - 2;
    msg[n++] = '\n';
    if (write(2, msg, (size_t)n) < 0) {
    }
    abort();
}

SBS_FN long sbs_env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : x;
}

/* Whether SCALEBENCH_STANDIN_FAULT (a comma-separated list) names `fault`. */
SBS_FN int sbs_fault(const char *fault) {
    const char *v = getenv("SCALEBENCH_STANDIN_FAULT");
    if (!v)
        return 0;
    size_t n = strlen(fault);
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, fault, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* Devices each process sees (SCALEBENCH_STANDIN_DEVICES, default 2). */
SBS_FN int sbs_device_count(void) {
    long n = sbs_env_long("SCALEBENCH_STANDIN_DEVICES", 2);
    return n < 0 ? 0 : (n > 16 ? 16 : (int)n);
}

/* A UUID per (host, device index): two processes on one host that open "device 1" open the
 * same device, as on a real node, so the backend's duplicate-GPU check sees it. */
SBS_FN void sbs_uuid(int dev, unsigned char out[16]) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = host; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(h >> (8 * i));
    memcpy(out + 8, "sbsi", 4);
    out[12] = 0;
    out[13] = 0;
    out[14] = 0;
    out[15] = (unsigned char)dev;
}

SBS_FN void sbs_uuid_string(int dev, char out[48]) {
    unsigned char b[16];
    sbs_uuid(dev, b);
    snprintf(out, 48,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

/* ---- driver services for the other stand-ins (defined in cuda.c) ---- */
typedef unsigned long long sbs_devptr;
typedef void (*sbs_run_fn)(void *arg);

/* Host address of [p, p+bytes) in a live allocation of device `dev`; aborts naming `call`
 * and `what` otherwise. bytes = 0 only checks that p is inside (or at the end of) one. */
void *sbs_translate(sbs_devptr p, size_t bytes, int dev, const char *call, const char *what);
/* Device of the calling thread's current context, or -1. */
int sbs_current_device(void);
/* Device of a stream (0 and the per-thread handle mean the current context's default
 * stream); aborts naming `call` for a handle that is not a live stream. */
int sbs_stream_device(void *stream, const char *call);
/* Runs `run(arg)` on the stream's worker after everything enqueued before it. With
 * `check_current`, the stream must belong to the current context (driver and cuBLAS rules;
 * NCCL launches on its communicator's device whatever is current). */
void sbs_enqueue(void *stream, sbs_run_fn run, void *arg, const char *call, int check_current);
/* Nanoseconds this process has kept stand-in device `dev` (its index before
 * CUDA_VISIBLE_DEVICES, as NVML numbers devices) busy running work. */
uint64_t sbs_device_busy_ns(int dev);

#endif
