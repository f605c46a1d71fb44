/* The GEMM arithmetic of the stand-in BLAS libraries (libcublas.so from cublas.c,
 * librocblas.so from rocblas.c): a column-major strided-batched GEMM with optional
 * transposes, f32/f64/f16/bf16 elements and f32, TF32 or f64 accumulation, run on a stream
 * thread of the stand-in driver; the argument checks both libraries make; and the planted
 * defect SCALEBENCH_STANDIN_DEFECT=gemm (one element of every product wrong, so validation
 * must fail). Each library maps its own type, compute and status codes onto these. CPU test
 * doubles: no number they produce is a GPU's. */
#ifndef SCALEBENCH_STANDIN_GEMM_ARITH_H
#define SCALEBENCH_STANDIN_GEMM_ARITH_H

#include "standin.h"

/* Element types. */
enum { SBS_G_F32, SBS_G_F64, SBS_G_F16, SBS_G_BF16 };
/* Accumulation: f32, f32 with TF32 inputs, f64. */
enum { SBS_ACC_F32, SBS_ACC_TF32, SBS_ACC_F64 };
/* What a submission returns; each library maps it onto its status codes. */
enum { SBS_GEMM_OK, SBS_GEMM_INVALID, SBS_GEMM_NOT_SUPPORTED, SBS_GEMM_NO_MEMORY };

/* One call, in the library's (column-major) terms. */
struct sbs_gemm {
    const char *call;
    int ta, tb, m, n, k, lda, ldb, ldc, batch, type, acc;
    long long sa, sb, sc;
    double alpha, beta;
    sbs_devptr a, b, c;
    size_t abytes, bbytes, cbytes;
    int dev;
};

/* ---- element conversions (round to nearest even, as the hardware converts) ---- */
SBS_FN float sbs_bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
SBS_FN uint16_t sbs_f_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
SBS_FN float sbs_tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0xfffu + ((u >> 13) & 1u);
        u &= ~0x1fffu;
    }
    memcpy(&f, &u, 4);
    return f;
}

SBS_FN double sbs_gemm_load(const void *p, size_t i, int t) {
    switch (t) {
    case SBS_G_F32: return ((const float *)p)[i];
    case SBS_G_F64: return ((const double *)p)[i];
    case SBS_G_F16: return (double)((const _Float16 *)p)[i];
    default: return sbs_bf16_to_f(((const uint16_t *)p)[i]);
    }
}
SBS_FN void sbs_gemm_store(void *p, size_t i, int t, double v) {
    switch (t) {
    case SBS_G_F32: ((float *)p)[i] = (float)v; break;
    case SBS_G_F64: ((double *)p)[i] = v; break;
    case SBS_G_F16: ((_Float16 *)p)[i] = (_Float16)(float)v; break;
    default: ((uint16_t *)p)[i] = sbs_f_to_bf16((float)v); break;
    }
}

SBS_FN size_t sbs_gemm_elem_size(int t) {
    return t == SBS_G_F64 ? 8 : t == SBS_G_F32 ? 4 : 2;
}

/* Elements a column-major operand spans: `batch` matrices `stride` apart. */
SBS_FN size_t sbs_gemm_span(int rows, int cols, int ld, long long stride, int batch) {
    if (rows == 0 || cols == 0)
        return 0;
    size_t one = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    return one + (size_t)stride * (size_t)(batch - 1);
}

/* The planted defect: one element of the product far from what it should be — its first, a
 * corner, which even a sampled check (batch_matmul's) always looks at. */
SBS_FN void sbs_gemm_maybe_corrupt(void *C, const struct sbs_gemm *g) {
    const char *d = getenv("SCALEBENCH_STANDIN_DEFECT");
    if (!d || strcmp(d, "gemm") != 0)
        return;
    double v = sbs_gemm_load(C, 0, g->type);
    sbs_gemm_store(C, 0, g->type, v + (v < 0 ? -v : v) * 0.5 + 1.0);
}

/* Runs the call on the stream thread (everything queued before it has run), then frees it. */
SBS_FN void sbs_gemm_run(void *p) {
    struct sbs_gemm *g = p;
    const char *call = g->call;
    const void *A = sbs_translate(g->a, g->abytes, g->dev, call, "A");
    const void *B = sbs_translate(g->b, g->bbytes, g->dev, call, "B");
    void *C = sbs_translate(g->c, g->cbytes, g->dev, call, "C");
    int dbl = g->acc == SBS_ACC_F64;
    int t32 = g->acc == SBS_ACC_TF32;
    double *acc = malloc(sizeof(double) * (size_t)(g->m > 0 ? g->m : 1));
    float *accf = malloc(sizeof(float) * (size_t)(g->m > 0 ? g->m : 1));
    if (!acc || !accf)
        sbs_die(call, "out of host memory");
    for (int bi = 0; bi < g->batch; bi++) {
        size_t oa = (size_t)(g->sa * bi), ob = (size_t)(g->sb * bi), oc = (size_t)(g->sc * bi);
        for (int j = 0; j < g->n; j++) {
            for (int i = 0; i < g->m; i++) {
                acc[i] = 0;
                accf[i] = 0;
            }
            for (int l = 0; l < g->k; l++) {
                size_t bidx = g->tb ? (size_t)j + (size_t)l * g->ldb : (size_t)l + (size_t)j * g->ldb;
                double bv = sbs_gemm_load(B, ob + bidx, g->type);
                for (int i = 0; i < g->m; i++) {
                    size_t aidx = g->ta ? (size_t)l + (size_t)i * g->lda : (size_t)i + (size_t)l * g->lda;
                    double av = sbs_gemm_load(A, oa + aidx, g->type);
                    if (dbl) {
                        acc[i] += av * bv;
                    } else if (t32) {
                        accf[i] += sbs_tf32((float)av) * sbs_tf32((float)bv);
                    } else {
                        accf[i] += (float)av * (float)bv;
                    }
                }
            }
            for (int i = 0; i < g->m; i++) {
                size_t ci = oc + (size_t)i + (size_t)j * g->ldc;
                double s = dbl ? acc[i] : (double)accf[i];
                double old = g->beta != 0 ? sbs_gemm_load(C, ci, g->type) : 0;
                double v = dbl ? g->alpha * s + g->beta * old
                               : (double)((float)g->alpha * (float)s + (float)g->beta * (float)old);
                sbs_gemm_store(C, ci, g->type, v);
            }
        }
        sbs_gemm_maybe_corrupt((char *)C + oc * sbs_gemm_elem_size(g->type), g);
    }
    free(acc);
    free(accf);
    free(g);
}

/* Checks the call's sizes (what both libraries refuse as an invalid value), the operands
 * against the driver's memory table and C against A and B (contract violations), then
 * enqueues it on `stream`. `x` has every field but the byte spans and `dev`; `dev` must be
 * current. */
SBS_FN int sbs_gemm_submit(const struct sbs_gemm *x, int dev, void *stream) {
    const char *call = x->call;
    if (x->m < 0 || x->n < 0 || x->k < 0 || x->batch < 0 || x->sa < 0 || x->sb < 0 || x->sc < 0)
        return SBS_GEMM_INVALID;
    int arows = x->ta ? x->k : x->m, acols = x->ta ? x->m : x->k;
    int brows = x->tb ? x->n : x->k, bcols = x->tb ? x->k : x->n;
    if (x->lda < (arows > 1 ? arows : 1) || x->ldb < (brows > 1 ? brows : 1) ||
        x->ldc < (x->m > 1 ? x->m : 1))
        return SBS_GEMM_INVALID;
    if (x->m == 0 || x->n == 0 || x->batch == 0)
        return SBS_GEMM_OK;
    struct sbs_gemm *g = calloc(1, sizeof *g);
    if (!g)
        return SBS_GEMM_NO_MEMORY;
    *g = *x;
    size_t es = sbs_gemm_elem_size(x->type);
    g->abytes = x->k == 0 ? 0 : es * sbs_gemm_span(arows, acols, x->lda, x->sa, x->batch);
    g->bbytes = x->k == 0 ? 0 : es * sbs_gemm_span(brows, bcols, x->ldb, x->sb, x->batch);
    g->cbytes = es * sbs_gemm_span(x->m, x->n, x->ldc, x->sc, x->batch);
    g->dev = dev;
    sbs_translate(g->a, g->abytes, dev, call, "A");
    sbs_translate(g->b, g->bbytes, dev, call, "B");
    char *cp = sbs_translate(g->c, g->cbytes, dev, call, "C");
    const char *ap = sbs_translate(g->a, 0, dev, call, "A");
    const char *bp = sbs_translate(g->b, 0, dev, call, "B");
    if ((ap < cp + g->cbytes && cp < ap + g->abytes) || (bp < cp + g->cbytes && cp < bp + g->bbytes))
        sbs_die(call, "C overlaps A or B: the library writes C while it reads them");
    sbs_enqueue(stream, sbs_gemm_run, g, call, 1);
    return SBS_GEMM_OK;
}

#endif
