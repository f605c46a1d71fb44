/* Stand-in NCCL (libnccl.so): the entry points scalebench's CUDA backend calls, with the
 * real ABI — unique id, ncclCommInitRank (also several per process inside a group), group
 * start/end, AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, Send/Recv, abort and
 * destroy, errors, version.
 *
 * Transport: one shared-memory segment per communicator clique (a file in /dev/shm named by
 * the token that the unique id carries, unlinked once every rank mapped it), with a
 * process-shared mutex and condition variable. It serves ranks in one process (hybrid) and
 * in several processes alike. Every collective is one round: each rank copies its input into
 * its slot, all meet at a barrier (where the ranks' calls are compared: kind, count, type,
 * operator, root), each computes its own output from the slots, all meet again. A group of
 * ncclSend/ncclRecv meets only its peers (twice: data posted, data read), as NCCL's
 * point-to-point involves only the ranks that exchange. Rounds run
 * on the stream threads of the libcuda stand-in, so they are ordered with copies and events
 * exactly as on a GPU stream.
 *
 * Knobs: SCALEBENCH_STANDIN_NCCL_VERSION (22803), SCALEBENCH_STANDIN_NCCL_COST_SCALE (1: the
 * simulated cost of each algorithm/protocol, below, multiplied), SCALEBENCH_STANDIN_SLOT_BYTES (16 MiB per
 * rank), SCALEBENCH_STANDIN_TIMEOUT_S (120), SCALEBENCH_STANDIN_SHM_DIR (/dev/shm, else /tmp),
 * SCALEBENCH_STANDIN_FAULT=comm-init|collective, SCALEBENCH_STANDIN_DEFECT=corrupt (a planted
 * defect: one element of every result is wrong, so validation must fail). */
#define _GNU_SOURCE
#include "standin.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

typedef int ncclResult_t;
enum {
    N_OK = 0,
    N_UNHANDLED_CUDA = 1,
    N_SYSTEM = 2,
    N_INTERNAL = 3,
    N_INVALID_ARGUMENT = 4,
    N_INVALID_USAGE = 5,
    N_REMOTE = 6,
};
enum { T_I32 = 2, T_F16 = 6, T_F32 = 7, T_F64 = 8, T_BF16 = 9 };
enum { O_SUM = 0, O_PROD = 1, O_MAX = 2, O_MIN = 3, O_AVG = 4 };
enum { K_ALLREDUCE, K_REDUCE, K_BCAST, K_ALLGATHER, K_REDUCESCATTER, K_SEND, K_RECV, K_P2P };
static const char *KIND[] = {"ncclAllReduce", "ncclReduce", "ncclBroadcast", "ncclAllGather",
                             "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclSend/ncclRecv"};

#define MAXR 64
#define MAXP (2 * MAXR)
#define COMM_MAGIC 0x5b6e636cu
#define SEG_MAGIC 0x5342534e43434c31ull
static const char UID_MAGIC[16] = "SBSTANDIN-NCCL1";

typedef struct {
    char internal[128];
} ncclUniqueId;

struct desc {
    int kind, dtype, op, root;
    size_t count;
};
struct dirent_ {
    int peer;
    size_t off, bytes;
};
struct seg {
    uint64_t magic;
    uint32_t nranks;
    uint32_t ready;
    size_t slot;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t joined, count, failed;
    uint64_t gen;
    struct desc desc[MAXR];
    uint32_t ndir[MAXR];
    struct dirent_ dir[MAXR][MAXP];
    /* arrivals[a][b]: how often rank a has reached a point-to-point sync with peer b */
    uint64_t arrivals[MAXR][MAXR];
};

struct comm {
    uint32_t magic;
    int nranks, rank, dev;
    uint64_t token;
    struct seg *h;
    char *data;
    size_t map_bytes;
    int creator;
    int async_err;
    int inflight;
    int opened;
    uint64_t opcount;
    char path[256];
    struct comm *next;
};

/* Built a second time as RCCL (librccl.so, over the HIP runtime stand-in): RCCL keeps NCCL's
 * C API and reports the NCCL version it is based on (ROCm 6.2's RCCL: 2.20.5). */
#ifdef SBS_RCCL
#define SBS_CCL_LIB "librccl.so"
#define SBS_CCL_VERSION 22005
#else
#define SBS_CCL_LIB "libnccl.so"
#define SBS_CCL_VERSION 22803
#endif

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static struct comm *g_comms;
static char g_last[512];

__attribute__((constructor)) static void standin_load(void) {
    sbs_gate(SBS_CCL_LIB);
}

__attribute__((destructor)) static void standin_unload(void) {
    int n = 0;
    pthread_mutex_lock(&M);
    for (struct comm *c = g_comms; c; c = c->next)
        n++;
    pthread_mutex_unlock(&M);
    if (!n)
        return;
    fprintf(stderr, "scalebench stand-in: leak at exit (" SBS_CCL_LIB "): %d communicator(s) were never destroyed or aborted\n", n);
    const char *w = getenv("SCALEBENCH_STANDIN_LEAKS");
    if (!(w && strcmp(w, "warn") == 0))
        abort();
}

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&M);
    vsnprintf(g_last, sizeof g_last, fmt, ap);
    pthread_mutex_unlock(&M);
    va_end(ap);
    return r;
}

static size_t tsize(int t) {
    switch (t) {
    case T_I32: case T_F32: return 4;
    case T_F64: return 8;
    case T_F16: case T_BF16: return 2;
    default: return 0;
    }
}

static double deadline_s(void) {
    return (double)sbs_env_long("SCALEBENCH_STANDIN_TIMEOUT_S", 120);
}

static void abs_deadline(struct timespec *ts) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)deadline_s();
}

/* ---------- versions, errors, unique id ---------- */
SBS_EXPORT ncclResult_t ncclGetVersion(int *v) {
    if (!v)
        return N_INVALID_ARGUMENT;
    *v = (int)sbs_env_long("SCALEBENCH_STANDIN_NCCL_VERSION", SBS_CCL_VERSION);
    return N_OK;
}

SBS_EXPORT const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case N_OK: return "no error";
    case N_UNHANDLED_CUDA: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case N_SYSTEM: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case N_INTERNAL: return "internal error - please report this issue to the NCCL developers";
    case N_INVALID_ARGUMENT: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case N_INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case N_REMOTE: return "remote process exited or there was a network error";
    default: return "unknown result code";
    }
}

SBS_EXPORT const char *ncclGetLastError(void *comm) {
    (void)comm;
    return g_last;
}

SBS_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id)
        return N_INVALID_ARGUMENT;
    memset(id, 0, sizeof *id);
    memcpy(id->internal, UID_MAGIC, 16);
    uint64_t token = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, &token, sizeof token) != (ssize_t)sizeof token) {
        if (fd >= 0)
            close(fd);
        return fail(N_SYSTEM, "scalebench stand-in: /dev/urandom unreadable: %s", strerror(errno));
    }
    close(fd);
    memcpy(id->internal + 16, &token, 8);
    uint32_t pid = (uint32_t)getpid();
    memcpy(id->internal + 24, &pid, 4);
    return N_OK;
}

/* ---------- groups ---------- */
struct call {
    int kind, dtype, op, root, peer;
    size_t count;
    sbs_devptr send, recv;
    size_t send_bytes, recv_bytes;
    struct comm *comm;
    void *stream;
    int algo, proto; /* the choice (collectives only) */
};
static __thread int t_depth;
static __thread struct call *t_calls;
static __thread size_t t_ncalls, t_capcalls;
static __thread struct comm **t_inits;
static __thread size_t t_ninits, t_capinits;

/* ---------- algorithms, protocols, simulated costs and INFO lines ----------
 * NCCL_ALGO / NCCL_PROTO are honoured as NCCL reads them: a comma list, any case, `^`
 * excludes; from 2.24 also per function (`ring;allreduce:tree`), where an unknown token is a
 * hard error (before 2.24 it is ignored). The stand-in models Ring for every collective and
 * Tree for AllReduce, with the three protocols; each (algorithm, protocol) has its own
 * simulated cost, α + bytes/β, slept on the stream thread after the round, so a forced choice
 * is measurably slower or faster. The planted fact: LL128 is the fastest AllReduce protocol
 * between 2.7 KB and 120 KB (Tree/LL128 to 8 KB, Ring/LL128 above), but the default choice
 * never picks LL128 (as NCCL leaves LL128 off by default on platforms it does not trust), so
 * a sweep finds the default slower there (docs/nccl-capture.md).
 *
 * With NCCL_DEBUG=INFO the stand-in prints NCCL's INFO lines in the format of the version it
 * claims (SCALEBENCH_STANDIN_NCCL_VERSION): `NCCL version` (INIT), the per-call line (COLL,
 * every rank) and the choice line (TUNING, rank 0 of each communicator; none before 2.20,
 * numeric 2.20–2.23, named from 2.24), to NCCL_DEBUG_FILE (`%h` host, `%p` pid) or stdout. */
enum { A_TREE, A_RING, A_COLLNET_DIRECT, A_COLLNET_CHAIN, A_NVLS, A_NVLS_TREE, A_PAT, NALGO };
enum { P_LL, P_LL128, P_SIMPLE, NPROTO };
enum { NFUNC = 5 }; /* indexed by K_ALLREDUCE … K_REDUCESCATTER; NALGO > NPROTO sizes the lists */
static const char *ALGO_LOG[NALGO] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *ALGO_ENV[NALGO] = {"Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};
static const char *PROTO_LOG[NPROTO] = {"LL", "LL128", "SIMPLE"};
static const char *PROTO_ENV[NPROTO] = {"LL", "LL128", "Simple"};
static const char *FUNC_LOG[NFUNC] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter"};
static const char *FUNC_ENV[NFUNC] = {"allreduce", "reduce", "broadcast", "allgather", "reducescatter"};
/* simulated cost: microseconds of latency, bytes per microsecond */
static const double ALPHA_US[2][NPROTO] = {{100, 150, 300}, {125, 175, 400}};
static const double BETA_BPUS[2][NPROTO] = {{40, 160, 400}, {50, 320, 800}};

static int g_algo_on[NFUNC][NALGO], g_proto_on[NFUNC][NPROTO];
static char g_tuning_err[256];
static pthread_once_t g_tuning_once = PTHREAD_ONCE_INIT;

static int version_code(void) {
    return (int)sbs_env_long("SCALEBENCH_STANDIN_NCCL_VERSION", SBS_CCL_VERSION);
}

static int modelled(int func, int algo) {
    return algo == A_RING || (algo == A_TREE && func == K_ALLREDUCE);
}

/* One list (`a,b` or `^a,b`) into on[0..n): names compared without case. */
static int apply_list(const char *var, const char *list, size_t len, int *on, int n, const char *const names[]) {
    int neg = len > 0 && list[0] == '^';
    for (int i = 0; i < n; i++)
        on[i] = neg;
    size_t p = (size_t)neg;
    while (p < len) {
        size_t e = p;
        while (e < len && list[e] != ',')
            e++;
        int found = -1;
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == e - p && strncasecmp(list + p, names[i], e - p) == 0)
                found = i;
        if (found >= 0)
            on[found] = !neg;
        else if (version_code() >= 22400 && e > p) {
            snprintf(g_tuning_err, sizeof g_tuning_err, "%s: unknown token '%.*s'", var, (int)(e - p), list + p);
            return -1;
        }
        p = e + 1;
    }
    return 0;
}

/* NCCL_ALGO or NCCL_PROTO into on[func][·]: `list`, or from 2.24 `list;func:list;…`. */
static int apply_var(const char *var, int n, const char *const names[], int on[][NALGO]) {
    const char *v = getenv(var);
    for (int f = 0; f < NFUNC; f++)
        for (int i = 0; i < n; i++)
            on[f][i] = 1;
    if (!v || !*v)
        return 0;
    const char *p = v;
    while (*p) {
        const char *e = version_code() >= 22400 ? strchr(p, ';') : NULL;
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        int f0 = 0, f1 = NFUNC;
        const char *list = p;
        if (colon && version_code() >= 22400) {
            int f = -1;
            for (int i = 0; i < NFUNC; i++)
                if (strlen(FUNC_ENV[i]) == (size_t)(colon - p) && strncasecmp(p, FUNC_ENV[i], (size_t)(colon - p)) == 0)
                    f = i;
            if (f < 0) {
                snprintf(g_tuning_err, sizeof g_tuning_err, "%s: unknown function '%.*s'", var, (int)(colon - p), p);
                return -1;
            }
            f0 = f;
            f1 = f + 1;
            list = colon + 1;
        }
        for (int f = f0; f < f1; f++)
            if (apply_list(var, list, len - (size_t)(list - p), on[f], n, names) != 0)
                return -1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static void tuning_init(void) {
    int a[NFUNC][NALGO], q[NFUNC][NALGO];
    if (apply_var("NCCL_ALGO", NALGO, ALGO_ENV, a) != 0 || apply_var("NCCL_PROTO", NPROTO, PROTO_ENV, q) != 0)
        return;
    for (int f = 0; f < NFUNC; f++) {
        for (int i = 0; i < NALGO; i++)
            g_algo_on[f][i] = a[f][i];
        for (int i = 0; i < NPROTO; i++)
            g_proto_on[f][i] = q[f][i];
    }
}

static double cost_us(int algo, int proto, size_t bytes) {
    int a = algo == A_TREE ? 0 : 1;
    return ALPHA_US[a][proto] + (double)bytes / BETA_BPUS[a][proto];
}

/* The choice for one call: the cheapest enabled (algorithm, protocol); LL128 only when
 * NCCL_PROTO names it. -1 when nothing is left (NCCL's "no algorithm/protocol available"). */
static int choose(int func, size_t bytes, int *algo, int *proto) {
    const char *pv = getenv("NCCL_PROTO");
    int ll128_asked = pv && strcasestr(pv, "LL128") && pv[0] != '^';
    double best = -1;
    for (int a = 0; a < NALGO; a++)
        for (int p = 0; p < NPROTO; p++) {
            if (!modelled(func, a) || !g_algo_on[func][a] || !g_proto_on[func][p])
                continue;
            if (p == P_LL128 && !ll128_asked)
                continue;
            double c = cost_us(a, p, bytes);
            if (best < 0 || c < best) {
                best = c;
                *algo = a;
                *proto = p;
            }
        }
    return best < 0 ? -1 : 0;
}

static void sleep_us(double us) {
    struct timespec ts = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- INFO lines ---- */
static FILE *g_log;
static int g_subsys; /* bits: INIT 1, COLL 2, TUNING 64 (NCCL's values) */
static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
enum { S_INIT = 1, S_COLL = 2, S_TUNING = 64 };

static void log_init(void) {
    const char *lvl = getenv("NCCL_DEBUG");
    if (!lvl || (strcasecmp(lvl, "INFO") != 0 && strcasecmp(lvl, "TRACE") != 0))
        return;
    const char *sub = getenv("NCCL_DEBUG_SUBSYS");
    if (!sub || !*sub)
        sub = "INIT,BOOTSTRAP,ENV";
    int neg = sub[0] == '^', mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sub + neg);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(t, "INIT") == 0) mask |= S_INIT;
        else if (strcasecmp(t, "COLL") == 0) mask |= S_COLL;
        else if (strcasecmp(t, "TUNING") == 0) mask |= S_TUNING;
        else if (strcasecmp(t, "ALL") == 0) mask |= ~0;
    }
    g_subsys = neg ? ~mask : mask;
    g_log = stdout;
    const char *file = getenv("NCCL_DEBUG_FILE");
    if (file && *file) {
        char path[1024], host[256] = "";
        gethostname(host, sizeof host - 1);
        char *dot = strchr(host, '.');
        if (dot)
            *dot = 0;
        size_t o = 0;
        for (const char *p = file; *p && o + 32 < sizeof path; p++) {
            if (p[0] == '%' && p[1] == 'h') {
                o += (size_t)snprintf(path + o, sizeof path - o, "%.200s", host);
                p++;
            } else if (p[0] == '%' && p[1] == 'p') {
                o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
                p++;
            } else {
                path[o++] = *p;
            }
        }
        path[o] = 0;
        FILE *f = fopen(path, "w");
        if (f)
            g_log = f;
    }
}

static void info(int subsys, int dev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void info(int subsys, int dev, const char *fmt, ...) {
    pthread_once(&g_log_once, log_init);
    if (!g_log || !(g_subsys & subsys))
        return;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = 0;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g_log_mu);
    fprintf(g_log, "%s:%d:%d [%d] NCCL INFO ", host, (int)getpid(), (int)gettid(), dev);
    vfprintf(g_log, fmt, ap);
    fputc('\n', g_log);
    fflush(g_log);
    pthread_mutex_unlock(&g_log_mu);
    va_end(ap);
}

/* The choice line of the version claimed, as NCCL's enqueue.cc prints it. */
static void log_choice(const struct comm *c, int kind, size_t count, size_t es, int algo, int proto) {
    int v = version_code();
    if (c->rank != 0 || v < 22000)
        return;
    size_t bytes = count * es;
    int gathers = kind == K_ALLGATHER || kind == K_REDUCESCATTER;
    if (v < 22400 && gathers)
        bytes *= (size_t)c->nranks;
    double t = cost_us(algo, proto, bytes);
    if (v < 22300)
        info(S_TUNING, c->dev, "%zu Bytes -> Algo %d proto %d time %f", bytes, algo, proto, t);
    else if (v < 22400)
        info(S_TUNING, c->dev, "%s: %zu Bytes -> Algo %d proto %d time %f", FUNC_LOG[kind], bytes, algo, proto, t);
    else
        info(S_TUNING, c->dev, "%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}", FUNC_LOG[kind], bytes,
             ALGO_LOG[algo], PROTO_LOG[proto], 0, proto == P_SIMPLE ? 3 : 1);
}

static void show_version(void) {
    int v = version_code();
    int major = v >= 20900 ? v / 10000 : v / 1000, minor = v >= 20900 ? v / 100 % 100 : v / 100 % 10;
    info(S_INIT, sbs_current_device(), "NCCL version %d.%d.%d+standin", major, minor, v % 100);
}

/* ---------- communicators ---------- */
static int shm_path(uint64_t token, char *out, size_t n) {
    const char *dir = getenv("SCALEBENCH_STANDIN_SHM_DIR");
    if (!dir || !*dir) /* containers without a writable /dev/shm: a file-backed mapping */
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return snprintf(out, n, "%s/scalebench-standin-%016llx", dir, (unsigned long long)token) < (int)n;
}

static size_t seg_header_bytes(void) {
    return (sizeof(struct seg) + 4095) & ~(size_t)4095;
}

/* Maps (rank 0: creates) the clique's segment and announces this rank. */
static ncclResult_t open_segment(struct comm *c) {
    size_t slot = (size_t)sbs_env_long("SCALEBENCH_STANDIN_SLOT_BYTES", 16L << 20);
    size_t bytes = seg_header_bytes() + (size_t)c->nranks * slot;
    int fd = -1;
    if (c->rank == 0) {
        fd = open(c->path, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return fail(N_SYSTEM, "scalebench stand-in: cannot create %s: %s", c->path, strerror(errno));
        if (ftruncate(fd, (off_t)bytes) != 0) {
            close(fd);
            return fail(N_SYSTEM, "scalebench stand-in: cannot size %s: %s", c->path, strerror(errno));
        }
        c->creator = 1;
    } else {
        double waited = 0;
        while ((fd = open(c->path, O_RDWR)) < 0) {
            if (waited > deadline_s())
                return fail(N_SYSTEM, "scalebench stand-in: rank 0 never created %s (waited %.0f s)", c->path, waited);
            usleep(2000);
            waited += 0.002;
        }
        struct stat st;
        do {
            if (fstat(fd, &st) != 0) {
                close(fd);
                return fail(N_SYSTEM, "scalebench stand-in: fstat %s: %s", c->path, strerror(errno));
            }
            if ((size_t)st.st_size < bytes)
                usleep(1000);
        } while ((size_t)st.st_size < seg_header_bytes());
        if ((size_t)st.st_size != bytes) {
            close(fd);
            sbs_die("ncclCommInitRank", "ranks disagree on SCALEBENCH_STANDIN_SLOT_BYTES (segment of %lld bytes, this rank expects %zu)",
                    (long long)st.st_size, bytes);
        }
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return fail(N_SYSTEM, "scalebench stand-in: mmap %s: %s", c->path, strerror(errno));
    c->h = p;
    c->data = (char *)p + seg_header_bytes();
    c->map_bytes = bytes;
    struct seg *h = c->h;
    if (c->rank == 0) {
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&h->mu, &ma);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_cond_init(&h->cv, &ca);
        h->nranks = (uint32_t)c->nranks;
        h->slot = slot;
        h->magic = SEG_MAGIC;
        __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
    } else {
        double waited = 0;
        while (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) {
            if (waited > deadline_s())
                return fail(N_SYSTEM, "scalebench stand-in: %s was never initialised by rank 0", c->path);
            usleep(1000);
            waited += 0.001;
        }
        if (h->magic != SEG_MAGIC || (int)h->nranks != c->nranks)
            sbs_die("ncclCommInitRank", "rank %d was told %d ranks, rank 0 %u", c->rank, c->nranks, h->nranks);
    }
    pthread_mutex_lock(&h->mu);
    h->joined++;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    c->opened = 1;
    return N_OK;
}

/* Waits until every rank mapped the segment; rank 0 then removes its name. */
static ncclResult_t join_segment(struct comm *c) {
    struct seg *h = c->h;
    struct timespec ts;
    abs_deadline(&ts);
    pthread_mutex_lock(&h->mu);
    while (h->joined < h->nranks) {
        if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT) {
            uint32_t j = h->joined;
            pthread_mutex_unlock(&h->mu);
            return fail(N_SYSTEM, "scalebench stand-in: only %u of %d ranks joined the communicator within %.0f s",
                        j, c->nranks, deadline_s());
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (c->creator)
        unlink(c->path);
    return N_OK;
}

static void free_comm(struct comm *c) {
    pthread_mutex_lock(&M);
    for (struct comm **pp = &g_comms; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    pthread_mutex_unlock(&M);
    if (c->h) {
        if (c->creator && c->h->joined < c->h->nranks)
            unlink(c->path);
        munmap(c->h, c->map_bytes);
    }
    c->magic = 0;
    free(c);
}

static int comms_of_token(uint64_t token) {
    int n = 0;
    pthread_mutex_lock(&M);
    for (struct comm *c = g_comms; c; c = c->next)
        n += c->token == token && c->magic == COMM_MAGIC;
    pthread_mutex_unlock(&M);
    return n;
}

SBS_EXPORT ncclResult_t ncclCommInitRank(struct comm **out, int nranks, ncclUniqueId id, int rank) {
    if (!out)
        return N_INVALID_ARGUMENT;
    *out = NULL;
    if (memcmp(id.internal, UID_MAGIC, 16) != 0)
        return fail(N_INVALID_ARGUMENT, "scalebench stand-in: the unique id did not come from this library's ncclGetUniqueId");
    if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
        return fail(N_INVALID_ARGUMENT, "rank %d of %d is outside 0..%d (the stand-in serves up to %d ranks)", rank, nranks, nranks - 1, MAXR);
    int dev = sbs_current_device();
    if (dev < 0)
        return fail(N_UNHANDLED_CUDA, "ncclCommInitRank: no current CUDA context");
    pthread_once(&g_tuning_once, tuning_init);
    if (g_tuning_err[0])
        return fail(N_INVALID_ARGUMENT, "scalebench stand-in (as NCCL %d): %s", version_code(), g_tuning_err);
    static pthread_once_t shown = PTHREAD_ONCE_INIT;
    pthread_once(&shown, show_version);
    if (sbs_fault("comm-init"))
        return fail(N_SYSTEM, "scalebench stand-in: fault injected by SCALEBENCH_STANDIN_FAULT=comm-init (as a real NCCL fails when its network or shared-memory transport cannot start)");
    struct comm *c = calloc(1, sizeof *c);
    if (!c)
        return N_SYSTEM;
    c->magic = COMM_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    c->dev = dev;
    memcpy(&c->token, id.internal + 16, 8);
    shm_path(c->token, c->path, sizeof c->path);
    if (t_depth == 0 && comms_of_token(c->token) > 0)
        sbs_die("ncclCommInitRank", "a second rank (%d) of one communicator initialised in this process outside ncclGroupStart/ncclGroupEnd: one thread initialising several ranks deadlocks in NCCL", rank);
    pthread_mutex_lock(&M);
    c->next = g_comms;
    g_comms = c;
    pthread_mutex_unlock(&M);
    *out = c;
    if (t_depth > 0) {
        if (t_ninits == t_capinits) {
            t_capinits = t_capinits ? 2 * t_capinits : 8;
            t_inits = realloc(t_inits, t_capinits * sizeof *t_inits);
            if (!t_inits)
                sbs_die("ncclCommInitRank", "out of host memory");
        }
        t_inits[t_ninits++] = c;
        return N_OK;
    }
    ncclResult_t r = open_segment(c);
    if (r == N_OK)
        r = join_segment(c);
    if (r != N_OK) {
        free_comm(c);
        *out = NULL;
    }
    return r;
}

static struct comm *check_comm(struct comm *c, const char *call) {
    int ok = 0;
    pthread_mutex_lock(&M);
    for (struct comm *x = g_comms; x; x = x->next)
        ok |= x == c;
    pthread_mutex_unlock(&M);
    if (!ok || c->magic != COMM_MAGIC)
        sbs_die(call, "%p is not a live communicator", (void *)c);
    return c;
}

static ncclResult_t release(struct comm *c, const char *call) {
    check_comm(c, call);
    /* peers waiting for this rank fail fast instead of hanging */
    if (c->h) {
        pthread_mutex_lock(&c->h->mu);
        c->h->failed = 1;
        pthread_cond_broadcast(&c->h->cv);
        pthread_mutex_unlock(&c->h->mu);
    }
    while (__atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE) > 0)
        usleep(1000);
    free_comm(c);
    return N_OK;
}

SBS_EXPORT ncclResult_t ncclCommAbort(struct comm *c) {
    if (!c)
        return N_OK;
    return release(c, "ncclCommAbort");
}


SBS_EXPORT ncclResult_t ncclCommGetAsyncError(struct comm *c, ncclResult_t *state) {
    check_comm(c, "ncclCommGetAsyncError");
    if (!state)
        return N_INVALID_ARGUMENT;
    *state = __atomic_load_n(&c->async_err, __ATOMIC_ACQUIRE);
    return N_OK;
}

/* ---------- rounds ---------- */
static int barrier(struct comm *c) {
    struct seg *h = c->h;
    struct timespec ts;
    abs_deadline(&ts);
    pthread_mutex_lock(&h->mu);
    if (h->failed) {
        pthread_mutex_unlock(&h->mu);
        return -1;
    }
    uint64_t gen = h->gen;
    if (++h->count == h->nranks) {
        h->count = 0;
        h->gen++;
        pthread_cond_broadcast(&h->cv);
    } else {
        while (h->gen == gen && !h->failed) {
            if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT) {
                h->failed = 1;
                pthread_cond_broadcast(&h->cv);
            }
        }
    }
    int r = h->gen == gen ? -1 : 0;
    pthread_mutex_unlock(&h->mu);
    return r;
}

static const char *tname(int t) {
    switch (t) {
    case T_I32: return "ncclInt32";
    case T_F16: return "ncclFloat16";
    case T_F32: return "ncclFloat32";
    case T_F64: return "ncclFloat64";
    case T_BF16: return "ncclBfloat16";
    default: return "?";
    }
}

static void check_round(struct comm *c, const struct desc *me) {
    for (int r = 0; r < c->nranks; r++) {
        const struct desc *o = &c->h->desc[r];
        int same = o->kind == me->kind && (me->kind == K_P2P ||
                   (o->count == me->count && o->dtype == me->dtype &&
                    (o->op == me->op || me->kind == K_BCAST || me->kind == K_ALLGATHER) &&
                    (o->root == me->root || (me->kind != K_REDUCE && me->kind != K_BCAST))));
        if (!same)
            sbs_die(KIND[me->kind],
                    "rank %d issued %s(count %zu, %s, op %d, root %d) while rank %d issued %s(count %zu, %s, op %d, root %d) in the same round: every rank must issue the same collectives, counts, types, operators and roots in the same order",
                    c->rank, KIND[me->kind], me->count, tname(me->dtype), me->op, me->root, r,
                    KIND[o->kind], o->count, tname(o->dtype), o->op, o->root);
    }
}

/* ---- element arithmetic in the element type ---- */
static float bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double get(const void *p, size_t i, int t) {
    switch (t) {
    case T_I32: return ((const int32_t *)p)[i];
    case T_F32: return ((const float *)p)[i];
    case T_F64: return ((const double *)p)[i];
    case T_F16: return (double)((const _Float16 *)p)[i];
    default: return bf16_to_f(((const uint16_t *)p)[i]);
    }
}
static void put(void *p, size_t i, int t, double v) {
    switch (t) {
    case T_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case T_F32: ((float *)p)[i] = (float)v; break;
    case T_F64: ((double *)p)[i] = v; break;
    case T_F16: ((_Float16 *)p)[i] = (_Float16)(float)v; break;
    default: ((uint16_t *)p)[i] = f_to_bf16((float)v); break;
    }
}
/* The value as the element type holds it (one rounding). */
static double round_t(double v, int t) {
    char b[8];
    put(b, 0, t, v);
    return get(b, 0, t);
}

static int32_t ired(int32_t a, int32_t b, int op) {
    switch (op) {
    case O_PROD: return (int32_t)((uint32_t)a * (uint32_t)b);
    case O_MAX: return a > b ? a : b;
    case O_MIN: return a < b ? a : b;
    default: return (int32_t)((uint32_t)a + (uint32_t)b);
    }
}

/* out[i] = op over ranks of src[r][first + i], rank order; avg as NCCL computes it: floats
 * pre-multiplied by fl(1/n) and summed, integers summed then divided. */
static void reduce(void *out, char *const *src, size_t first, size_t count, int n, int t, int op) {
    for (size_t i = 0; i < count; i++) {
        if (t == T_I32) {
            int32_t acc = ((const int32_t *)src[0])[first + i];
            for (int r = 1; r < n; r++)
                acc = ired(acc, ((const int32_t *)src[r])[first + i], op);
            if (op == O_AVG)
                acc = (int32_t)(acc / n);
            ((int32_t *)out)[i] = acc;
            continue;
        }
        double scale = round_t(1.0 / n, t);
        double acc = 0;
        for (int r = 0; r < n; r++) {
            double x = get(src[r], first + i, t);
            if (op == O_AVG)
                x = round_t(x * scale, t);
            if (r == 0) {
                acc = x;
                continue;
            }
            switch (op) {
            case O_PROD: acc = round_t(acc * x, t); break;
            case O_MAX: acc = x > acc ? x : acc; break;
            case O_MIN: acc = x < acc ? x : acc; break;
            default: acc = round_t(acc + x, t); break;
            }
        }
        put(out, i, t, acc);
    }
}

/* The planted defect: one element far from what it should be. */
static void maybe_corrupt(void *out, size_t count, int t) {
    const char *d = getenv("SCALEBENCH_STANDIN_DEFECT");
    if (!d || strcmp(d, "corrupt") != 0 || count == 0)
        return;
    size_t i = count / 2;
    double v = get(out, i, t);
    put(out, i, t, v + fabs(v) * 0.5 + 1.0);
}

struct task {
    struct comm *comm;
    size_t n;
    struct call calls[];
};

static void run_collective(struct comm *c, const struct call *k) {
    const char *name = KIND[k->kind];
    int n = c->nranks, me = c->rank;
    size_t es = tsize(k->dtype);
    char *slot = c->data + (size_t)me * c->h->slot;
    /* inputs are read when the round runs: queued writes to them came first */
    if (k->send_bytes) {
        const void *in = sbs_translate(k->send, k->send_bytes, c->dev, name, "send buffer");
        memcpy(slot, in, k->send_bytes);
    }
    /* the scale lets a test make the modelled differences dwarf the CPU's own noise */
    sleep_us(cost_us(k->algo, k->proto, k->count * es) * (double)sbs_env_long("SCALEBENCH_STANDIN_NCCL_COST_SCALE", 1));
    struct desc d = {k->kind, k->dtype, k->op, k->root, k->count};
    c->h->desc[me] = d;
    if (barrier(c) != 0) {
        __atomic_store_n(&c->async_err, N_REMOTE, __ATOMIC_RELEASE);
        fail(N_REMOTE, "scalebench stand-in: %s on rank %d: a peer left, failed or did not arrive within %.0f s", name, me, deadline_s());
        return;
    }
    check_round(c, &d);
    char *src[MAXR];
    for (int r = 0; r < n; r++)
        src[r] = c->data + (size_t)r * c->h->slot;
    void *out = k->recv_bytes ? sbs_translate(k->recv, k->recv_bytes, c->dev, name, "receive buffer") : NULL;
    size_t out_count = 0;
    switch (k->kind) {
    case K_ALLREDUCE:
        reduce(out, src, 0, k->count, n, k->dtype, k->op);
        out_count = k->count;
        break;
    case K_REDUCE:
        if (me == k->root) {
            reduce(out, src, 0, k->count, n, k->dtype, k->op);
            out_count = k->count;
        }
        break;
    case K_BCAST:
        memcpy(out, src[k->root], k->count * es);
        out_count = k->count;
        break;
    case K_ALLGATHER:
        for (int r = 0; r < n; r++)
            memcpy((char *)out + (size_t)r * k->count * es, src[r], k->count * es);
        out_count = k->count * (size_t)n;
        break;
    case K_REDUCESCATTER:
        reduce(out, src, (size_t)me * k->count, k->count, n, k->dtype, k->op);
        out_count = k->count;
        break;
    }
    if (out)
        maybe_corrupt(out, out_count, k->dtype);
    if (barrier(c) != 0) {
        __atomic_store_n(&c->async_err, N_REMOTE, __ATOMIC_RELEASE);
        fail(N_REMOTE, "scalebench stand-in: %s on rank %d: a peer left or failed", name, me);
    }
}

/* Point-to-point synchronises only the ranks that exchange, as NCCL's send/recv involve only
 * the peers (a full barrier would hang every pair whose other ranks sit idle, e.g. an isolated
 * pair): each rank counts its arrivals per peer and waits until each peer of this group has
 * arrived as often. 0, or -1 when a peer left, failed or did not come in time. */
static int pair_sync(struct comm *c, const int *peers, int npeers) {
    struct seg *h = c->h;
    int me = c->rank;
    struct timespec ts;
    abs_deadline(&ts);
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < npeers; i++)
        h->arrivals[me][peers[i]]++;
    pthread_cond_broadcast(&h->cv);
    int ok = !h->failed;
    for (int i = 0; i < npeers && ok; i++) {
        int p = peers[i];
        while (h->arrivals[p][me] < h->arrivals[me][p] && !h->failed) {
            if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT) {
                h->failed = 1;
                pthread_cond_broadcast(&h->cv);
            }
        }
        ok = h->arrivals[p][me] >= h->arrivals[me][p];
    }
    pthread_mutex_unlock(&h->mu);
    return ok ? 0 : -1;
}

static void run_p2p(struct comm *c, const struct call *calls, size_t ncalls) {
    int me = c->rank;
    char *slot = c->data + (size_t)me * c->h->slot;
    size_t off = 0;
    uint32_t nd = 0;
    for (size_t i = 0; i < ncalls; i++) {
        const struct call *k = &calls[i];
        if (k->kind != K_SEND)
            continue;
        if (k->send_bytes) {
            const void *in = sbs_translate(k->send, k->send_bytes, c->dev, "ncclSend", "send buffer");
            memcpy(slot + off, in, k->send_bytes);
        }
        c->h->dir[me][nd++] = (struct dirent_){k->peer, off, k->send_bytes};
        off += k->send_bytes;
    }
    c->h->ndir[me] = nd;
    struct desc d = {K_P2P, 0, 0, 0, 0};
    c->h->desc[me] = d;
    /* the group's peers, each once */
    int peers[MAXR] = {0}, np = 0, in[MAXR] = {0};
    for (size_t i = 0; i < ncalls; i++) {
        int p = calls[i].peer;
        if ((calls[i].kind == K_SEND || calls[i].kind == K_RECV) && !in[p]) {
            in[p] = 1;
            peers[np++] = p;
        }
    }
    if (pair_sync(c, peers, np) != 0) {
        __atomic_store_n(&c->async_err, N_REMOTE, __ATOMIC_RELEASE);
        fail(N_REMOTE, "scalebench stand-in: ncclSend/ncclRecv on rank %d: a peer left, failed or did not arrive", me);
        return;
    }
    for (int i = 0; i < np; i++)
        if (c->h->desc[peers[i]].kind != K_P2P)
            sbs_die("ncclSend/ncclRecv", "rank %d exchanges with rank %d, which issued %s in the same round: a peer's matching ncclSend/ncclRecv must come in the same order", me, peers[i], KIND[c->h->desc[peers[i]].kind]);
    int seen[MAXR] = {0};
    for (size_t i = 0; i < ncalls; i++) {
        const struct call *k = &calls[i];
        if (k->kind != K_RECV)
            continue;
        int p = k->peer, want = seen[p]++, found = -1;
        for (uint32_t j = 0, m = 0; j < c->h->ndir[p]; j++)
            if (c->h->dir[p][j].peer == me && m++ == (uint32_t)want) {
                found = (int)j;
                break;
            }
        if (found < 0)
            sbs_die("ncclRecv", "rank %d receives message %d from rank %d, which sent it only %d in this group", me, want + 1, p, want);
        const struct dirent_ *e = &c->h->dir[p][found];
        if (e->bytes != k->recv_bytes)
            sbs_die("ncclRecv", "rank %d receives %zu bytes from rank %d, which sent %zu", me, k->recv_bytes, p, e->bytes);
        if (k->recv_bytes) {
            void *outp = sbs_translate(k->recv, k->recv_bytes, c->dev, "ncclRecv", "receive buffer");
            memcpy(outp, c->data + (size_t)p * c->h->slot + e->off, e->bytes);
            maybe_corrupt(outp, k->count, k->dtype);
        }
    }
    /* senders reuse their slot only after every receiver has read it */
    if (pair_sync(c, peers, np) != 0) {
        __atomic_store_n(&c->async_err, N_REMOTE, __ATOMIC_RELEASE);
        fail(N_REMOTE, "scalebench stand-in: ncclSend/ncclRecv on rank %d: a peer left or failed", me);
    }
}

static void run_task(void *p) {
    struct task *t = p;
    struct comm *c = t->comm;
    int p2p = 0;
    if (!__atomic_load_n(&c->async_err, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < t->n; i++) {
            if (t->calls[i].kind == K_SEND || t->calls[i].kind == K_RECV)
                p2p = 1;
            else
                run_collective(c, &t->calls[i]);
        }
        if (p2p)
            run_p2p(c, t->calls, t->n);
    }
    __atomic_sub_fetch(&c->inflight, 1, __ATOMIC_RELEASE);
    free(t);
}

static void launch(struct comm *c, const struct call *calls, size_t n, const char *name) {
    struct task *t = malloc(sizeof *t + n * sizeof *calls);
    if (!t)
        sbs_die(name, "out of host memory");
    t->comm = c;
    t->n = n;
    memcpy(t->calls, calls, n * sizeof *calls);
    __atomic_add_fetch(&c->inflight, 1, __ATOMIC_ACQ_REL);
    sbs_enqueue(calls[0].stream, run_task, t, name, 0);
}

static int overlaps(sbs_devptr a, size_t an, sbs_devptr b, size_t bn) {
    return an && bn && a < b + bn && b < a + an;
}

/* Checks one call, then runs it (outside a group) or keeps it for ncclGroupEnd. */
static ncclResult_t issue(struct call k) {
    const char *name = KIND[k.kind];
    struct comm *c = check_comm(k.comm, name);
    size_t es = tsize(k.dtype);
    if (!es)
        return fail(N_INVALID_ARGUMENT, "%s: data type %d is not one the stand-in models (int32, float16, float32, float64, bfloat16)", name, k.dtype);
    if (k.op < O_SUM || k.op > O_AVG)
        return fail(N_INVALID_ARGUMENT, "%s: reduction operator %d is invalid", name, k.op);
    int n = c->nranks, me = c->rank;
    if ((k.kind == K_REDUCE || k.kind == K_BCAST) && (k.root < 0 || k.root >= n))
        return fail(N_INVALID_ARGUMENT, "%s: root %d is not a rank of %d", name, k.root, n);
    if ((k.kind == K_SEND || k.kind == K_RECV) && (k.peer < 0 || k.peer >= n))
        return fail(N_INVALID_ARGUMENT, "%s: peer %d is not a rank of %d", name, k.peer, n);
    if (sbs_stream_device(k.stream, name) != c->dev)
        sbs_die(name, "a stream of device %d given to the communicator of device %d", sbs_stream_device(k.stream, name), c->dev);
    size_t cnt = k.count;
    switch (k.kind) {
    case K_ALLREDUCE: k.send_bytes = k.recv_bytes = cnt * es; break;
    case K_REDUCE: k.send_bytes = cnt * es; k.recv_bytes = me == k.root ? cnt * es : 0; break;
    case K_BCAST: k.send_bytes = me == k.root ? cnt * es : 0; k.recv_bytes = cnt * es; break;
    case K_ALLGATHER: k.send_bytes = cnt * es; k.recv_bytes = cnt * es * (size_t)n; break;
    case K_REDUCESCATTER: k.send_bytes = cnt * es * (size_t)n; k.recv_bytes = cnt * es; break;
    case K_SEND: k.send_bytes = cnt * es; k.recv_bytes = 0; break;
    case K_RECV: k.send_bytes = 0; k.recv_bytes = cnt * es; break;
    }
    if (k.send_bytes)
        sbs_translate(k.send, k.send_bytes, c->dev, name, "send buffer");
    if (k.recv_bytes)
        sbs_translate(k.recv, k.recv_bytes, c->dev, name, "receive buffer");
    /* NCCL's in-place rules: one pointer for allreduce/reduce/broadcast, send = recv +
     * rank·count for allgather, recv = send + rank·count for reduce_scatter; any other overlap
     * is a race */
    if (overlaps(k.send, k.send_bytes, k.recv, k.recv_bytes)) {
        sbs_devptr want = k.recv;
        const char *rule = "sendbuff == recvbuff";
        if (k.kind == K_ALLGATHER) {
            want = k.recv + (sbs_devptr)me * cnt * es;
            rule = "sendbuff == recvbuff + rank*sendcount";
        } else if (k.kind == K_REDUCESCATTER) {
            want = k.send + (sbs_devptr)me * cnt * es;
            rule = "recvbuff == sendbuff + rank*recvcount";
        }
        sbs_devptr got = k.kind == K_REDUCESCATTER ? k.recv : k.send;
        if (k.kind == K_SEND || k.kind == K_RECV || got != want)
            sbs_die(name, "send buffer 0x%llx and receive buffer 0x%llx overlap without following NCCL's in-place rule (%s, rank %d)",
                    (unsigned long long)k.send, (unsigned long long)k.recv, rule, me);
    }
    if (cnt * es * (k.kind == K_REDUCESCATTER ? (size_t)n : 1) > c->h->slot)
        return fail(N_INVALID_USAGE, "%s of %zu bytes exceeds the stand-in's shared-memory slot of %zu bytes: raise SCALEBENCH_STANDIN_SLOT_BYTES", name, cnt * es, c->h->slot);
    if (sbs_fault("collective"))
        return fail(N_SYSTEM, "scalebench stand-in: fault injected by SCALEBENCH_STANDIN_FAULT=collective (as a real NCCL fails when a peer or the network fails)");
    if (k.kind < NFUNC) {
        if (choose(k.kind, cnt * es, &k.algo, &k.proto) != 0) {
            const char *a = getenv("NCCL_ALGO"), *p = getenv("NCCL_PROTO");
            return fail(N_INVALID_USAGE, "Error : no algorithm/protocol available for function %s with datatype %s. NCCL_ALGO was set to %s. NCCL_PROTO was set to %s.",
                        FUNC_LOG[k.kind], tname(k.dtype), a ? a : "(unset)", p ? p : "(unset)");
        }
        info(S_COLL, c->dev, "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
             FUNC_LOG[k.kind], (unsigned long long)c->opcount++, (void *)(uintptr_t)k.send, (void *)(uintptr_t)k.recv, cnt, k.dtype,
             k.op, k.root, (void *)c, n, k.stream);
        log_choice(c, k.kind, cnt, es, k.algo, k.proto);
    }
    if (t_depth > 0) {
        if (t_ncalls == t_capcalls) {
            t_capcalls = t_capcalls ? 2 * t_capcalls : 16;
            t_calls = realloc(t_calls, t_capcalls * sizeof *t_calls);
            if (!t_calls)
                sbs_die(name, "out of host memory");
        }
        t_calls[t_ncalls++] = k;
        return N_OK;
    }
    if (comms_of_token(c->token) > 1)
        sbs_die(name, "issued outside ncclGroupStart/ncclGroupEnd while this process holds %d ranks of the communicator: one thread driving several GPUs deadlocks in NCCL unless their calls are grouped",
                comms_of_token(c->token));
    if (k.kind == K_SEND || k.kind == K_RECV)
        sbs_die(name, "point-to-point calls must be grouped (the stand-in exchanges them in one round per group)");
    launch(c, &k, 1, name);
    return N_OK;
}

SBS_EXPORT ncclResult_t ncclGroupStart(void) {
    t_depth++;
    return N_OK;
}

SBS_EXPORT ncclResult_t ncclGroupEnd(void) {
    if (t_depth <= 0)
        return fail(N_INVALID_USAGE, "ncclGroupEnd without ncclGroupStart");
    if (--t_depth > 0)
        return N_OK;
    ncclResult_t r = N_OK;
    for (size_t i = 0; i < t_ninits; i++) {
        ncclResult_t x = open_segment(t_inits[i]);
        if (x != N_OK && r == N_OK)
            r = x;
    }
    for (size_t i = 0; i < t_ninits && r == N_OK; i++)
        r = join_segment(t_inits[i]);
    t_ninits = 0;
    /* one task per communicator, in the order they first appear */
    size_t n = t_ncalls;
    t_ncalls = 0;
    char *done = calloc(n ? n : 1, 1);
    struct call *batch = malloc((n ? n : 1) * sizeof *batch);
    if (!done || !batch)
        sbs_die("ncclGroupEnd", "out of host memory");
    for (size_t i = 0; i < n && r == N_OK; i++) {
        if (done[i])
            continue;
        size_t m = 0;
        for (size_t j = i; j < n; j++) {
            if (done[j] || t_calls[j].comm != t_calls[i].comm)
                continue;
            if (t_calls[j].stream != t_calls[i].stream)
                sbs_die("ncclGroupEnd", "one communicator's calls in a group use two streams");
            batch[m++] = t_calls[j];
            done[j] = 1;
        }
        launch(t_calls[i].comm, batch, m, "ncclGroupEnd");
    }
    free(done);
    free(batch);
    return r;
}

/* ---------- the collectives ---------- */
SBS_EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, int t, int op, struct comm *c, void *stream) {
    return issue((struct call){K_ALLREDUCE, t, op, 0, 0, count, (sbs_devptr)(uintptr_t)s, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, int t, int op, int root, struct comm *c, void *stream) {
    return issue((struct call){K_REDUCE, t, op, root, 0, count, (sbs_devptr)(uintptr_t)s, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, int t, int root, struct comm *c, void *stream) {
    return issue((struct call){K_BCAST, t, O_SUM, root, 0, count, (sbs_devptr)(uintptr_t)s, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, int t, struct comm *c, void *stream) {
    return issue((struct call){K_ALLGATHER, t, O_SUM, 0, 0, count, (sbs_devptr)(uintptr_t)s, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, int t, int op, struct comm *c, void *stream) {
    return issue((struct call){K_REDUCESCATTER, t, op, 0, 0, count, (sbs_devptr)(uintptr_t)s, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclSend(const void *s, size_t count, int t, int peer, struct comm *c, void *stream) {
    return issue((struct call){K_SEND, t, O_SUM, 0, peer, count, (sbs_devptr)(uintptr_t)s, 0, 0, 0, c, stream, 0, 0});
}
SBS_EXPORT ncclResult_t ncclRecv(void *r, size_t count, int t, int peer, struct comm *c, void *stream) {
    return issue((struct call){K_RECV, t, O_SUM, 0, peer, count, 0, (sbs_devptr)(uintptr_t)r, 0, 0, c, stream, 0, 0});
}
