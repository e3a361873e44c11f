/*
 * test-vulkan-fuse.c - the Vulkan plugin records some pairs of adjacent nodes as one dispatch
 * (plugins/vulkan/vk-fuse.c): a norm and the mul by its weight, a float mat-vec product and
 * the add after it, a rope and the set_rows of its rows into a cache.  Each case computes a
 * small graph on Vulkan and on the CPU backend and compares every output, and counts the
 * dispatches the plugin logs (GGMLC_DEBUG=vulkan): one fewer per fused pair, none fewer where
 * the pair is not adjacent or does not fit.  Where the first node's result is also an output
 * or read by another node, the pair is still fused (the fused kernels write that result too)
 * and that result is compared as well.  Where ggml-alloc put the add's result on the memory of
 * the product's activations (dead after the product), the pair is not fused: every workgroup of
 * a mat-vec reads all of them.  A fused set_rows checks its indices as set_rows does.
 * With GGMLC_VK_FUSE=0 (test-vulkan-fuse-off.sh) the same cases must give the same values
 * with every node its own dispatch; with GGMLC_VK_MVQ_KERNEL=dot (test-vulkan-fuse-dot.sh), or
 * on a device with fast integer dot products (caps "int-dot"), the quantized products take the
 * integer-dot kernels, as on an H200: fused, each product quantizes
 * its activations itself (no quantize-q8 dispatch before it) and a product's add comes along;
 * with GGMLC_VK_MVQ_SELF=0 too (test-vulkan-fuse-apart.sh) the activations are quantized apart
 * from the products, as for large weights, and by the norm, GLU or attention that makes them
 * where one does.
 * Skipped, visibly, when there is no Vulkan device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

enum { MAX_OUT = 3, MAX_VALUES = 1 << 14 };

/* A case's graph: its outputs (compared), built in ctx. */
struct built {
    struct ggml_tensor *out[MAX_OUT];
    int n_out;
};

struct fuse_case {
    const char *name;
    void (*build)(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b);
    int dispatches_fused, dispatches_unfused;
    double max_nmse;
    /* on the integer-dot kernels (GGMLC_VK_MVQ_KERNEL=dot, as on an H200), where they differ (0: the same) */
    int dot_fused, dot_unfused;
    /* ... with the activations quantized apart from the products (GGMLC_VK_MVQ_SELF=0, as for an
     * H200's large weights), fused, where that differs from dot_fused (0: the same) */
    int apart_fused;
};

static int64_t index_rows[2]; /* the set_rows index values of the next graph */
static int last_dispatches;   /* from the plugin's log */

static void count_log(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)user;
    const char *at = strstr(text, "nodes: ");
    if (strstr(text, "graph of") && at) last_dispatches = atoi(at + strlen("nodes: "));
}

static struct ggml_tensor *input(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    struct ggml_tensor *t = ggml_new_tensor_3d(ctx, type, ne0, ne1, ne2);
    ggml_set_input(t);
    return t;
}

static void output(struct ggml_cgraph *gf, struct built *b, struct ggml_tensor *t) {
    ggml_set_output(t);
    ggml_build_forward_expand(gf, t);
    b->out[b->n_out++] = t;
}

/* ------------------------------------------------------------- the graphs */

static void norm_mul(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 96, 5, 1), *w = input(ctx, GGML_TYPE_F32, 96, 1, 1);
    output(gf, b, ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), w));
}

/* rows longer than 256 invocations keep in registers: a larger workgroup (ops-reduce.c's row_block) */
static void norm_mul_long_rows(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 2500, 3, 1), *w = input(ctx, GGML_TYPE_F32, 2500, 1, 1);
    output(gf, b, ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), w));
}

/* rows longer than rows.comp keeps in registers with its largest workgroup: the rest read again
 * for the variance and the store */
static void norm_mul_longer_rows(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 9000, 1, 1), *w = input(ctx, GGML_TYPE_F32, 9000, 1, 1);
    output(gf, b, ggml_mul(ctx, ggml_norm(ctx, x, 1e-5f), w));
}

static void norm_mul_weight_rows(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 64, 3, 4), *w = input(ctx, GGML_TYPE_F32, 64, 1, 2);
    output(gf, b, ggml_mul(ctx, ggml_norm(ctx, x, 1e-5f), w));
}

static void norm_output_too(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 96, 5, 1), *w = input(ctx, GGML_TYPE_F32, 96, 1, 1);
    struct ggml_tensor *n = ggml_rms_norm(ctx, x, 1e-5f);
    output(gf, b, n);
    output(gf, b, ggml_mul(ctx, n, w));
}

static void norm_read_again(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 96, 5, 1), *w = input(ctx, GGML_TYPE_F32, 96, 1, 1);
    struct ggml_tensor *n = ggml_rms_norm(ctx, x, 1e-5f);
    output(gf, b, ggml_add(ctx, ggml_mul(ctx, n, w), n));
}

static void norm_not_adjacent(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 96, 5, 1), *w = input(ctx, GGML_TYPE_F32, 96, 1, 1);
    struct ggml_tensor *n = ggml_rms_norm(ctx, x, 1e-5f);
    ggml_build_forward_expand(gf, n);
    output(gf, b, ggml_scale(ctx, x, 2.0f)); /* between the norm and its mul */
    output(gf, b, ggml_mul(ctx, n, w));
}

static void mat_vec_add_k(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b, enum ggml_type wt, int k,
                          int rows) {
    struct ggml_tensor *w = input(ctx, wt, k, rows, 1), *x = input(ctx, GGML_TYPE_F32, k, 1, 1);
    struct ggml_tensor *r = input(ctx, GGML_TYPE_F32, rows, 1, 1);
    output(gf, b, ggml_add(ctx, r, ggml_mul_mat(ctx, w, x)));
}

static void mat_vec_add(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b, enum ggml_type wt) {
    mat_vec_add_k(ctx, gf, b, wt, 128, 48);
}

static void mat_vec_add_f32(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    mat_vec_add(ctx, gf, b, GGML_TYPE_F32);
}

static void mat_vec_add_f16(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    mat_vec_add(ctx, gf, b, GGML_TYPE_F16);
}

static void mat_vec_add_q4_0(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    mat_vec_add(ctx, gf, b, GGML_TYPE_Q4_0);
}

/* A decode layer's down projection: b of 2048 values, which each workgroup of the integer-dot
 * kernel quantizes whole before its rows. */
static void mat_vec_add_q8_0_long(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    mat_vec_add_k(ctx, gf, b, GGML_TYPE_Q8_0, 2048, 8);
}

/* A decode layer's q, k, v: three q8_0 products of one activation vector. */
static void q8_0_three_products(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 256, 1, 1);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 48, 1), x));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 16, 1), x));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 16, 1), x));
}

/* A decode layer's attention input: the norm and its mul, read by three q8_0 and q4_0 products
 * (two columns); where the products read their activations quantized apart, the fused norm writes
 * them so too (rows_mul_q8_f32), so no quantize-q8 dispatch is left. */
static void norm_mul_three_products(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 256, 2, 1), *w = input(ctx, GGML_TYPE_F32, 256, 1, 1);
    struct ggml_tensor *h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), w);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 48, 1), h));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q4_0, 256, 16, 1), h));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 16, 1), h));
}

/* A decode layer's down projection: the GLU quantizes its result too (glu_q8_f32). */
static void swiglu_product(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *g = input(ctx, GGML_TYPE_F32, 320, 3, 1), *u = input(ctx, GGML_TYPE_F32, 320, 3, 1);
    struct ggml_tensor *h = ggml_swiglu_split(ctx, g, u);
    output(gf, b, h);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q4_0, 320, 40, 1), h));
}

/* The halves of one tensor, quantized likewise. */
static void geglu_halves_product(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *h = ggml_geglu(ctx, input(ctx, GGML_TYPE_F32, 128, 1, 1));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 64, 24, 1), h));
}

/* A decode layer's attention output, its heads reshaped into one vector for the output projection:
 * the vector kernel quantizes it too (fattn_vec_*_q8), with sinks or without. */
static void attention_product(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b, bool sinks) {
    struct ggml_tensor *q = input(ctx, GGML_TYPE_F32, 64, 1, 8);
    struct ggml_tensor *k = input(ctx, GGML_TYPE_F16, 64, 40, 2), *v = input(ctx, GGML_TYPE_F16, 64, 40, 2);
    struct ggml_tensor *a = ggml_flash_attn_ext(ctx, q, k, v, input(ctx, GGML_TYPE_F16, 40, 1, 1), 0.125f, 0.0f, 0.0f);
    if (sinks) ggml_flash_attn_ext_add_sinks(a, input(ctx, GGML_TYPE_F32, 8, 1, 1));
    output(gf, b, a);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q4_0, 512, 32, 1), ggml_reshape_2d(ctx, a, 512, 1)));
}

static void attention_product_plain(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    attention_product(ctx, gf, b, false);
}

static void attention_sinks_product(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    attention_product(ctx, gf, b, true);
}

/* 3 columns of activations in 2 batches, the weights broadcast over them. */
static void q4_0_columns_batches(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q4_0, 128, 40, 1), input(ctx, GGML_TYPE_F32, 128, 3, 2)));
}

/* Activations that start 4 bytes into their tensor: not 16-byte aligned. */
static void q4_k_unaligned_column(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = ggml_view_1d(ctx, input(ctx, GGML_TYPE_F32, 260, 1, 1), 256, sizeof(float));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q4_K, 256, 24, 1), x));
}

static void product_read_again(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *w = input(ctx, GGML_TYPE_F32, 128, 48, 1), *x = input(ctx, GGML_TYPE_F32, 128, 1, 1);
    struct ggml_tensor *r = input(ctx, GGML_TYPE_F32, 48, 1, 1);
    struct ggml_tensor *p = ggml_mul_mat(ctx, w, x);
    output(gf, b, ggml_mul(ctx, ggml_add(ctx, p, r), p));
}

/* x dies with the product, which is read again after the add: ggml-alloc gives x's memory to the
 * add's result, which a fused kernel would write while other workgroups still read x (not fused). */
static struct ggml_tensor *dying_x, *add_on_x;
static void add_on_the_activations(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *w = input(ctx, GGML_TYPE_F32, 256, 64, 1), *r = input(ctx, GGML_TYPE_F32, 64, 1, 1);
    dying_x = ggml_scale(ctx, input(ctx, GGML_TYPE_F32, 256, 1, 1), 0.5f);
    struct ggml_tensor *p = ggml_mul_mat(ctx, w, dying_x);
    add_on_x = ggml_add(ctx, r, p);
    output(gf, b, ggml_mul(ctx, add_on_x, p));
}

static void add_broadcast(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *w = input(ctx, GGML_TYPE_F32, 128, 48, 1), *x = input(ctx, GGML_TYPE_F32, 128, 2, 1);
    struct ggml_tensor *r = input(ctx, GGML_TYPE_F32, 48, 1, 1); /* broadcast over the 2 columns: not fused */
    output(gf, b, ggml_add(ctx, ggml_mul_mat(ctx, w, x), r));
}

/* k: [16, 4 heads, 2 tokens] roped, its rows stored at rows index_rows of an 8-row cache. */
static void rope_set_rows(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b, int mode,
                          enum ggml_type cache_type, enum ggml_type index_type) {
    struct ggml_tensor *k = input(ctx, GGML_TYPE_F32, 16, 4, 2), *pos = input(ctx, GGML_TYPE_I32, 2, 1, 1);
    struct ggml_tensor *cache = input(ctx, cache_type, 64, 8, 1), *idx = input(ctx, index_type, 2, 1, 1);
    ggml_set_name(idx, "rows");
    struct ggml_tensor *r = ggml_rope_ext(ctx, k, pos, NULL, 16, mode, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    output(gf, b, r);
    output(gf, b, ggml_set_rows(ctx, cache, ggml_reshape_2d(ctx, r, 64, 2), idx));
}

static void rope_f16_i64(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    rope_set_rows(ctx, gf, b, 0, GGML_TYPE_F16, GGML_TYPE_I64);
}

static void rope_neox_f32_i32(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    rope_set_rows(ctx, gf, b, GGML_ROPE_TYPE_NEOX, GGML_TYPE_F32, GGML_TYPE_I32);
}

static const struct fuse_case cases[] = {
    {"rms_norm then mul by a weight row", norm_mul, 1, 2, 1e-10},
    {"norm then mul by weight rows broadcast", norm_mul_weight_rows, 1, 2, 1e-10},
    {"rms_norm then mul of rows of 2500 values", norm_mul_long_rows, 1, 2, 1e-10},
    {"norm then mul of rows of 9000 values", norm_mul_longer_rows, 1, 2, 1e-10},
    {"the norm also an output", norm_output_too, 1, 2, 1e-10},
    {"the norm read again after the mul", norm_read_again, 2, 3, 1e-10},
    {"a node between the norm and its mul", norm_not_adjacent, 3, 3, 1e-10},
    {"f32 mat-vec then add", mat_vec_add_f32, 1, 2, 1e-10},
    {"f16 mat-vec then add", mat_vec_add_f16, 1, 2, 1e-6}, /* the CPU rounds the activations to f16 (vk-test-cases.h) */
    /* the integer-dot kernel (with b's quantization first), where GGMLC_VK_MVQ_KERNEL=dot or the
     * device takes it: fused; the float-activation q4_0 kernels have no fused form */
    {"q4_0 mat-vec then add", mat_vec_add_q4_0, 2, 2, 1e-4, 1, 3, 2},
    {"q8_0 mat-vec of 2048-value rows then add", mat_vec_add_q8_0_long, 2, 2, 1e-4, 1, 3, 2},
    /* the float-activation kernels: a dispatch per product; the integer-dot ones: b quantized first, unfused */
    {"three q8_0 products of one vector", q8_0_three_products, 3, 3, 1e-4, 3, 4, 4},
    {"a q4_0 product of 3 columns in 2 batches", q4_0_columns_batches, 1, 1, 1e-4, 1, 2, 2},
    {"a q4_K product of an unaligned column", q4_k_unaligned_column, 1, 1, 1e-4, 1, 2, 2},
    {"rms_norm and mul read by three products", norm_mul_three_products, 4, 5, 1e-4, 4, 6},
    {"swiglu read by a q4_0 product", swiglu_product, 2, 2, 1e-4, 2, 3},
    {"geglu of halves read by a q8_0 product", geglu_halves_product, 2, 2, 1e-4, 2, 3},
    {"decode attention read by a q4_0 product", attention_product_plain, 2, 2, 1e-4, 2, 3},
    {"decode attention with sinks read by a q4_0 product", attention_sinks_product, 2, 2, 1e-4, 2, 3},
    {"the product read again after the add", product_read_again, 2, 3, 1e-10},
    {"an add that broadcasts (not fused)", add_broadcast, 2, 2, 1e-10},
    {"an add whose result lies on the product's activations (not fused)", add_on_the_activations, 4, 4, 1e-10},
    {"rope then set_rows into an f16 cache (i64 rows)", rope_f16_i64, 1, 2, 1e-6},
    {"NeoX rope then set_rows into an f32 cache (i32 rows)", rope_neox_f32_i32, 1, 2, 1e-10},
};

/* ------------------------------------------------------------ computing */

static void fill_input(struct ggml_tensor *t, uint64_t seed) {
    static float f[MAX_VALUES];
    static char bytes[MAX_VALUES * 4];
    const int64_t n = ggml_nelements(t);
    test_seed(seed);
    test_fill_uniform(f, (size_t)n, -1.0f, 1.0f);
    if (t->type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(f, (ggml_fp16_t *)bytes, n);
    } else if (ggml_is_quantized(t->type)) {
        ggml_quantize_chunk(t->type, f, bytes, 0, n / t->ne[0], t->ne[0], NULL);
    } else if (strcmp(t->name, "rows") == 0 && t->type == GGML_TYPE_I32) {
        for (int64_t i = 0; i < n; i++) ((int32_t *)bytes)[i] = (int32_t)index_rows[i % 2];
    } else if (strcmp(t->name, "rows") == 0) {
        for (int64_t i = 0; i < n; i++) ((int64_t *)bytes)[i] = index_rows[i % 2];
    } else if (t->type == GGML_TYPE_I32) {
        for (int64_t i = 0; i < n; i++) ((int32_t *)bytes)[i] = (int32_t)(7 * i + 3); /* positions */
    } else {
        memcpy(bytes, f, (size_t)n * sizeof *f);
    }
    ggml_backend_tensor_set(t, bytes, 0, ggml_nbytes(t));
}

/* The values of t as floats (f16 converted). */
static void read_output(const struct ggml_tensor *t, float *out) {
    if (t->type == GGML_TYPE_F16) {
        static ggml_fp16_t h[MAX_VALUES];
        ggml_backend_tensor_get(t, h, 0, ggml_nbytes(t));
        ggml_fp16_to_fp32_row(h, out, ggml_nelements(t));
    } else {
        ggml_backend_tensor_get(t, out, 0, ggml_nbytes(t));
    }
}

/* Compute c's graph on backend into out[k] (each output's values); the status in *st. */
static bool compute(ggml_backend_t backend, const struct fuse_case *c, float out[MAX_OUT][MAX_VALUES],
                    enum ggml_status *st) {
    static char meta[1 << 20];
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 64, false);
    struct built b = {0};
    c->build(ctx, gf, &b);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    bool ok = ggml_gallocr_alloc_graph(galloc, gf);
    if (ok) {
        uint64_t seed = 1;
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (t->flags & GGML_TENSOR_FLAG_INPUT) fill_input(t, seed++);
        last_dispatches = -1;
        if (c->build == add_on_the_activations)
            tap_ok(add_on_x->data == dying_x->data, "%s: ggml-alloc placed the add's result on x (%s)", c->name,
                   ggml_backend_name(backend));
        *st = ggml_backend_graph_compute(backend, gf);
        for (int k = 0; k < b.n_out && *st == GGML_STATUS_SUCCESS; k++) read_output(b.out[k], out[k]);
    }
    ggml_gallocr_free(galloc);
    ggml_free(ctx);
    return ok;
}

static ggml_backend_t cpu, vk;
static bool fusing, dot_kernel, quantized_apart;

/* Whether the device's caps (ggmlc_device_caps) hold word as a whole word */
static bool has_cap(ggml_backend_t backend, const char *word) {
    const char *caps = ggmlc_device_caps(ggml_backend_get_device(backend)), *at = caps;
    const size_t n = strlen(word);
    while (at && (at = strstr(at, word)) != NULL) {
        if ((at == caps || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0')) return true;
        at += n;
    }
    return false;
}

static void check(const struct fuse_case *c) {
    static float got[MAX_OUT][MAX_VALUES], want[MAX_OUT][MAX_VALUES];
    enum ggml_status st_cpu = GGML_STATUS_FAILED, st_vk = GGML_STATUS_FAILED;
    index_rows[0] = 5, index_rows[1] = 2;
    const bool ran = compute(cpu, c, want, &st_cpu) && compute(vk, c, got, &st_vk);
    if (!tap_ok(ran && st_cpu == GGML_STATUS_SUCCESS && st_vk == GGML_STATUS_SUCCESS, "%s: computed (%s)", c->name,
                ggmlc_last_error()))
        return;
    static char meta[1 << 16];
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 64, false);
    struct built b = {0};
    c->build(ctx, gf, &b);
    for (int k = 0; k < b.n_out; k++)
        ok_nmse(got[k], want[k], (size_t)ggml_nelements(b.out[k]), c->max_nmse, "%s: output %d (%s) as on the CPU",
                c->name, k, ggml_op_desc(b.out[k]));
    ggml_free(ctx);
    int want_dispatches = fusing ? c->dispatches_fused : c->dispatches_unfused;
    const int dot_dispatches = fusing ? c->dot_fused : c->dot_unfused;
    if (dot_kernel && dot_dispatches) want_dispatches = dot_dispatches;
    if (dot_kernel && quantized_apart && fusing && c->apart_fused) want_dispatches = c->apart_fused;
    tap_ok(last_dispatches == want_dispatches, "%s: %d dispatches (%d expected%s)", c->name, last_dispatches,
           want_dispatches, fusing ? "" : ", GGMLC_VK_FUSE=0");
}

/* A set_rows index out of range fails the graph, fused or not, naming the node. */
static void check_bad_index(void) {
    static float got[MAX_OUT][MAX_VALUES];
    enum ggml_status st = GGML_STATUS_SUCCESS;
    index_rows[0] = 5, index_rows[1] = 8; /* the cache has 8 rows */
    const struct fuse_case c = {"bad index", rope_f16_i64, 1, 2, 0};
    const bool ran = compute(vk, &c, got, &st);
    tap_ok(ran && st != GGML_STATUS_SUCCESS && strstr(ggmlc_last_error(), "index 8 at [1, 0, 0]") &&
               strstr(ggmlc_last_error(), "out of range [0, 8)"),
           "rope then set_rows with an index out of range: the graph fails (%s)", ggmlc_last_error());
}

int main(void) {
    if (!test_vulkan_env()) return tap_skip_all("GGMLC_BUILDDIR is not set");
    setenv("GGMLC_DEBUG", "vulkan", 1);
    const char *fuse = getenv("GGMLC_VK_FUSE");
    fusing = !fuse || (strcmp(fuse, "0") != 0 && strcmp(fuse, "off") != 0);
    const char *mvq = getenv("GGMLC_VK_MVQ_KERNEL");
    const char *self = getenv("GGMLC_VK_MVQ_SELF");
    quantized_apart = self && strcmp(self, "0") == 0;
    ggml_log_set(count_log, NULL);
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    cpu = ggml_backend_init_by_name("cpu", NULL);
    vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    /* the integer-dot kernels: named, or the device's own choice where its dot products are fast
     * (an NVIDIA GPU's; lavapipe's are emulated) */
    dot_kernel = mvq ? strcmp(mvq, "dot") == 0 : vk && has_cap(vk, "int-dot");
    if (tap_ok(cpu && vk, "the CPU and Vulkan backends")) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
        check_bad_index();
    }
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    return tap_done();
}
