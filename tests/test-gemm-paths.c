/*
 * test-gemm-paths.c - every SIMD path of the CPU plugin's GEMM against the
 * portable path and against a double-precision reference, on the same
 * inputs: odd sizes with tails in every direction, f32/f16/bf16 operands,
 * transposed and strided layouts, the few-rows dot path, a static grid of
 * thread tiles and team mode on real threads.  Links the plugin's gemm
 * sources directly (the test hook is cpu_simd_force_level); also checks
 * GGMLC_CPU_PATH and the feature detection against /proc/cpuinfo.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "ggml-impl.h"
#include "testutil.h"

/* A matrix of `rows` x k values stored with the given layout and type. */
struct test_operand {
    struct cpu_gemm_operand op;
    float *values; /* the exact values (after rounding to the type), row-major rows x k */
    void *storage;
};

static void make_operand(struct test_operand *t, int64_t rows, int64_t k, enum ggml_type type, bool transposed,
                         int64_t pad) {
    const size_t es = ggml_type_size(type);
    /* row-major with padded rows, or k-major ("transposed view") with padded columns */
    const int64_t lead = (transposed ? rows : k) + pad, outer = transposed ? k : rows;
    t->storage = calloc((size_t)(lead * outer + 1), es);
    t->values = malloc((size_t)(rows * k + 1) * sizeof(float));
    t->op = (struct cpu_gemm_operand){t->storage, type, transposed ? es : (size_t)lead * es,
                                      transposed ? (size_t)lead * es : es, NULL};
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < k; i++) {
            float v = test_uniform(-2.0f, 2.0f);
            char *p = (char *)t->storage + r * t->op.row_stride + i * t->op.k_stride;
            if (type == GGML_TYPE_F16) {
                *(ggml_fp16_t *)p = ggmlc_fp32_to_fp16(v);
                v = ggmlc_fp16_to_fp32(*(ggml_fp16_t *)p);
            } else if (type == GGML_TYPE_BF16) {
                *(ggml_bf16_t *)p = ggmlc_fp32_to_bf16(v);
                v = ggmlc_bf16_to_fp32(*(ggml_bf16_t *)p);
            } else {
                *(float *)p = v;
            }
            t->values[r * k + i] = v;
        }
}

/* Rows of k values quantized to type (rows contiguous); values get what the blocks hold. */
static void make_quantized_operand(struct test_operand *t, int64_t rows, int64_t k, enum ggml_type type) {
    const size_t row_size = ggml_row_size(type, k);
    t->storage = malloc(row_size * (size_t)rows + 1);
    t->values = malloc((size_t)(rows * k + 1) * sizeof(float));
    for (int64_t i = 0; i < rows * k; i++) t->values[i] = test_uniform(-2.0f, 2.0f);
    ggml_quantize_chunk(type, t->values, t->storage, 0, rows, k, NULL);
    ggml_get_type_traits(type)->to_float(t->storage, t->values, rows * k);
    t->op = (struct cpu_gemm_operand){t->storage, type, row_size, 0, ggml_get_type_traits(type)->to_float};
}

static void free_operand(struct test_operand *t) {
    free(t->storage);
    free(t->values);
}

struct thread_arg {
    const struct cpu_gemm_kernel *kern;
    const struct cpu_gemm_problem *p;
    struct ggmlc_op_call call;
    void *shared, *work;
};

static void test_barrier(const struct ggmlc_op_call *call) {
    pthread_barrier_wait(call->impl);
}

/* One thread of the node, as the plugin's mul_mat runs it: team mode for large products. */
static void *run_thread(void *arg) {
    struct thread_arg *t = arg;
    if (cpu_gemm_use_team(t->kern, t->p, t->call.nth)) cpu_gemm_compute_team(t->kern, t->p, &t->call, t->shared, t->work);
    else cpu_gemm_compute(t->kern, t->p, t->call.ith, t->call.nth, t->work);
    return NULL;
}

/* Run the product with the kernels of `level` on nth threads. */
static void run_path(enum cpu_simd_level level, const struct cpu_gemm_problem *problem, int nth) {
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel_for(level);
    struct cpu_gemm_problem local = *problem; /* quantized weights: this path's dequantizer */
    if (local.w.dequant) local.w.dequant = cpu_gemm_dequant_fn(kern, local.w.type);
    const struct cpu_gemm_problem *p = &local;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)nth);
    void *shared = malloc(cpu_gemm_team_shared(kern, p->n, p->m, p->k));
    struct thread_arg args[8];
    pthread_t threads[8];
    for (int i = 0; i < nth; i++) {
        args[i] = (struct thread_arg){kern, p, {.ith = i, .nth = nth, .barrier = test_barrier, .impl = &barrier}, shared,
                                      malloc(cpu_gemm_thread_work(kern, p->m, p->k))};
        if (i > 0) pthread_create(&threads[i], NULL, run_thread, &args[i]);
    }
    run_thread(&args[0]);
    for (int i = 1; i < nth; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < nth; i++) free(args[i].work);
    free(shared);
    pthread_barrier_destroy(&barrier);
}

struct test_case {
    int64_t n, m, k;
    enum ggml_type wtype, xtype;
    bool w_transposed, x_transposed;
    int nth;
    int zeros; /* F32 only: 1: causal zero runs (x row i zero past depth i, w row j before depth j); 2: the
                * same with w's row 0 infinite at the last depth, where most x rows are zero (NaN) */
};

/* Value (r, i) of an f32 operand of depth k, in its storage and its exact values. */
static void set_value(struct test_operand *t, int64_t r, int64_t i, int64_t k, float v) {
    *(float *)((char *)t->storage + r * t->op.row_stride + i * t->op.k_stride) = v;
    t->values[r * k + i] = v;
}

/* Attention's zero runs along k: x row i (a query's probabilities) zero past depth i, w row j
 * zero before depth j; with_inf: an infinity in w where x is zero, which must give NaN. */
static void make_zero_runs(struct test_operand *w, struct test_operand *x, const struct test_case *c) {
    for (int64_t r = 0; r < c->m; r++)
        for (int64_t i = r + 1; i < c->k; i++) set_value(x, r, i, c->k, 0.0f);
    for (int64_t r = 0; r < c->n; r++)
        for (int64_t i = 0; i < r && i < c->k; i++) set_value(w, r, i, c->k, 0.0f);
    if (c->zeros == 2) set_value(w, 0, c->k - 1, c->k, INFINITY);
}

/* Squared difference of two results where NaN must meet NaN and an infinity the same one
 * (counted as infinite otherwise). */
static double diff2(double a, double b) {
    if (a == b) return 0.0;
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) return isnan(a) && isnan(b) ? 0.0 : INFINITY;
    return (a - b) * (a - b);
}

static void check_case(const struct test_case *c) {
    struct test_operand w, x;
    if (ggml_is_quantized(c->wtype)) make_quantized_operand(&w, c->n, c->k, c->wtype);
    else make_operand(&w, c->n, c->k, c->wtype, c->w_transposed, 3);
    make_operand(&x, c->m, c->k, c->xtype, c->x_transposed, 5);
    if (c->zeros) make_zero_runs(&w, &x, c);
    const int64_t ldc = c->n + 2; /* a padded output exercises dst_stride */
    const size_t out_count = (size_t)(ldc * c->m);
    double *ref = malloc(out_count * sizeof(double) + 8);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0;
            for (int64_t q = 0; q < c->k; q++) s += (double)w.values[j * c->k + q] * x.values[i * c->k + q];
            ref[i * ldc + j] = s;
        }
    float *generic = malloc(out_count * sizeof(float) + 4), *out = malloc(out_count * sizeof(float) + 4);
    struct cpu_gemm_problem p = {.n = c->n, .m = c->m, .k = c->k, .w = w.op, .x = x.op, .dst = generic,
                                 .dst_stride = (size_t)ldc * sizeof(float)};
    for (size_t i = 0; i < out_count; i++) generic[i] = NAN; /* the padding must stay untouched */
    run_path(CPU_SIMD_GENERIC, &p, 1);

    char name[160];
    snprintf(name, sizeof name, "n=%lld m=%lld k=%lld w=%s%s x=%s%s threads=%d%s", (long long)c->n, (long long)c->m,
             (long long)c->k, ggml_type_name(c->wtype), c->w_transposed ? "(T)" : "", ggml_type_name(c->xtype),
             c->x_transposed ? "(T)" : "", c->nth, c->zeros == 2 ? ", zero runs and an inf" : c->zeros ? ", zero runs" : "");
    double err = 0, norm = 0;
    bool pad_ok = true;
    for (int64_t i = 0; i < c->m; i++) {
        for (int64_t j = 0; j < c->n; j++) {
            err += diff2(generic[i * ldc + j], ref[i * ldc + j]);
            if (isfinite(ref[i * ldc + j])) norm += ref[i * ldc + j] * ref[i * ldc + j];
        }
        pad_ok = pad_ok && isnan(generic[i * ldc + c->n]) && isnan(generic[i * ldc + c->n + 1]);
    }
    tap_ok(err <= 1e-11 * norm && pad_ok && !isnan(err), "generic matches the double reference: %s (nmse %.2g)", name,
           norm > 0 ? err / norm : err);

    for (int level = CPU_SIMD_AVX2; level < CPU_SIMD_COUNT; level++) {
        if (!cpu_gemm_kernel_for((enum cpu_simd_level)level)) {
            tap_skip("this CPU lacks it", "%s path: %s", cpu_simd_level_name((enum cpu_simd_level)level), name);
            continue;
        }
        for (size_t i = 0; i < out_count; i++) out[i] = NAN;
        p.dst = out;
        run_path((enum cpu_simd_level)level, &p, c->nth);
        double e2 = 0;
        bool same_pad = true;
        for (int64_t i = 0; i < c->m; i++) {
            for (int64_t j = 0; j < c->n; j++) {
                e2 += diff2(out[i * ldc + j], generic[i * ldc + j]);
            }
            same_pad = same_pad && isnan(out[i * ldc + c->n]) && isnan(out[i * ldc + c->n + 1]);
        }
        tap_ok(e2 <= 1e-11 * (norm + 1e-30) && same_pad && !isnan(e2), "%s path matches generic: %s (nmse %.2g)",
               cpu_simd_level_name((enum cpu_simd_level)level), name, norm > 0 ? e2 / norm : e2);
    }
    free(ref);
    free(generic);
    free(out);
    free_operand(&w);
    free_operand(&x);
}

/* The mat-vec kernel of every path on its own: weight rows of each float type times 1 to
 * CPU_MATVEC_MAX_COLS columns, depths with tails of every vector width and several depth
 * chunks, row counts with tails of the register blocks, a padded transposed output.  Every
 * output is checked against a double-precision sum, within a bound relative to the sum of
 * the magnitudes of its products (what f32 accumulation in any order stays within). */
static void check_matvec_kernels(void) {
    static const int64_t depths[] = {1, 15, 17, 33, 255, 300, 777};
    static const enum ggml_type types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
    const int64_t nw = 11, out_row_stride = CPU_MATVEC_MAX_COLS + 3; /* output stored transposed */
    float *out = malloc((size_t)(nw * out_row_stride) * sizeof(float));
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        for (size_t di = 0; di < sizeof depths / sizeof depths[0]; di++) {
            const int64_t k = depths[di];
            struct test_operand w, x;
            make_operand(&w, nw, k, types[ti], false, 3);
            make_operand(&x, CPU_MATVEC_MAX_COLS, k, GGML_TYPE_F32, false, 5);
            for (int level = CPU_SIMD_GENERIC; level < CPU_SIMD_COUNT; level++) {
                const struct cpu_gemm_kernel *kern = cpu_gemm_kernel_for((enum cpu_simd_level)level);
                char name[120];
                snprintf(name, sizeof name, "%s mat-vec: %lld rows of %s, k=%lld, 1..%d columns",
                         cpu_simd_level_name((enum cpu_simd_level)level), (long long)nw, ggml_type_name(types[ti]),
                         (long long)k, CPU_MATVEC_MAX_COLS);
                if (!kern) {
                    tap_skip("this CPU lacks it", "%s", name);
                    continue;
                }
                double worst = 0; /* largest error / bound */
                for (int nx = 1; nx <= CPU_MATVEC_MAX_COLS; nx++) {
                    for (int64_t i = 0; i < nw * out_row_stride; i++) out[i] = NAN;
                    kern->matvec(k, types[ti], w.op.data, w.op.row_stride, nw, x.op.data,
                                 (int64_t)(x.op.row_stride / sizeof(float)), nx, out, out_row_stride, 1);
                    for (int64_t r = 0; r < nw; r++) {
                        for (int c = 0; c < out_row_stride; c++) {
                            const float got = out[r * out_row_stride + c];
                            if (c >= nx) { /* beyond the columns: untouched */
                                if (!isnan(got)) worst = INFINITY;
                                continue;
                            }
                            double ref = 0, mag = 0;
                            for (int64_t q = 0; q < k; q++) {
                                const double p = (double)w.values[r * k + q] * x.values[c * k + q];
                                ref += p;
                                mag += fabs(p);
                            }
                            const double e = fabs(got - ref) / (2e-6 * mag + 1e-30);
                            worst = isnan(got) || e > worst ? (isnan(got) ? INFINITY : e) : worst;
                        }
                    }
                }
                tap_ok(worst <= 1, "%s match the double sums (worst error %.3g of the bound)", name, worst);
            }
            free_operand(&w);
            free_operand(&x);
        }
    }
    free(out);
}

/* The detected features agree with the kernel's view in /proc/cpuinfo. */
static void check_detection(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        tap_skip("no /proc/cpuinfo", "feature detection agrees with /proc/cpuinfo");
        return;
    }
    char line[8192];
    bool found = false, avx2 = false, avx512f = false, f16c = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        found = true;
        avx2 = strstr(line, " avx2") != NULL;
        avx512f = strstr(line, " avx512f") != NULL;
        f16c = strstr(line, " f16c") != NULL;
        break;
    }
    fclose(f);
    if (!found) {
        tap_skip("no flags line", "feature detection agrees with /proc/cpuinfo");
        return;
    }
    const struct cpu_simd_features *ft = cpu_simd_features();
    tap_ok(ft->avx2 == avx2 && ft->avx512f == avx512f && ft->f16c == f16c,
           "detected avx2=%d avx512f=%d f16c=%d as /proc/cpuinfo says (%d %d %d)", ft->avx2, ft->avx512f, ft->f16c, avx2,
           avx512f, f16c);
}

int main(void) {
    /* GGMLC_CPU_PATH is read once, at the first query. */
    setenv("GGMLC_CPU_PATH", "generic", 1);
    tap_ok(cpu_simd_level() == CPU_SIMD_GENERIC && strcmp(cpu_simd_path(), "generic") == 0,
           "GGMLC_CPU_PATH=generic selects the portable path (best here: %s)", cpu_simd_level_name(cpu_simd_best_level()));
    tap_ok(cpu_simd_force_level(CPU_SIMD_COUNT) == cpu_simd_best_level(), "a level above the CPU's is clamped to %s",
           cpu_simd_level_name(cpu_simd_best_level()));
    check_detection();

    test_seed(8);
    const struct test_case cases[] = {
        {1, 1, 1, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 1},
        {7, 33, 65, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},
        {127, 65, 300, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 3},
        {65, 127, 33, GGML_TYPE_F16, GGML_TYPE_F32, false, false, 2},
        {97, 57, 271, GGML_TYPE_BF16, GGML_TYPE_F32, false, false, 2},
        {49, 40, 70, GGML_TYPE_F32, GGML_TYPE_F16, false, false, 1},
        {50, 31, 129, GGML_TYPE_F32, GGML_TYPE_BF16, true, false, 2},
        {33, 45, 77, GGML_TYPE_F16, GGML_TYPE_F32, true, true, 4},
        {400, 17, 520, GGML_TYPE_F32, GGML_TYPE_F32, false, true, 2},  /* several n-blocks and k-blocks */
        {1001, 70, 300, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 3}, /* team mode, packed once: panel tails */
        {130, 2100, 40, GGML_TYPE_BF16, GGML_TYPE_F32, false, false, 2}, /* team mode, packed once, many x panels */
        {20, 3000, 70, GGML_TYPE_F32, GGML_TYPE_F16, false, false, 2},  /* team mode, n too small to share */
        {97, 260, 785, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},  /* packed once, four even k-blocks */
        /* packed once, 32 x rows: 36 of them in 6-row AVX2 panels (the scratch bound once had 32) */
        {128, 32, 4096, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},
        {131, 277, 300, GGML_TYPE_F32, GGML_TYPE_F32, true, true, 3},   /* packed once, k-major operands */
        /* packed once at 5.8 MB (ggmlc-gpt's MLP weight gradients take 5.3 MB) */
        {300, 2100, 600, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},
        /* too large to pack once (over 8 MB): the blocked team mode, two m-blocks, three k-blocks */
        {300, 2700, 700, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},
        {130, 5, 257, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},  /* few rows: the dot path */
        {61, 7, 1000, GGML_TYPE_F16, GGML_TYPE_BF16, false, false, 3},
        {29, 3, 99, GGML_TYPE_BF16, GGML_TYPE_F32, false, true, 1},
        {333, 16, 1000, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2}, /* mat-vec: depth chunks, 16 columns */
        {77, 11, 513, GGML_TYPE_F16, GGML_TYPE_F32, false, false, 3},
        {45, 9, 300, GGML_TYPE_BF16, GGML_TYPE_F16, false, false, 2},   /* converted activations */
        {101, 24, 129, GGML_TYPE_F16, GGML_TYPE_F32, false, false, 2},  /* two passes of columns */
        {5, 14, 64, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},     /* swapped: dst transposed */
        {7, 40, 600, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},    /* swapped, summed over k blocks */
        {30, 300, 520, GGML_TYPE_F16, GGML_TYPE_F32, true, false, 2},   /* the same in team mode */
        {64, 1, 4096, GGML_TYPE_BF16, GGML_TYPE_F32, false, false, 4},
        {9, 11, 0, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2},     /* empty sums are zero */
        {57, 40, 544, GGML_TYPE_Q8_0, GGML_TYPE_F32, false, false, 2},  /* weights dequantized while packing */
        {100, 300, 512, GGML_TYPE_Q4_K, GGML_TYPE_F16, false, true, 3},
        {70, 33, 800, GGML_TYPE_Q4_0, GGML_TYPE_F32, false, false, 2},  /* vectorized dequantizers */
        {49, 120, 288, GGML_TYPE_Q8_0, GGML_TYPE_F32, false, true, 2},
        /* k-major operands (the backward pass's out_prod), packed by pack_cols: panel tails */
        {131, 77, 300, GGML_TYPE_F32, GGML_TYPE_F32, true, true, 2},
        {100, 45, 70, GGML_TYPE_F32, GGML_TYPE_BF16, true, true, 1},
        {53, 3001, 33, GGML_TYPE_F16, GGML_TYPE_F32, true, false, 2}, /* team mode */
        /* f32 read in place by the strided micro-kernel (AVX2): w k-major rows 2400 bytes apart
         * (packed) with x k-major no deeper than a cache block (in place); both in place in
         * team mode, packed once; w in place with its narrow last panel and x along k in the
         * blocked team mode */
        {600, 50, 100, GGML_TYPE_F32, GGML_TYPE_F32, true, true, 1},
        {140, 130, 128, GGML_TYPE_F32, GGML_TYPE_F32, true, true, 2},
        {70, 2100, 1000, GGML_TYPE_F32, GGML_TYPE_F32, true, false, 2},
        /* causal attention's zero runs along k (a GEMM that skipped them would have to keep
         * 0 x inf = NaN): x along k and w k-major (in place), both packed, several k-blocks,
         * team mode; an inf in w where x is zero */
        {128, 128, 128, GGML_TYPE_F32, GGML_TYPE_F32, true, false, 1, 1},
        {128, 128, 128, GGML_TYPE_F32, GGML_TYPE_F32, false, true, 1, 1},
        {130, 301, 600, GGML_TYPE_F32, GGML_TYPE_F32, true, true, 2, 1},
        {300, 2700, 700, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2, 1},
        {128, 128, 128, GGML_TYPE_F32, GGML_TYPE_F32, true, false, 1, 2},
        {100, 200, 300, GGML_TYPE_F32, GGML_TYPE_F32, false, false, 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    check_matvec_kernels();
    return tap_done();
}
