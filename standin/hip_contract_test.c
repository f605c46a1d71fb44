/* The ROCm stand-ins' contract checks (libamdhip64.so, librccl.so, librocblas.so), as
 * contract_test.c does for the CUDA ones: each misuse is provoked in a child process that must
 * abort with a message naming the HIP, RCCL, rocBLAS or AMD SMI call the caller made, and a correct
 * sequence must exit 0 with nothing leaked. Built by build.sh, run as `hip-contract-test` by
 * tests/integration/rocm.rs. Declares the real ABI by hand, as a program built against the
 * ROCm headers sees it (hipError_t an int; hipMemcpyKind host-to-device 1, device-to-host 2,
 * device-to-device 3; rocblas_datatype_f32_r 151, rocblas_operation_none 111). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int hipSetDevice(int);
int hipMalloc(void **, size_t);
int hipFree(void *);
int hipMemset(void *, int, size_t);
int hipMemcpyAsync(void *, const void *, size_t, int, void *);
int hipStreamCreate(void **);
int hipStreamDestroy(void *);
int hipStreamSynchronize(void *);
int hipEventCreate(void **);
int hipEventDestroy(void *);
int hipEventRecord(void *, void *);
int hipEventSynchronize(void *);
int hipEventElapsedTime(float *, void *, void *);
int hipStreamWaitEvent(void *, void *, unsigned);
int hipDeviceGetAttribute(int *, int, int);
typedef struct { char internal[128]; } uid_t_;
int ncclGetUniqueId(uid_t_ *);
int ncclCommInitRank(void **, int, uid_t_, int);
int ncclCommAbort(void *);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int ncclAllReduce(const void *, void *, size_t, int, int, void *, void *);
int ncclAllGather(const void *, void *, size_t, int, void *, void *);
int amdsmi_init(uint64_t);
int amdsmi_get_socket_handles(uint32_t *, void **);
int amdsmi_get_gpu_activity(void *, uint32_t *);
int rocblas_create_handle(void **);
int rocblas_destroy_handle(void *);
int rocblas_set_stream(void *, void *);
int rocblas_gemm_strided_batched_ex(void *, int, int, int, int, int, const void *, const void *, int,
                                    int, int64_t, const void *, int, int, int64_t, const void *,
                                    const void *, int, int, int64_t, void *, int, int, int64_t, int,
                                    int, int, int32_t, uint32_t);

enum { H2D = 1, D2H = 2, D2D = 3, F32 = 151, OP_N = 111, NCCL_F32 = 7, NCCL_SUM = 0 };

static void *st[2];

/* A stream on each of the two stand-in GCDs; GCD 0 current. */
static void open_devices(void) {
    for (int d = 0; d < 2; d++) {
        hipSetDevice(d);
        hipStreamCreate(&st[d]);
    }
    hipSetDevice(0);
}

/* Two RCCL communicators of one clique in this process, on GCDs 0 and 1. */
static void two_comms(void **comm) {
    uid_t_ id;
    ncclGetUniqueId(&id);
    ncclGroupStart();
    for (int d = 0; d < 2; d++) {
        hipSetDevice(d);
        ncclCommInitRank(&comm[d], 2, id, d);
    }
    ncclGroupEnd();
}

static int case_out_of_bounds(void) {
    open_devices();
    void *p;
    hipMalloc(&p, 1024);
    char host[2048] = {0};
    hipMemcpyAsync(p, host, 2048, H2D, st[0]);
    return 0;
}

static int case_other_gcds_memory(void) {
    open_devices();
    void *p;
    hipMalloc(&p, 1024); /* GCD 0 */
    char host[1024] = {0};
    hipSetDevice(1);
    hipMemcpyAsync(p, host, 1024, H2D, st[1]);
    return 0;
}

static int case_other_gcds_stream(void) {
    open_devices();
    hipSetDevice(1);
    void *p;
    hipMalloc(&p, 1024); /* GCD 1, enqueued on GCD 0's stream */
    char host[1024] = {0};
    hipMemcpyAsync(p, host, 1024, H2D, st[0]);
    return 0;
}

static int case_memset_past_the_end(void) {
    open_devices();
    void *p;
    hipMalloc(&p, 64);
    hipMemset(p, 0, 65);
    return 0;
}

static int case_event_unrecorded(void) {
    open_devices();
    void *a, *b;
    hipEventCreate(&a);
    hipEventCreate(&b);
    float ms;
    hipEventElapsedTime(&ms, a, b);
    return 0;
}

static int case_wait_unrecorded(void) {
    open_devices();
    void *ev;
    hipEventCreate(&ev);
    hipStreamWaitEvent(st[0], ev, 0);
    return 0;
}

static int case_overlapping_copy(void) {
    open_devices();
    char *p;
    hipMalloc((void **)&p, 4096);
    hipMemcpyAsync(p + 512, p, 1024, D2D, st[0]);
    return 0;
}

static int case_double_free(void) {
    open_devices();
    void *p;
    hipMalloc(&p, 64);
    hipFree(p);
    hipFree(p);
    return 0;
}

/* CUDA's number for the L2 size (38) is not HIP's (19): a port that kept it must not read a
 * made-up value. */
static int case_unmodelled_attribute(void) {
    int v;
    hipDeviceGetAttribute(&v, 38, 0);
    return 0;
}

static int case_rccl_in_place_rule(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    char *buf[2];
    for (int d = 0; d < 2; d++) {
        hipSetDevice(d);
        hipMalloc((void **)&buf[d], 2 * 256 * 4);
    }
    ncclGroupStart();
    for (int d = 0; d < 2; d++) /* rank d must send from recv + d*count; +1 element is wrong */
        ncclAllGather(buf[d] + d * 1024 + 4, buf[d], 255, NCCL_F32, comm[d], st[d]);
    ncclGroupEnd();
    return 0;
}

static int case_rccl_outside_group(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    void *b;
    hipSetDevice(0);
    hipMalloc(&b, 1024);
    ncclAllReduce(b, b, 256, NCCL_F32, NCCL_SUM, comm[0], st[0]);
    return 0;
}

static int case_rocblas_stream_of_another_gcd(void) {
    open_devices();
    void *h;
    rocblas_create_handle(&h); /* on GCD 0 */
    rocblas_set_stream(h, st[1]);
    return 0;
}

static int case_rocblas_handle_on_another_gcd(void) {
    open_devices();
    void *h;
    rocblas_create_handle(&h); /* on GCD 0 */
    rocblas_set_stream(h, st[0]);
    float *a;
    hipMalloc((void **)&a, 3 * 16 * sizeof(float));
    float one = 1, zero = 0;
    hipSetDevice(1);
    rocblas_gemm_strided_batched_ex(h, OP_N, OP_N, 4, 4, 4, &one, a, F32, 4, 16, a + 16, F32, 4, 16,
                                    &zero, a + 32, F32, 4, 16, a + 32, F32, 4, 16, 1, F32, 0, 0, 0);
    return 0;
}

static int case_smi_before_init(void) {
    uint32_t n = 0;
    amdsmi_get_socket_handles(&n, NULL);
    return 0;
}

/* A HIP device ordinal is not an AMD SMI handle (GCDs are found by PCI address). */
static int case_smi_made_up_handle(void) {
    amdsmi_init(1 << 1);
    uint32_t usage[16];
    amdsmi_get_gpu_activity((void *)(uintptr_t)1, usage);
    return 0;
}

static int case_leak(void) {
    open_devices();
    void *p;
    hipMalloc(&p, 4096);
    return 0; /* exit with the allocation and the streams still held */
}

/* Not an abort: copies, an all-reduce over both GCDs and a GEMM in stream order, events
 * timed, everything released; exit 0 when the data came back right. */
static int case_correct_sequence(void) {
    open_devices();
    void *comm[2];
    two_comms(comm);
    float *d[2], host[2][64];
    void *ev[2][2];
    for (int g = 0; g < 2; g++) {
        hipSetDevice(g);
        hipMalloc((void **)&d[g], 64 * sizeof(float));
        for (int i = 0; i < 64; i++)
            host[g][i] = (float)(g + 1);
        hipEventCreate(&ev[g][0]);
        hipEventCreate(&ev[g][1]);
        hipEventRecord(ev[g][0], st[g]);
        hipMemcpyAsync(d[g], host[g], sizeof host[g], H2D, st[g]);
    }
    ncclGroupStart();
    for (int g = 0; g < 2; g++)
        ncclAllReduce(d[g], d[g], 64, NCCL_F32, NCCL_SUM, comm[g], st[g]);
    ncclGroupEnd();
    int bad = 0;
    for (int g = 0; g < 2; g++) {
        hipSetDevice(g);
        hipEventRecord(ev[g][1], st[g]);
        hipMemcpyAsync(host[g], d[g], sizeof host[g], D2H, st[g]);
        hipStreamSynchronize(st[g]);
        float ms = -1;
        hipEventSynchronize(ev[g][1]);
        bad |= hipEventElapsedTime(&ms, ev[g][0], ev[g][1]) != 0 || ms < 0;
        for (int i = 0; i < 64; i++)
            bad |= host[g][i] != 3.0f;
    }
    for (int g = 0; g < 2; g++) {
        hipSetDevice(g);
        ncclCommAbort(comm[g]);
        hipFree(d[g]);
        hipEventDestroy(ev[g][0]);
        hipEventDestroy(ev[g][1]);
        hipStreamDestroy(st[g]);
    }
    return bad;
}

struct tc {
    const char *name;
    int (*run)(void);
    const char *expect; /* stderr must contain it; NULL: must exit 0 */
};

int main(void) {
    struct tc cases[] = {
        {"out of bounds", case_out_of_bounds,
         "contract violation in hipMemcpyAsync (cuMemcpyHtoDAsync_v2): destination"},
        {"another GCD's memory", case_other_gcds_memory,
         "is memory of device 0 used on device 1"},
        {"another GCD's stream", case_other_gcds_stream,
         "contract violation in hipMemcpyAsync (cuMemcpyHtoDAsync_v2): a stream of device 0 used while device 1's context is current"},
        {"memset past the end", case_memset_past_the_end,
         "contract violation in hipMemset: destination"},
        {"event never recorded", case_event_unrecorded,
         "contract violation in hipEventElapsedTime (cuEventElapsedTime): the start event was read before it was ever recorded"},
        {"wait on an event never recorded", case_wait_unrecorded,
         "contract violation in hipStreamWaitEvent (cuStreamWaitEvent): event"},
        {"overlapping device copy", case_overlapping_copy,
         "contract violation in hipMemcpyAsync (cuMemcpyDtoDAsync_v2): source"},
        {"double free", case_double_free,
         "contract violation in hipFree (cuMemFree_v2): "},
        {"attribute by CUDA's number", case_unmodelled_attribute,
         "contract violation in hipDeviceGetAttribute: attribute 38 is not modelled"},
        {"RCCL in-place rule", case_rccl_in_place_rule,
         "contract violation in ncclAllGather: send buffer"},
        {"RCCL comms outside a group", case_rccl_outside_group,
         "contract violation in ncclAllReduce: issued outside ncclGroupStart/ncclGroupEnd"},
        {"rocBLAS stream of another GCD", case_rocblas_stream_of_another_gcd,
         "contract violation in rocblas_set_stream: a stream of device 1 given to a handle of device 0"},
        {"rocBLAS handle on another GCD", case_rocblas_handle_on_another_gcd,
         "contract violation in rocblas_gemm_strided_batched_ex: handle of device 0 used while another device is current"},
        {"AMD SMI before amdsmi_init", case_smi_before_init,
         "contract violation in amdsmi_get_socket_handles: called before amdsmi_init"},
        {"AMD SMI handle it never gave", case_smi_made_up_handle,
         "contract violation in amdsmi_get_gpu_activity: 0x1 is not a processor handle"},
        {"leak at exit", case_leak,
         "leak at exit (libamdhip64.so): 1 device allocation(s) of 4096 byte(s)"},
        {"correct sequence", case_correct_sequence, NULL},
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
                     : WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == 0;
        printf("%s: %s\n", ok ? "ok  " : "FAIL", cases[i].name);
        if (!ok) {
            printf("  expected %s, got status %d, stderr:\n%s\n",
                   cases[i].expect ? cases[i].expect : "exit 0 and no output", status, out);
            failed++;
        }
    }
    return failed != 0;
}
