/*
 * ggmlc-bench - benchmarks of single operators through ggml's public API.
 *
 *   ggmlc-bench mul_mat --type f32|f16|bf16|q4_0|q8_0|q4_K|... [--btype f32|f16] --m 2048 --n 2048 --k 2048
 *               --threads 2 [--reps 10] [--compare openblas|memcpy [--rounds 3]] [--json] [--backend cpu]
 *               [--products P [--chain]]  P products (weights of their own) in one graph:
 *               times and rates per product, without most of the per-graph submit cost
 *               and with weights P times larger than one product's; independent products
 *               share the activations, chained ones (--chain, n >= k) each read the first
 *               k outputs of the one before, as the layers of a model do
 *   ggmlc-bench add|mul|soft_max [--size ELEMENTS]   large tensors, GB/s
 *   ggmlc-bench silu|gelu|exp|tanh|sigmoid [--size]  activations, GB/s (2 streams)
 *   ggmlc-bench matvec [--type T] [--k 4096] [--n 14336] [--threads 2] [--rounds 3] [--compare openblas]
 *               F32, F16, BF16, Q8_0 and Q4_0 weights (or those of --type) (--n rows of --k) times 1, 2, 4, 8 and 16
 *               columns: ms, GB/s of weights, % of memread (--size elements, default the F32
 *               weights' bytes, timed before each type in every round) and the time against one
 *               column's; with --compare openblas each F32 product alternates with OpenBLAS's
 *               sgemv (one column) or sgemm (several)
 *   ggmlc-bench memcpy [--size ELEMENTS]             bandwidth reference (one thread)
 *   ggmlc-bench memread [--size ELEMENTS] [--threads 2]
 *               read-only bandwidth reference: --threads threads each sum their share
 *               (what a mat-vec product does with its weights)
 *   ggmlc-bench graph-overhead [--nodes 1000]        chain of tiny adds, us per node
 *   ggmlc-bench decode-graph [--layers 4] [--embd 256] [--ctx 256] [--type f32|q8_0|q4_0]
 *               [--threads 1] [--tokens 200] [--batch 1] ...
 *               a new llama-layout decode graph per token (or, --batch B, a prompt of B
 *               tokens per graph) through ggml_backend_sched, as llama.cpp runs it: ms per
 *               graph of build, alloc and compute
 *               (bench/decode-graph.c, which also builds against ggml)
 *   ggmlc-bench conv_2d|conv_2d_direct [--m 64] [--k 64] [--n 64] [--type f32|f16]
 *               3x3 convolution (stride 1, padding 1) of a batch of 2 images --m x --m
 *               with --k channels into --n channels (im2col + mul_mat, or CONV_2D), GFLOPS
 *   ggmlc-bench train-step [--arch 784,512,256,10] [--batch 256] [--steps 50] [--threads 2]
 *               [--rounds 3] [--compare openblas]
 *               training steps of an MLP (ReLU, sparse cross-entropy, AdamW) through the
 *               model API (ggmlc-nn.h): steps/s and the GFLOPS they imply (3x the forward
 *               product flops per step); OpenBLAS sgemm on the first layer's product
 *   ggmlc-bench train-epoch [--model mlp|cnn] [--batch 32] [--epochs 3] [--backend NAME]
 *               [--data synthetic|fashion|DIR] [--samples 60000] [--api model|opt]
 *               epochs of ggmlc-train's models: seconds, steps/s and host-device round
 *               trips per step (bench/train-epoch.c); --api opt: the MLP through ggml-opt
 *
 * mul_mat computes dst[m][n] = sum_k w[n][k] x[m][k] (w: the --type weights,
 * x: activations of --btype, f32 unless given).  Times are medians of --reps runs after one
 * warm-up run (on a GPU, after 3 s of them: see warm_up_s).
 * --compare openblas loads libopenblas.so.0 at run time and times
 * cblas_sgemm on the same shapes in this process, alternating with ggmlc
 * for --rounds rounds so that each ratio compares runs under the same load.
 * --compare memcpy alternates the same way with the memcpy bandwidth
 * reference (--size elements) and gives the weights' GB/s as % of it.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "ggmlc-nn.h"
#include "../bench/decode-graph.h"
#include "../bench/eager.h"
#include "../bench/train-epoch.h"
#include "tool-options.h"

struct options {
    const char *op, *backend;
    enum ggml_type type, btype; /* mul_mat weights and activations */
    int64_t m, n, k, size, nodes, products;
    int64_t head, heads, kv_heads; /* flash_attn_ext: head size, query heads, K/V heads */
    int threads, reps, rounds;
    bool openblas, memcpy_ref, json, chain, reuse;
};

struct result {
    double median_s;      /* of our backend */
    double work;          /* flops or bytes per run */
    bool is_flops;
    double openblas_s;    /* 0 when not compared */
    double ratio;         /* openblas time / ours, median over rounds */
    double memcpy_gbps;   /* --compare memcpy: median memcpy GB/s over rounds (0 when not compared) */
    double of_memcpy;     /* weights GB/s / memcpy GB/s, median of the rounds' ratios */
};

/* Zeroed memory for rows x cols values of elem bytes, or exit 2 with a message naming what:
 * sizes come from the command line, so a too large one is a usage error, not a crash. */
static void *alloc_or_exit(int64_t rows, int64_t cols, size_t elem, const char *what) {
    size_t count, bytes;
    void *p = NULL;
    if (rows >= 0 && cols >= 0 && !__builtin_mul_overflow((uint64_t)rows, (uint64_t)cols, &count) &&
        !__builtin_mul_overflow(count, elem, &bytes))
        p = calloc(count ? count : 1, elem);
    if (!p) {
        fprintf(stderr, "ggmlc-bench: cannot allocate %s (%lld x %lld values of %zu bytes): out of memory or too large\n",
                what, (long long)rows, (long long)cols, elem);
        exit(2);
    }
    return p;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts them). */
static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds of warm-up calls before the timed ones (one call at least): 3 on a GPU, which left idle
 * while the inputs were made (quantizing K-quant weights takes seconds on one core) needs a second
 * or two of work to come back to its full clocks.  On an H200, 14336x4096 q4_K mat-vecs took 74 us
 * after one warm-up call or 0.25 s of them, 20.8 after 2 s and 19.2 after 5 s; q4_0, whose weights
 * are made in a fraction of a second, 15.9 either way (BENCHMARKS.md, session 7). */
static double warm_up_s = 0;

/* Median time of reps calls of fn(arg) after warm_up_s seconds of warm-up calls; 0 when a call fails. */
static double median_time(bool (*fn)(void *), void *arg, int reps) {
    const double warm_until = now_s() + warm_up_s;
    do {
        if (!fn(arg)) return 0;
    } while (now_s() < warm_until);
    double *t = alloc_or_exit(reps, 1, sizeof(double), "the timings");
    for (int i = 0; i < reps; i++) {
        const double t0 = now_s();
        if (!fn(arg)) {
            free(t);
            return 0;
        }
        t[i] = now_s() - t0;
    }
    const double med = median_of(t, reps);
    free(t);
    return med;
}

static void fill_random(float *x, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 9) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* ------------------------------------------------------------ backend */

struct graph_run {
    ggml_backend_t backend;
    struct ggml_cgraph *graph;
    ggml_backend_buffer_t buffer;
};

static bool run_graph(void *arg) {
    const struct graph_run *r = arg;
    return ggml_backend_graph_compute(r->backend, r->graph) == GGML_STATUS_SUCCESS;
}

static ggml_backend_t open_backend(const struct options *o) {
    ggml_backend_t b = ggml_backend_init_by_name(o->backend, NULL);
    if (!b) {
        tool_fail("ggmlc-bench", "no backend '%s': %s", o->backend, ggmlc_last_error());
        return NULL;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(b));
    ggml_backend_set_n_threads_t set_threads =
        reg ? (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads") : NULL;
    if (ggml_backend_dev_type(ggml_backend_get_device(b)) == GGML_BACKEND_DEVICE_TYPE_GPU) warm_up_s = 3;
    if (set_threads) set_threads(b, o->threads);
    else fprintf(stderr, "ggmlc-bench: backend %s has no thread setting; --threads ignored\n", o->backend);
    return b;
}

/* Rows of a block-format tensor quantized from random values; further rows repeat them.  Some
 * formats' quantizers search for their scales (IQ4_NL and IQ4_XS take seconds for a 14336 x 4096
 * matrix); a product's time does not depend on the values, only on their bytes being read. */
#define QUANT_FILL_ROWS 256

/* Write random floats into t, quantizing or converting them to t's type (a block format: the
 * first QUANT_FILL_ROWS rows, repeated). */
static void set_random(struct ggml_tensor *t, unsigned seed) {
    const int64_t rows = ggml_nrows(t), row_bytes = (int64_t)ggml_row_size(t->type, t->ne[0]);
    const int64_t filled = ggml_is_quantized(t->type) && rows > QUANT_FILL_ROWS ? QUANT_FILL_ROWS : rows;
    const int64_t n = filled * t->ne[0];
    float *f = alloc_or_exit(n, 1, sizeof(float), "the random inputs");
    fill_random(f, n, seed);
    char *raw = alloc_or_exit((int64_t)ggml_nbytes(t), 1, 1, "the converted inputs");
    ggml_quantize_chunk(t->type, f, raw, 0, filled, t->ne[0], NULL);
    for (int64_t r = filled; r < rows; r++) memcpy(raw + r * row_bytes, raw + (r % filled) * row_bytes, (size_t)row_bytes);
    ggml_backend_tensor_set(t, raw, 0, ggml_nbytes(t));
    free(raw);
    free(f);
}

static size_t graph_size(int64_t n_tensors) {
    return (size_t)n_tensors + 16;
}

/* A context for n_tensors tensors (metadata only) and their graph. */
static struct ggml_context *new_meta_ctx(int64_t n_tensors) {
    if (n_tensors > INT32_MAX / 4) { /* a graph holds at most INT32_MAX / 2 nodes and leafs */
        fprintf(stderr, "ggmlc-bench: cannot allocate a graph of %lld tensors: too large\n", (long long)n_tensors);
        exit(2);
    }
    const size_t size = (size_t)n_tensors * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size(n_tensors), false);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){size, NULL, true});
    if (!ctx) {
        tool_fail("ggmlc-bench", "cannot make a context for %lld tensors: %s", (long long)n_tensors,
                  ggmlc_last_error());
        exit(2);
    }
    return ctx;
}

/* Allocate ctx's tensors on the backend, fill the inputs and build the graph computing out;
 * false (with a message) when the tensors cannot be allocated. */
static bool prepare_graph(struct graph_run *run, ggml_backend_t backend, struct ggml_context *ctx, struct ggml_tensor *out,
                          int64_t n_tensors) {
    run->buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!run->buffer) {
        tool_fail("ggmlc-bench", "cannot allocate the tensors: %s", ggmlc_last_error());
        return false;
    }
    unsigned seed = 1;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        if (t->op == GGML_OP_NONE) set_random(t, seed++);
    run->backend = backend;
    run->graph = ggml_new_graph_custom(ctx, graph_size(n_tensors), false);
    ggml_build_forward_expand(run->graph, out);
    return true;
}

/* Median time of the graph computing out (0 on failure). */
static double time_graph(const struct options *o, ggml_backend_t backend, struct ggml_context *ctx,
                         struct ggml_tensor *out, int64_t n_tensors) {
    struct graph_run run;
    if (!prepare_graph(&run, backend, ctx, out, n_tensors)) return 0;
    const double t = median_time(run_graph, &run, o->reps);
    ggml_backend_buffer_free(run.buffer);
    return t;
}

/* ----------------------------------------------------------- OpenBLAS */

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);

struct sgemm_run {
    sgemm_fn sgemm;
    int m, n, k;
    float *x, *w, *c;
};

static bool run_sgemm(void *arg) {
    const struct sgemm_run *r = arg;
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
    r->sgemm(ROW_MAJOR, NO_TRANS, TRANS, r->m, r->n, r->k, 1.0f, r->x, r->k, r->w, r->k, 0.0f, r->c, r->n);
    return true;
}

/* Load OpenBLAS and make the operands of the same product; false when it is missing. */
static bool openblas_open(const struct options *o, struct sgemm_run *r) {
    /* The machine's OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE make OpenBLAS pick a slower kernel. */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    char threads[16];
    snprintf(threads, sizeof threads, "%d", o->threads);
    setenv("OPENBLAS_NUM_THREADS", threads, 1);
    if (!o->json)
        printf("openblas: unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, OPENBLAS_NUM_THREADS=%d, loading libopenblas.so.0\n",
               o->threads);
    void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "ggmlc-bench: cannot load OpenBLAS: %s\n", dlerror());
        return false;
    }
    *r = (struct sgemm_run){(sgemm_fn)(uintptr_t)dlsym(lib, "cblas_sgemm"), (int)o->m, (int)o->n, (int)o->k, NULL, NULL, NULL};
    void (*set_threads)(int) = (void (*)(int))(uintptr_t)dlsym(lib, "openblas_set_num_threads");
    if (!r->sgemm) {
        fprintf(stderr, "ggmlc-bench: libopenblas.so.0 has no cblas_sgemm\n");
        return false;
    }
    if (set_threads) set_threads(o->threads);
    r->x = alloc_or_exit(o->m, o->k, sizeof(float), "the OpenBLAS activations");
    r->w = alloc_or_exit(o->n, o->k, sizeof(float), "the OpenBLAS weights");
    r->c = alloc_or_exit(o->m, o->n, sizeof(float), "the OpenBLAS result");
    fill_random(r->x, o->m * o->k, 1);
    fill_random(r->w, o->n * o->k, 2);
    return true; /* the library stays loaded: its threads may still be parked */
}

static void openblas_close(struct sgemm_run *r) {
    free(r->x);
    free(r->w);
    free(r->c);
}

/* Let OpenBLAS's workers stop spinning before the next timing (they would take a core). */
static void settle(void) {
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
}

/* ------------------------------------------------------------- benches */

struct memcpy_run {
    void *dst, *src;
    size_t bytes;
};

static bool run_memcpy(void *arg) {
    const struct memcpy_run *r = arg;
    memcpy(r->dst, r->src, r->bytes);
    return true;
}

/* mul_mat, and with --compare openblas cblas_sgemm, in --rounds alternating rounds:
 * the times are medians over the rounds, the ratio the median of the rounds' ratios
 * (both sides of a ratio measured back to back, under the same machine load). */
static bool bench_mul_mat(const struct options *o, struct result *res) {
    ggml_backend_t backend = open_backend(o);
    if (!backend) return false;
    const int64_t n_tensors = 3 * o->products + 1;
    struct ggml_context *ctx = new_meta_ctx(n_tensors);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, o->btype, o->k, o->m), *out[64];
    for (int64_t i = 0; i < o->products; i++) {
        struct ggml_tensor *in = o->chain && i > 0 ? ggml_view_2d(ctx, out[i - 1], o->k, o->m, out[i - 1]->nb[1], 0) : x;
        struct ggml_tensor *w = o->reuse && i > 0 ? out[0]->src[0] : ggml_new_tensor_2d(ctx, o->type, o->k, o->n);
        out[i] = in ? ggml_mul_mat(ctx, w, in) : NULL;
    }
    struct graph_run run;
    struct sgemm_run blas;
    if (!out[o->products - 1] || !prepare_graph(&run, backend, ctx, out[0], n_tensors)) {
        tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
        return false;
    }
    for (int64_t i = 1; i < o->products; i++) ggml_build_forward_expand(run.graph, out[i]);
    const bool blas_ok = o->openblas && openblas_open(o, &blas);
    struct memcpy_run mc = {NULL, NULL, o->memcpy_ref ? (size_t)o->size * sizeof(float) : 0};
    if (o->memcpy_ref) {
        mc.src = alloc_or_exit(o->size, 1, sizeof(float), "the memcpy source");
        mc.dst = alloc_or_exit(o->size, 1, sizeof(float), "the memcpy destination");
        memset(mc.src, 1, mc.bytes);
        memset(mc.dst, 0, mc.bytes);
    }
    const double weight_bytes = (double)ggml_row_size(o->type, o->k) * (double)o->n * (double)o->products;
    double *ours = alloc_or_exit(o->rounds, 1, sizeof(double), "the timings");
    double *theirs = alloc_or_exit(o->rounds, 1, sizeof(double), "the timings");
    double *ratios = alloc_or_exit(o->rounds, 1, sizeof(double), "the timings");
    for (int r = 0; r < o->rounds; r++) {
        if (blas_ok) settle();
        ours[r] = median_time(run_graph, &run, o->reps);
        if (o->memcpy_ref) {
            theirs[r] = median_time(run_memcpy, &mc, o->reps);
            ratios[r] = ours[r] > 0 ? (weight_bytes / ours[r]) / (2.0 * (double)mc.bytes / theirs[r]) : 0;
            if (!o->json && o->rounds > 1)
                printf("round %d: mul_mat %.3f ms (%.2f GB/s of weights), memcpy %.2f GB/s: %.0f%%\n", r + 1, ours[r] * 1e3,
                       weight_bytes / ours[r] * 1e-9, 2.0 * (double)mc.bytes / theirs[r] * 1e-9, 100 * ratios[r]);
            continue;
        }
        if (!blas_ok) continue;
        theirs[r] = median_time(run_sgemm, &blas, o->reps);
        ratios[r] = ours[r] > 0 ? theirs[r] / ours[r] : 0;
        if (!o->json && o->rounds > 1)
            printf("round %d: ggmlc %.3f ms, openblas %.3f ms, ratio %.3f\n", r + 1, ours[r] * 1e3, theirs[r] * 1e3, ratios[r]);
    }
    res->median_s = median_of(ours, o->rounds);
    res->openblas_s = blas_ok ? median_of(theirs, o->rounds) : 0;
    res->ratio = blas_ok ? median_of(ratios, o->rounds) : 0;
    if (o->memcpy_ref) {
        res->memcpy_gbps = 2.0 * (double)mc.bytes / median_of(theirs, o->rounds) * 1e-9;
        res->of_memcpy = median_of(ratios, o->rounds);
        free(mc.src);
        free(mc.dst);
    }
    res->work = 2.0 * (double)o->m * (double)o->n * (double)o->k * (double)o->products;
    res->is_flops = true;
    if (blas_ok) openblas_close(&blas);
    free(ours);
    free(theirs);
    free(ratios);
    ggml_backend_buffer_free(run.buffer);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return res->median_s > 0;
}

/* The activations benchmarked like soft_max (one operand); false for other names. */
static bool unary_by_name(const char *name, enum ggml_unary_op *op) {
    static const struct {
        const char *name;
        enum ggml_unary_op op;
    } ops[] = {{"silu", GGML_UNARY_OP_SILU}, {"gelu", GGML_UNARY_OP_GELU}, {"exp", GGML_UNARY_OP_EXP},
               {"tanh", GGML_UNARY_OP_TANH}, {"sigmoid", GGML_UNARY_OP_SIGMOID}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(name, ops[i].name) == 0) {
            *op = ops[i].op;
            return true;
        }
    return false;
}

/* add, mul, soft_max on one large [4096, size/4096] tensor (and a second operand). */
static bool bench_elementwise(const struct options *o, struct result *res) {
    ggml_backend_t backend = open_backend(o);
    if (!backend) return false;
    struct ggml_context *ctx = new_meta_ctx(3);
    const int64_t cols = 4096, rows = (o->size + cols - 1) / cols;
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, rows);
    struct ggml_tensor *b = NULL, *out;
    int streams = 2; /* tensors read or written per run */
    enum ggml_unary_op uop;
    if (strcmp(o->op, "soft_max") == 0) {
        out = ggml_soft_max(ctx, a);
    } else if (unary_by_name(o->op, &uop)) {
        out = ggml_unary(ctx, a, uop);
    } else {
        b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, rows);
        out = strcmp(o->op, "add") == 0 ? ggml_add(ctx, a, b) : ggml_mul(ctx, a, b);
        streams = 3;
    }
    if (!out) {
        tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
        return false;
    }
    res->median_s = time_graph(o, backend, ctx, out, 3);
    res->work = (double)streams * (double)ggml_nbytes(a);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return res->median_s > 0;
}

/* flash_attn_ext of --m queries over --k keys (512 each unless given), --heads query heads of
 * --head values on --kv-heads K/V heads of --type (f16 unless given), a causal f16 mask (query i
 * sees keys up to i + k - m) and scale 1/sqrt(head).  Work: the flops of the unmasked products
 * (4 head m k heads), so a causal run's rate counts the skipped half too. */
static bool bench_flash_attn(const struct options *o, struct result *res) {
    ggml_backend_t backend = open_backend(o);
    if (!backend) return false;
    struct ggml_context *ctx = new_meta_ctx(5);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, o->head, o->m, o->heads, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, o->type, o->head, o->k, o->kv_heads, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, o->type, o->head, o->k, o->kv_heads, 1);
    struct ggml_tensor *mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, o->k, o->m);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / sqrtf((float)o->head), 0.0f, 0.0f);
    struct graph_run run;
    if (!out || !prepare_graph(&run, backend, ctx, out, 5)) {
        if (!out) tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
        return false;
    }
    ggml_fp16_t *m = alloc_or_exit(o->m, o->k, sizeof *m, "the mask");
    for (int64_t i = 0; i < o->m; i++)
        for (int64_t j = 0; j < o->k; j++) m[i * o->k + j] = ggml_fp32_to_fp16(j <= i + o->k - o->m ? 0.0f : -INFINITY);
    ggml_backend_tensor_set(mask, m, 0, ggml_nbytes(mask));
    free(m);
    res->median_s = median_time(run_graph, &run, o->reps);
    res->work = 4.0 * (double)o->head * (double)o->m * (double)o->k * (double)o->heads;
    ggml_backend_buffer_free(run.buffer);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return res->median_s > 0;
}

static bool bench_memcpy(const struct options *o, struct result *res) {
    struct memcpy_run r = {NULL, NULL, (size_t)o->size * sizeof(float)};
    r.src = alloc_or_exit(o->size, 1, sizeof(float), "the memcpy source");
    r.dst = alloc_or_exit(o->size, 1, sizeof(float), "the memcpy destination");
    memset(r.src, 1, r.bytes);
    memset(r.dst, 0, r.bytes);
    res->median_s = median_time(run_memcpy, &r, o->reps);
    res->work = 2.0 * (double)r.bytes; /* read + write */
    free(r.src);
    free(r.dst);
    return true;
}

struct memread_run {
    const uint64_t *data;
    size_t words;
    int threads;
    uint64_t sums[64]; /* one per thread: keeps the reads from being optimised away */
};

struct memread_share {
    struct memread_run *run;
    int index;
};

/* Sum this thread's contiguous share with eight independent accumulators (enough loads in
 * flight to stream memory without SIMD). */
static void *memread_worker(void *arg) {
    const struct memread_share *sh = arg;
    const struct memread_run *r = sh->run;
    const size_t begin = r->words * (size_t)sh->index / (size_t)r->threads, end = r->words * (size_t)(sh->index + 1) / (size_t)r->threads;
    uint64_t acc[8] = {0};
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += r->data[i + j];
    for (; i < end; i++) acc[0] += r->data[i];
    sh->run->sums[sh->index] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
    return NULL;
}

static bool run_memread(void *arg) {
    struct memread_run *r = arg;
    pthread_t threads[64];
    struct memread_share shares[64];
    int started = 0;
    for (; started < r->threads; started++) {
        shares[started] = (struct memread_share){r, started};
        if (pthread_create(&threads[started], NULL, memread_worker, &shares[started]) != 0) break;
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    return started == r->threads;
}

static bool bench_memread(const struct options *o, struct result *res) {
    struct memread_run r = {.words = (size_t)o->size / 2, /* f32 elements as 64-bit words */ .threads = o->threads};
    if (r.threads < 1 || r.threads > 64 || r.words == 0) {
        fprintf(stderr, "ggmlc-bench: memread needs 1 to 64 threads and a --size of at least 2\n");
        return false;
    }
    uint64_t *data = alloc_or_exit((int64_t)r.words, 1, sizeof *data, "the memread data");
    for (size_t i = 0; i < r.words; i++) data[i] = i;
    r.data = data;
    res->median_s = median_time(run_memread, &r, o->reps);
    res->work = (double)(r.words * sizeof *data); /* bytes read */
    free(data);
    return res->median_s > 0;
}

static bool bench_graph_overhead(const struct options *o, struct result *res) {
    ggml_backend_t backend = open_backend(o);
    if (!backend) return false;
    struct ggml_context *ctx = new_meta_ctx(o->nodes + 2);
    struct ggml_tensor *y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    for (int64_t i = 0; i < o->nodes && x; i++) x = ggml_add(ctx, x, y);
    if (!x) {
        tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
        return false;
    }
    res->median_s = time_graph(o, backend, ctx, x, o->nodes + 2);
    res->work = (double)o->nodes;
    ggml_free(ctx);
    ggml_backend_free(backend);
    return res->median_s > 0;
}

/* conv_2d (im2col + mul_mat) or conv_2d_direct (GGML_OP_CONV_2D): 3x3, stride 1, padding 1, batch 2. */
static bool bench_conv_2d(const struct options *o, struct result *res) {
    ggml_backend_t backend = open_backend(o);
    if (!backend) return false;
    struct ggml_context *ctx = new_meta_ctx(16);
    struct ggml_tensor *x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, o->m, o->m, o->k, 2);
    struct ggml_tensor *w = ggml_new_tensor_4d(ctx, o->type, 3, 3, o->k, o->n);
    struct ggml_tensor *out = strcmp(o->op, "conv_2d") == 0 ? ggml_conv_2d(ctx, w, x, 1, 1, 1, 1, 1, 1)
                                                             : ggml_conv_2d_direct(ctx, w, x, 1, 1, 1, 1, 1, 1);
    if (!out) {
        tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
        return false;
    }
    res->median_s = time_graph(o, backend, ctx, out, 16);
    res->work = 2.0 * 9 * (double)o->k * (double)o->n * (double)(o->m * o->m * 2);
    res->is_flops = true;
    ggml_free(ctx);
    ggml_backend_free(backend);
    return res->median_s > 0;
}

/* ---------------------------------------------------------- train-step */

#define TRAIN_MAX_LAYERS 16

struct train_options {
    int64_t arch[TRAIN_MAX_LAYERS + 1]; /* input width, then each dense layer's units */
    int n_arch;
    int64_t batch, steps;
    int threads, rounds;
    bool openblas;
};

struct train_run {
    ggmlc_model *model;
    float *x, *y;
    int64_t n;      /* samples of one timed run: steps * batch */
    size_t x_len;   /* floats in x */
    int64_t batch;
};

/* "784,512,256,10" into o->arch; false when malformed. */
static bool parse_arch(const char *s, struct train_options *o) {
    o->n_arch = 0;
    while (*s && o->n_arch <= TRAIN_MAX_LAYERS) {
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) return false;
        o->arch[o->n_arch++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return false;
    }
    return !*s && o->n_arch >= 2;
}

static bool parse_train_args(int argc, char **argv, struct train_options *o) {
    *o = (struct train_options){.batch = 256, .steps = 50, .threads = 2, .rounds = 3};
    if (!parse_arch("784,512,256,10", o)) return false;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--arch") == 0) { if (!parse_arch(v, o)) return false; }
        else if (strcmp(a, "--batch") == 0) o->batch = atoll(v);
        else if (strcmp(a, "--steps") == 0) o->steps = atoll(v);
        else if (strcmp(a, "--threads") == 0) o->threads = atoi(v);
        else if (strcmp(a, "--rounds") == 0) o->rounds = atoi(v);
        else if (strcmp(a, "--compare") == 0) { if (strcmp(v, "openblas") != 0) return false; o->openblas = true; }
        else return false;
    }
    return argc % 2 == 0 && o->batch > 0 && o->steps > 0 && o->threads > 0 && o->rounds > 0;
}

/* The MLP: ReLU between dense layers, logits out, sparse cross-entropy, AdamW on the CPU. */
static ggmlc_model *build_mlp(const struct train_options *o) {
    ggmlc_model *m = ggmlc_sequential(&o->arch[0], 1);
    for (int i = 1; m && i < o->n_arch; i++) {
        if (ggmlc_model_add(m, ggmlc_dense(o->arch[i], i + 1 < o->n_arch ? GGMLC_ACT_RELU : GGMLC_ACT_NONE)) != GGMLC_OK) {
            ggmlc_model_free(m);
            return NULL;
        }
    }
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.backend = "cpu";
    if (m && ggmlc_model_compile(m, &co) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

/* One timed run: an epoch of `steps` batches, in order, silent (the loss is read every step). */
static bool run_train_steps(void *arg) {
    const struct train_run *r = arg;
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.batch_size = r->batch;
    fo.shuffle = false;
    fo.verbose = 0;
    return ggmlc_model_fit(r->model, r->x, r->x_len, r->y, (size_t)r->n, r->n, &fo, NULL) == GGMLC_OK;
}

/* Flops of a step: the forward products, their weight gradients and their input gradients. */
static double train_step_flops(const struct train_options *o) {
    double forward = 0;
    for (int i = 1; i < o->n_arch; i++) forward += 2.0 * (double)o->batch * (double)o->arch[i - 1] * (double)o->arch[i];
    return 3.0 * forward;
}

static int bench_train_step(int argc, char **argv) {
    struct train_options o;
    if (!parse_train_args(argc, argv, &o)) {
        fputs("usage: ggmlc-bench train-step [--arch 784,512,256,10] [--batch 256] [--steps 50] [--threads 2] [--rounds 3]"
              " [--compare openblas]\n", stderr);
        return 2;
    }
    struct train_run run = {build_mlp(&o), NULL, NULL, o.steps * o.batch, 0, o.batch};
    if (!run.model) {
        tool_fail("ggmlc-bench", "cannot build the model: %s", ggmlc_last_error());
        return 1;
    }
    const int64_t in = o.arch[0], classes = o.arch[o.n_arch - 1];
    run.x_len = (size_t)(run.n * in);
    run.x = alloc_or_exit(run.n, in, sizeof(float), "the training samples");
    run.y = alloc_or_exit(run.n, 1, sizeof(float), "the training labels");
    fill_random(run.x, run.n * in, 7);
    for (int64_t i = 0; i < run.n; i++) run.y[i] = (float)(i * 7 % classes);
    /* OpenBLAS on the first (largest) layer's forward product: batch x in times in x units */
    const struct options blas_opts = {.m = o.batch, .n = o.arch[1], .k = in, .threads = o.threads};
    struct sgemm_run blas;
    const bool blas_ok = o.openblas && openblas_open(&blas_opts, &blas);
    const double flops = train_step_flops(&o), gemm_flops = 2.0 * (double)o.batch * (double)in * (double)o.arch[1];
    /* round 0 builds and plans the graph (warm-up); rounds 1..R are timed, each next to an sgemm timing */
    double *ours = alloc_or_exit((int64_t)o.rounds + 1, 1, sizeof(double), "the timings");
    double *theirs = alloc_or_exit((int64_t)o.rounds + 1, 1, sizeof(double), "the timings");
    bool ok = true;
    for (int r = 0; r <= o.rounds && ok; r++) {
        if (blas_ok) settle();
        const double t0 = now_s();
        ok = run_train_steps(&run);
        ours[r] = (now_s() - t0) / (double)o.steps;
        if (r == 0) continue;
        if (blas_ok) theirs[r] = median_time(run_sgemm, &blas, 20);
        printf("round %d: %.1f steps/s (%.1f GFLOPS)", r, 1.0 / ours[r], flops / ours[r] * 1e-9);
        if (blas_ok) printf(", openblas sgemm %.1f GFLOPS, ratio %.3f", gemm_flops / theirs[r] * 1e-9,
                            (flops / ours[r]) / (gemm_flops / theirs[r]));
        printf("\n");
    }
    if (!ok) tool_fail("ggmlc-bench", "training failed: %s", ggmlc_last_error());
    if (ok) {
        const double step = median_of(ours + 1, o.rounds);
        printf("train-step mlp ");
        for (int i = 0; i < o.n_arch; i++) printf("%s%lld", i ? "-" : "", (long long)o.arch[i]);
        printf(" batch %lld, %lld steps x %d rounds, threads=%d (ggmlc: the CPU backend's default): %.3f ms/step, "
               "%.1f steps/s, %.1f GFLOPS (%.3f GFLOP/step)\n", (long long)o.batch, (long long)o.steps, o.rounds,
               o.threads, step * 1e3, 1.0 / step, flops / step * 1e-9, flops * 1e-9);
        if (blas_ok) {
            const double blas_s = median_of(theirs + 1, o.rounds);
            printf("openblas sgemm f32 m=%lld n=%lld k=%lld: %.1f GFLOPS; train-step GFLOPS / openblas GFLOPS = %.3f\n",
                   (long long)o.batch, (long long)o.arch[1], (long long)in, gemm_flops / blas_s * 1e-9,
                   (flops / step) / (gemm_flops / blas_s));
        }
    }
    if (blas_ok) openblas_close(&blas);
    free(ours);
    free(theirs);
    free(run.x);
    free(run.y);
    ggmlc_model_free(run.model);
    return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- main */

static void print_usage(FILE *out) {
    fputs(
        "usage: ggmlc-bench mul_mat|matvec|add|mul|soft_max|silu|gelu|exp|tanh|sigmoid|memcpy|memread|graph-overhead|decode-graph|conv_2d|conv_2d_direct|flash_attn_ext [options]\n"
        "  --type f32|f16|q4_0|q4_K|...    mul_mat weight type, any ggml type name (default f32)\n"
        "  --btype f32|f16                 mul_mat activation type (default f32)\n"
        "  --m M --n N --k K               mul_mat: M activation rows, N weight rows, depth K (2048)\n"
        "  --size ELEMENTS                 add/mul/soft_max/memcpy/memread tensor size (16777216 = 64 MiB f32)\n"
        "  --nodes N                       graph-overhead chain length (1000)\n"
        "  --products P                    mul_mat: P independent products in one graph, rates per product (1, at most 64)\n"
        "  --chain                         with --products: each product reads the one before (needs n >= k)\n"
        "  --reuse                         with --products: all products read the same weights\n"
        "  --m S --k IC --n OC             conv_2d: S x S images, IC -> OC channels (64 each)\n"
        "  --m Q --k KV --head D --heads H --kv-heads G  flash_attn_ext: Q queries (512) over KV keys (512) of --type (f16),\n"
        "                                  H heads (12) of D values (64) on G K/V heads (4), a causal mask\n"
        "  --threads T --reps R            threads (2) and timed repetitions (10); the median is printed\n"
        "  --backend NAME                  backend (default cpu)\n"
        "  --compare openblas              also time OpenBLAS cblas_sgemm on the same shapes (mul_mat)\n"
        "  --compare memcpy                also time memcpy of --size elements; weights GB/s as % of it (mul_mat)\n"
        "  --rounds R                      alternate ggmlc and the comparison R times; medians over rounds (1)\n"
        "  --json                          one JSON object on stdout\n"
        "       ggmlc-bench matvec [--k 4096] [--n 14336] [--type T] [--threads 2] [--rounds 3] [--compare openblas]\n"
        "       ggmlc-bench train-step [--arch 784,512,256,10] [--batch 256] [--steps 50] [--threads 2] [--rounds 3]"
        " [--compare openblas]\n"
        "       ggmlc-bench decode-graph [--layers 4] [--embd 256] [--batch 1] [...] (bench/decode-graph.c)\n"
        "       ggmlc-bench --help | --version\n",
        out);
}

static void usage(void) { print_usage(stderr); }

static bool parse_type(const char *s, enum ggml_type *type) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) /* any type with a name: f32, q4_0, q4_K, iq4_nl, ... */
        if (ggml_type_size((enum ggml_type)t) != 0 && strcmp(s, ggml_type_name((enum ggml_type)t)) == 0)
            return *type = (enum ggml_type)t, true;
    return false;
}

static bool is_conv(const char *op) { return strcmp(op, "conv_2d") == 0 || strcmp(op, "conv_2d_direct") == 0; }

/* Whether the command line names option `name`. */
static bool arg_given(int argc, char **argv, const char *name) {
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return true;
    return false;
}

static bool parse_args(int argc, char **argv, struct options *o) {
    *o = (struct options){.backend = "cpu", .type = GGML_TYPE_F32, .btype = GGML_TYPE_F32, .m = 2048, .n = 2048, .k = 2048,
                          .size = 16 << 20, .nodes = 1000, .products = 1, .head = 64, .heads = 12, .kv_heads = 4, .threads = 2, .reps = 10, .rounds = 1};
    if (argc < 2) return false;
    o->op = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) { o->json = true; continue; }
        if (strcmp(a, "--chain") == 0) { o->chain = true; continue; }
        if (strcmp(a, "--reuse") == 0) { o->reuse = true; continue; }
        if (!v) return false;
        i++;
        if (strcmp(a, "--type") == 0) { if (!parse_type(v, &o->type)) return false; }
        else if (strcmp(a, "--btype") == 0) { if (!parse_type(v, &o->btype)) return false; }
        else if (strcmp(a, "--m") == 0) o->m = atoll(v);
        else if (strcmp(a, "--n") == 0) o->n = atoll(v);
        else if (strcmp(a, "--k") == 0) o->k = atoll(v);
        else if (strcmp(a, "--size") == 0) o->size = atoll(v);
        else if (strcmp(a, "--nodes") == 0) o->nodes = atoll(v);
        else if (strcmp(a, "--products") == 0) o->products = atoll(v);
        else if (strcmp(a, "--head") == 0) o->head = atoll(v);
        else if (strcmp(a, "--heads") == 0) o->heads = atoll(v);
        else if (strcmp(a, "--kv-heads") == 0) o->kv_heads = atoll(v);
        else if (strcmp(a, "--threads") == 0) o->threads = atoi(v);
        else if (strcmp(a, "--reps") == 0) o->reps = atoi(v);
        else if (strcmp(a, "--rounds") == 0) o->rounds = atoi(v);
        else if (strcmp(a, "--backend") == 0) o->backend = v;
        else if (strcmp(a, "--compare") == 0) {
            o->openblas = strcmp(v, "openblas") == 0;
            o->memcpy_ref = strcmp(v, "memcpy") == 0;
            if (!o->openblas && !o->memcpy_ref) return false;
        }
        else return false;
    }
    if (is_conv(o->op)) { /* image-sized defaults, unless given */
        bool given[3] = {false, false, false};
        for (int i = 2; i + 1 < argc; i++) {
            given[0] |= strcmp(argv[i], "--m") == 0;
            given[1] |= strcmp(argv[i], "--n") == 0;
            given[2] |= strcmp(argv[i], "--k") == 0;
        }
        if (!given[0]) o->m = 64;
        if (!given[1]) o->n = 64;
        if (!given[2]) o->k = 64;
    }
    if (strcmp(o->op, "flash_attn_ext") == 0) { /* a prompt's shape, unless given */
        if (!arg_given(argc, argv, "--m")) o->m = 512;
        if (!arg_given(argc, argv, "--k")) o->k = 512;
        if (!arg_given(argc, argv, "--type")) o->type = GGML_TYPE_F16;
        if (o->head <= 0 || o->kv_heads <= 0 || o->heads <= 0 || o->heads % o->kv_heads || o->k < o->m) return false;
    }
    return o->m > 0 && o->n > 0 && o->k > 0 && o->size > 0 && o->nodes > 0 && o->products > 0 && o->products <= 64 && (!o->chain || o->n >= o->k) && o->threads > 0 && o->reps > 0 && o->rounds > 0;
}

static void print_result(const struct options *o, const struct result *r) {
    const bool mm = strcmp(o->op, "mul_mat") == 0, overhead = strcmp(o->op, "graph-overhead") == 0;
    const double rate = r->work / r->median_s * 1e-9; /* GFLOPS or GB/s */
    if (o->json) {
        printf("{\"op\":\"%s\",\"backend\":\"%s\",\"threads\":%d,\"reps\":%d,\"rounds\":%d,\"median_ms\":%.4f", o->op,
               strcmp(o->op, "memcpy") == 0 || strcmp(o->op, "memread") == 0 ? "libc" : o->backend, o->threads, o->reps, o->rounds, r->median_s * 1e3);
        if (mm) printf(",\"type\":\"%s\",\"btype\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"products\":%lld,\"gflops\":%.2f,\"weights_gb_per_s\":%.2f",
                       ggml_type_name(o->type), ggml_type_name(o->btype), (long long)o->m, (long long)o->n, (long long)o->k,
                       (long long)o->products, rate, (double)ggml_row_size(o->type, o->k) * (double)o->n * (double)o->products / r->median_s * 1e-9);
        else if (overhead) printf(",\"nodes\":%lld,\"us_per_node\":%.4f", (long long)o->nodes, r->median_s * 1e6 / r->work);
        else printf(",\"bytes\":%.0f,\"gb_per_s\":%.2f", r->work, rate);
        if (r->openblas_s > 0)
            printf(",\"openblas_ms\":%.4f,\"openblas_gflops\":%.2f,\"ratio\":%.3f", r->openblas_s * 1e3,
                   r->work / r->openblas_s * 1e-9, r->ratio);
        if (r->memcpy_gbps > 0) printf(",\"memcpy_gb_per_s\":%.2f,\"of_memcpy\":%.3f", r->memcpy_gbps, r->of_memcpy);
        printf("}\n");
        return;
    }
    if (mm) printf("mul_mat %s%s%s m=%lld n=%lld k=%lld x%lld threads=%d backend=%s: %.3f ms (median of %d), %.1f GFLOPS, "
                   "%.2f GB/s of weights\n", ggml_type_name(o->type), o->btype == GGML_TYPE_F32 ? "" : " x ",
                   o->btype == GGML_TYPE_F32 ? "" : ggml_type_name(o->btype), (long long)o->m, (long long)o->n, (long long)o->k,
                   (long long)o->products, o->threads, o->backend, r->median_s * 1e3, o->reps, rate,
                   (double)ggml_row_size(o->type, o->k) * (double)o->n * (double)o->products / r->median_s * 1e-9);
    else if (is_conv(o->op)) printf("%s %s 3x3 %lldx%lldx2 %lld->%lld channels threads=%d: %.3f ms (median of %d), %.1f GFLOPS\n",
                                    o->op, ggml_type_name(o->type), (long long)o->m, (long long)o->m, (long long)o->k,
                                    (long long)o->n, o->threads, r->median_s * 1e3, o->reps, rate);
    else if (strcmp(o->op, "flash_attn_ext") == 0)
        printf("flash_attn_ext %s q %lldx%lldx%lld kv %lldx%lldx%lld causal backend=%s: %.3f ms (median of %d), %.1f GFLOPS (unmasked)\n",
               ggml_type_name(o->type), (long long)o->head, (long long)o->m, (long long)o->heads, (long long)o->head,
               (long long)o->k, (long long)o->kv_heads, o->backend, r->median_s * 1e3, o->reps, rate);
    else if (overhead) printf("graph-overhead: %lld adds in %.3f ms (median of %d): %.3f us per node\n", (long long)o->nodes,
                              r->median_s * 1e3, o->reps, r->median_s * 1e6 / r->work);
    else printf("%s %.1f MiB: %.3f ms (median of %d), %.1f GB/s\n", o->op, (double)o->size * 4 / (1 << 20),
                r->median_s * 1e3, o->reps, rate);
    if (r->openblas_s > 0)
        printf("openblas sgemm f32: %.3f ms, %.1f GFLOPS; ggmlc/openblas = %.3f\n", r->openblas_s * 1e3,
               r->work / r->openblas_s * 1e-9, r->ratio);
    if (r->memcpy_gbps > 0)
        printf("memcpy %.1f MiB: %.2f GB/s (median over %d rounds); weights GB/s / memcpy GB/s = %.0f%% (median of the rounds)\n",
               (double)o->size * 4 / (1 << 20), r->memcpy_gbps, o->rounds, 100 * r->of_memcpy);
}

/* -------------------------------------------------------------- matvec */

/* The matvec mode: weights of each type times 1 to 16 columns, the products of LLM decoding
 * and of small batches, against the read bandwidth and OpenBLAS in the same run. */
enum { MATVEC_TYPES = 5, MATVEC_COLS = 5 };
static const enum ggml_type matvec_default_types[MATVEC_TYPES] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                                          GGML_TYPE_Q4_0};
static const int matvec_cols[MATVEC_COLS] = {1, 2, 4, 8, 16};

struct matvec_bench {
    enum ggml_type types[MATVEC_TYPES];
    int n_types;
    struct ggml_context *ctx;
    struct graph_run runs[MATVEC_TYPES][MATVEC_COLS];
    /* per round: seconds of each product, of OpenBLAS (F32 only) and of the read reference */
    double *ours[MATVEC_TYPES][MATVEC_COLS], *blas[MATVEC_COLS], *memread_s[MATVEC_TYPES];
};

/* OpenBLAS's product of the same shape with `cols` columns: sgemv for one, else sgemm. */
typedef void (*sgemv_fn)(int order, int trans, int m, int n, float alpha, const float *a, int lda, const float *x,
                         int incx, float beta, float *y, int incy);
struct blas_matvec {
    struct sgemm_run gemm;
    sgemv_fn sgemv;
    int cols;
};

static bool run_blas_matvec(void *arg) {
    const struct blas_matvec *b = arg;
    enum { ROW_MAJOR = 101, NO_TRANS = 111 };
    if (b->cols > 1) {
        struct sgemm_run r = b->gemm;
        r.m = b->cols;
        return run_sgemm(&r);
    }
    b->sgemv(ROW_MAJOR, NO_TRANS, b->gemm.n, b->gemm.k, 1.0f, b->gemm.w, b->gemm.k, b->gemm.x, 1, 0.0f, b->gemm.c, 1);
    return true;
}

/* The weights of every type (--k values by --n rows), one activation matrix of 16 columns and a
 * graph per (type, columns); false with a message when something cannot be made. */
static bool matvec_setup(const struct options *o, ggml_backend_t backend, struct matvec_bench *mb) {
    const int64_t n_tensors = 1 + MATVEC_COLS + mb->n_types * (1 + MATVEC_COLS);
    const size_t size = (size_t)n_tensors * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size(n_tensors), false) +
                        mb->n_types * MATVEC_COLS * ggml_graph_overhead_custom(graph_size(1), false);
    mb->ctx = ggml_init((struct ggml_init_params){size, NULL, true});
    struct ggml_tensor *x = ggml_new_tensor_2d(mb->ctx, GGML_TYPE_F32, o->k, matvec_cols[MATVEC_COLS - 1]), *xs[MATVEC_COLS];
    for (int c = 0; c < MATVEC_COLS; c++) xs[c] = ggml_view_2d(mb->ctx, x, o->k, matvec_cols[c], x->nb[1], 0);
    struct ggml_tensor *out[MATVEC_TYPES][MATVEC_COLS];
    for (int t = 0; t < mb->n_types; t++) {
        struct ggml_tensor *w = ggml_new_tensor_2d(mb->ctx, mb->types[t], o->k, o->n);
        for (int c = 0; c < MATVEC_COLS; c++)
            if (!(out[t][c] = ggml_mul_mat(mb->ctx, w, xs[c]))) {
                tool_fail("ggmlc-bench", "%s", ggmlc_last_error());
                return false;
            }
    }
    if (!prepare_graph(&mb->runs[0][0], backend, mb->ctx, out[0][0], n_tensors)) return false;
    for (int t = 0; t < mb->n_types; t++)
        for (int c = 0; c < MATVEC_COLS; c++) {
            if (t == 0 && c == 0) continue;
            mb->runs[t][c] = mb->runs[0][0];
            mb->runs[t][c].graph = ggml_new_graph_custom(mb->ctx, graph_size(1), false);
            ggml_build_forward_expand(mb->runs[t][c].graph, out[t][c]);
        }
    return true;
}

/* One round: per type the read reference, then each product (F32: each followed by OpenBLAS's). */
static void matvec_round(const struct options *o, struct matvec_bench *mb, struct memread_run *mem,
                         struct blas_matvec *blas, int r) {
    for (int t = 0; t < mb->n_types; t++) {
        if (blas) settle();
        mb->memread_s[t][r] = median_time(run_memread, mem, o->reps);
        for (int c = 0; c < MATVEC_COLS; c++) {
            if (blas) settle();
            mb->ours[t][c][r] = median_time(run_graph, &mb->runs[t][c], o->reps);
            if (!blas || mb->types[t] != GGML_TYPE_F32) continue;
            blas->cols = matvec_cols[c];
            mb->blas[c][r] = median_time(run_blas_matvec, blas, o->reps);
        }
    }
}

/* Median over the rounds of num[r] / den[r] (den NULL: of num[r]). */
static double median_ratio(const double *num, const double *den, int rounds) {
    double *v = malloc((size_t)rounds * sizeof(double));
    for (int r = 0; r < rounds; r++) v[r] = den ? num[r] / den[r] : num[r];
    const double med = median_of(v, rounds);
    free(v);
    return med;
}

static void matvec_report(const struct options *o, struct matvec_bench *mb, bool blas) {
    printf("matvec k=%lld n=%lld threads=%d, medians of %d runs, then over %d rounds; memread of %.1f MiB alternates "
           "with each type%s\n",
           (long long)o->k, (long long)o->n, o->threads, o->reps, o->rounds, (double)o->size * 4 / (1 << 20),
           blas ? ", OpenBLAS (sgemv, or sgemm for several columns) with each F32 product" : "");
    printf("%-5s %4s %9s %12s %9s %10s %10s %12s\n", "type", "cols", "ms", "GB/s weights", "memread", "of memread",
           "vs 1 col", blas ? "openblas ms" : "");
    for (int t = 0; t < mb->n_types; t++) {
        const double bytes = (double)ggml_row_size(mb->types[t], o->k) * (double)o->n;
        double *rate = malloc((size_t)o->rounds * sizeof(double)), *mem_rate = malloc((size_t)o->rounds * sizeof(double));
        for (int r = 0; r < o->rounds; r++) mem_rate[r] = (double)o->size * 4 / mb->memread_s[t][r] * 1e-9;
        for (int c = 0; c < MATVEC_COLS; c++) {
            for (int r = 0; r < o->rounds; r++) rate[r] = bytes / mb->ours[t][c][r] * 1e-9;
            printf("%-5s %4d %9.3f %12.2f %9.2f %9.0f%% %9.2fx", ggml_type_name(mb->types[t]), matvec_cols[c],
                   1e3 * median_ratio(mb->ours[t][c], NULL, o->rounds), median_ratio(rate, NULL, o->rounds),
                   median_ratio(mem_rate, NULL, o->rounds), 100 * median_ratio(rate, mem_rate, o->rounds),
                   median_ratio(mb->ours[t][c], mb->ours[t][0], o->rounds));
            if (blas && mb->types[t] == GGML_TYPE_F32)
                printf(" %12.3f  ggmlc/openblas %.3f", 1e3 * median_ratio(mb->blas[c], NULL, o->rounds),
                       median_ratio(mb->blas[c], mb->ours[t][c], o->rounds));
            printf("\n");
        }
        free(rate);
        free(mem_rate);
    }
}

/* ggmlc-bench matvec [--k 4096] [--n 14336] [--threads 2] [--reps 10] [--rounds 3] [--size ELEMENTS]
 * [--compare openblas]: every type of matvec_types times every count of matvec_cols. */
static int bench_matvec(int argc, char **argv) {
    struct options o;
    if (!parse_args(argc, argv, &o) || o.memcpy_ref || o.threads > 64) {
        usage();
        return 2;
    }
    if (!arg_given(argc, argv, "--k")) o.k = 4096;
    if (!arg_given(argc, argv, "--n")) o.n = 14336;
    if (!arg_given(argc, argv, "--size")) o.size = o.k * o.n; /* as many bytes as the F32 weights */
    if (!arg_given(argc, argv, "--rounds")) o.rounds = 3;
    o.m = matvec_cols[MATVEC_COLS - 1];
    ggml_backend_t backend = open_backend(&o);
    struct matvec_bench mb = {.n_types = arg_given(argc, argv, "--type") ? 1 : MATVEC_TYPES};
    for (int t = 0; t < mb.n_types; t++) mb.types[t] = mb.n_types == 1 ? o.type : matvec_default_types[t];
    if (!backend || !matvec_setup(&o, backend, &mb)) return 1;
    struct blas_matvec blas;
    const bool blas_ok = o.openblas && openblas_open(&o, &blas.gemm) &&
                         (blas.sgemv = (sgemv_fn)(uintptr_t)dlsym(dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL), "cblas_sgemv"));
    struct memread_run mem = {.words = (size_t)o.size * sizeof(float) / sizeof(uint64_t), .threads = o.threads};
    uint64_t *data = malloc(mem.words * sizeof *data);
    for (size_t i = 0; i < mem.words; i++) data[i] = i;
    mem.data = data;
    for (int t = 0; t < mb.n_types; t++) {
        mb.memread_s[t] = calloc((size_t)o.rounds, sizeof(double));
        for (int c = 0; c < MATVEC_COLS; c++) mb.ours[t][c] = calloc((size_t)o.rounds, sizeof(double));
    }
    for (int c = 0; c < MATVEC_COLS; c++) mb.blas[c] = calloc((size_t)o.rounds, sizeof(double));
    for (int r = 0; r < o.rounds; r++) matvec_round(&o, &mb, &mem, blas_ok ? &blas : NULL, r);
    matvec_report(&o, &mb, blas_ok);
    for (int t = 0; t < mb.n_types; t++) {
        free(mb.memread_s[t]);
        for (int c = 0; c < MATVEC_COLS; c++) free(mb.ours[t][c]);
    }
    for (int c = 0; c < MATVEC_COLS; c++) free(mb.blas[c]);
    if (blas_ok) openblas_close(&blas.gemm);
    free(data);
    ggml_backend_buffer_free(mb.runs[0][0].buffer);
    ggml_free(mb.ctx);
    ggml_backend_free(backend);
    return 0;
}

int main(int argc, char **argv) {
    if (tool_answer_standard_option(argc, argv, "ggmlc-bench", print_usage)) return 0;
    tool_hold_error_logs(); /* each failure printed once: tool-options.h */
    if (argc > 1 && strcmp(argv[1], "train-step") == 0) return bench_train_step(argc, argv);
    if (argc > 1 && (strcmp(argv[1], "eager-mlp") == 0 || strcmp(argv[1], "eager-op") == 0))
        return bench_eager(argc, argv);
    if (argc > 1 && strcmp(argv[1], "train-epoch") == 0) return bench_train_epoch(argc, argv);
    if (argc > 1 && strcmp(argv[1], "matvec") == 0) return bench_matvec(argc, argv);
    if (argc > 1 && strcmp(argv[1], "decode-graph") == 0)
        return decode_graph_main(argc - 1, argv + 1); /* bench/decode-graph.c */
    struct options o;
    if (!parse_args(argc, argv, &o)) {
        usage();
        return 2;
    }
    struct result r = {0};
    bool ok;
    if (strcmp(o.op, "mul_mat") == 0) ok = bench_mul_mat(&o, &r);
    else if (strcmp(o.op, "add") == 0 || strcmp(o.op, "mul") == 0 || strcmp(o.op, "soft_max") == 0 || unary_by_name(o.op, &(enum ggml_unary_op){0}))
        ok = bench_elementwise(&o, &r);
    else if (strcmp(o.op, "memcpy") == 0) ok = bench_memcpy(&o, &r);
    else if (strcmp(o.op, "memread") == 0) ok = bench_memread(&o, &r);
    else if (strcmp(o.op, "graph-overhead") == 0) ok = bench_graph_overhead(&o, &r);
    else if (is_conv(o.op)) ok = bench_conv_2d(&o, &r);
    else if (strcmp(o.op, "flash_attn_ext") == 0) ok = bench_flash_attn(&o, &r);
    else {
        usage();
        return 2;
    }
    if (!ok) return 1;
    print_result(&o, &r);
    return 0;
}
