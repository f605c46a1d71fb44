/* The stand-ins' contract checks, each provoked in a child process that must abort with a
 * message naming the call (and one that must not: a correct sequence). Built and run by
 * build.sh's caller: contract-test <libdir> (tests/integration/cuda.rs). Declares the real ABI by hand, as
 * a program built against the CUDA headers would see it. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef unsigned long long dptr;
int cuInit(unsigned);
int cuDeviceGet(int *, int);
int cuDevicePrimaryCtxRetain(void **, int);
int cuDevicePrimaryCtxRelease_v2(int);
int cuCtxSetCurrent(void *);
int cuMemAlloc_v2(dptr *, size_t);
int cuMemFree_v2(dptr);
int cuMemHostAlloc(void **, size_t, unsigned);
int cuMemFreeHost(void *);
int cuMemcpyHtoDAsync_v2(dptr, const void *, size_t, void *);
int cuMemcpyDtoHAsync_v2(void *, dptr, size_t, void *);
int cuStreamCreate(void **, unsigned);
int cuStreamDestroy_v2(void *);
int cuStreamSynchronize(void *);
int cuEventCreate(void **, unsigned);
int cuEventDestroy_v2(void *);
int cuEventElapsedTime(float *, void *, void *);
int cuStreamWaitEvent(void *, void *, unsigned);
int cuMemcpyDtoDAsync_v2(dptr, dptr, size_t, void *);
typedef struct { char internal[128]; } uid_t_;
int ncclGetUniqueId(uid_t_ *);
int ncclCommInitRank(void **, int, uid_t_, int);
int ncclCommAbort(void *);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int ncclAllReduce(const void *, void *, size_t, int, int, void *, void *);
int ncclAllGather(const void *, void *, size_t, int, void *, void *);

static void *ctx[2], *st[2];

static void open_devices(void) {
    cuInit(0);
    for (int d = 0; d < 2; d++) {
        int dev;
        cuDeviceGet(&dev, d);
        cuDevicePrimaryCtxRetain(&ctx[d], dev);
        cuCtxSetCurrent(ctx[d]);
        cuStreamCreate(&st[d], 1);
    }
    cuCtxSetCurrent(ctx[0]);
}

static void close_devices(void) {
    for (int d = 0; d < 2; d++) {
        cuCtxSetCurrent(ctx[d]);
        cuStreamDestroy_v2(st[d]);
        cuDevicePrimaryCtxRelease_v2(d);
    }
}

/* Two communicators of one clique in this process, on devices 0 and 1. */
static void two_comms(void **comm) {
    uid_t_ id;
    ncclGetUniqueId(&id);
    ncclGroupStart();
    for (int d = 0; d < 2; d++) {
        cuCtxSetCurrent(ctx[d]);
        ncclCommInitRank(&comm[d], 2, id, d);
    }
    ncclGroupEnd();
}

static int case_out_of_bounds(void) {
    open_devices();
    dptr p;
    cuMemAlloc_v2(&p, 1024);
    char host[2048] = {0};
    cuMemcpyHtoDAsync_v2(p, host, 2048, st[0]);
    return 0;
}

static int case_other_device(void) {
    open_devices();
    dptr p;
    cuMemAlloc_v2(&p, 1024); /* device 0 */
    char host[1024] = {0};
    cuCtxSetCurrent(ctx[1]);
    cuMemcpyHtoDAsync_v2(p, host, 1024, st[1]);
    return 0;
}

static int case_event_unrecorded(void) {
    open_devices();
    void *a, *b;
    cuEventCreate(&a, 0);
    cuEventCreate(&b, 0);
    float ms;
    cuEventElapsedTime(&ms, a, b);
    return 0;
}

/* Not an abort: a read of pinned results before synchronising sees the poison, never the
 * data; after synchronising, the data. Exit 0 when both hold. */
static int case_wait_unrecorded(void) {
    open_devices();
    void *ev;
    cuEventCreate(&ev, 2);
    cuStreamWaitEvent(st[0], ev, 0);
    return 0;
}

static int case_overlapping_copy(void) {
    open_devices();
    dptr p;
    cuMemAlloc_v2(&p, 4096);
    cuMemcpyDtoDAsync_v2(p + 512, p, 1024, st[0]);
    return 0;
}

static int case_unsynchronised_read(void) {
    open_devices();
    dptr p;
    cuMemAlloc_v2(&p, 64);
    char src[64];
    memset(src, 7, 64);
    cuMemcpyHtoDAsync_v2(p, src, 64, st[0]);
    unsigned char *pin;
    cuMemHostAlloc((void **)&pin, 64, 0);
    cuMemcpyDtoHAsync_v2(pin, p, 64, st[0]);
    int early = pin[0];
    cuStreamSynchronize(st[0]);
    int late = pin[0];
    cuMemFreeHost(pin);
    cuMemFree_v2(p);
    close_devices();
    return !(early == 0xA5 && late == 7);
}

static int case_in_place_rule(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    dptr buf[2];
    for (int d = 0; d < 2; d++) {
        cuCtxSetCurrent(ctx[d]);
        cuMemAlloc_v2(&buf[d], 2 * 256 * 4);
    }
    ncclGroupStart();
    for (int d = 0; d < 2; d++) /* rank d must send from recv + d*count; +1 element is wrong */
        ncclAllGather((void *)(uintptr_t)(buf[d] + (dptr)d * 1024 + 4), (void *)(uintptr_t)buf[d], 255, 7, comm[d], st[d]);
    ncclGroupEnd();
    return 0;
}

static int case_outside_group(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    dptr b;
    cuCtxSetCurrent(ctx[0]);
    cuMemAlloc_v2(&b, 1024);
    ncclAllReduce((void *)(uintptr_t)b, (void *)(uintptr_t)b, 256, 7, 0, comm[0], st[0]);
    return 0;
}

static int case_mismatched_counts(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    dptr b[2];
    ncclGroupStart();
    for (int d = 0; d < 2; d++) {
        cuCtxSetCurrent(ctx[d]);
        cuMemAlloc_v2(&b[d], 1024);
        ncclAllReduce((void *)(uintptr_t)b[d], (void *)(uintptr_t)b[d], d ? 128 : 256, 7, 0, comm[d], st[d]);
    }
    ncclGroupEnd();
    cuStreamSynchronize(st[0]);
    cuStreamSynchronize(st[1]);
    return 0;
}

static int case_leak(void) {
    open_devices();
    dptr p;
    cuMemAlloc_v2(&p, 4096);
    return 0; /* exit with the allocation, a stream and contexts still held */
}

struct tc {
    const char *name;
    int (*run)(void);
    const char *expect; /* stderr must contain it; NULL: must exit 0 */
};

int main(void) {
    struct tc cases[] = {
        {"out of bounds", case_out_of_bounds, "contract violation in cuMemcpyHtoDAsync_v2: destination"},
        {"another device's memory", case_other_device, "is memory of device 0 used on device 1"},
        {"event never recorded", case_event_unrecorded, "contract violation in cuEventElapsedTime: the start event was read before it was ever recorded"},
        {"wait on an event never recorded", case_wait_unrecorded, "contract violation in cuStreamWaitEvent: event"},
        {"overlapping device copy", case_overlapping_copy, "contract violation in cuMemcpyDtoDAsync_v2: source"},
        {"unsynchronised read", case_unsynchronised_read, NULL},
        {"in-place rule", case_in_place_rule, "contract violation in ncclAllGather: send buffer"},
        {"several comms outside a group", case_outside_group, "contract violation in ncclAllReduce: issued outside ncclGroupStart/ncclGroupEnd"},
        {"mismatched counts", case_mismatched_counts, "in the same round"},
        {"leak at exit", case_leak, "leak at exit (libcuda.so.1): 1 device allocation(s) of 4096 byte(s)"},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int fd[2];
        if (pipe(fd) != 0)
            return 2;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            dup2(fd[1], 2);
            setenv("SCALEBENCH_STANDIN_COPY_DELAY_US", "200000", 1);
            exit(cases[i].run());
        }
        close(fd[1]);
        char out[4096] = {0};
        size_t n = 0;
        ssize_t k;
        while (n < sizeof out - 1 && (k = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
            n += (size_t)k;
        close(fd[0]);
        int status;
        waitpid(pid, &status, 0);
        int ok = cases[i].expect
                     ? WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(out, cases[i].expect)
                     : WIFEXITED(status) && WEXITSTATUS(status) == 0;
        printf("%s: %s\n", ok ? "ok  " : "FAIL", cases[i].name);
        if (!ok) {
            printf("  expected %s, got status %d, stderr:\n%s\n",
                   cases[i].expect ? cases[i].expect : "exit 0", status, out);
            failed++;
        }
    }
    return failed != 0;
}
