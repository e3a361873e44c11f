/*
 * test-vulkan.c - every op the Vulkan plugin claims, computed on Vulkan and
 * on the CPU backend from the same random inputs, compared by NMSE with a
 * threshold per op; plus the plugin's error paths (oversized buffers,
 * tensors outside its memory).
 *
 * The backend under test is $GGMLC_TEST_BACKEND (default "vulkan"), so the
 * same cases can check any other GPU plugin.  The whole program is skipped,
 * with the reason, only when that backend has no device (no Vulkan driver).
 *
 * Op constructors land in core progressively; they are weak references here
 * so that a case whose constructor is missing is skipped visibly instead of
 * breaking the link.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"
#include "vk-test-cases.h"

static ggml_backend_t backend_test, backend_cpu;
static char cache_dir[1024]; /* where the plugin's pipeline cache goes during the test */

/* ------------------------------------------------------------ inputs */

/* Fill kinds by name prefix: "pos:" positive values, "big:" in [-30, 30), "wide:" i32 values spread over
 * the whole range (odd multiples of a large constant, so a trip through f32 would change them), "idx<N>:"
 * integers in [0, N), "uniq<N>:" integers in [0, N) distinct within each row, "causal:"
 * 0 where i0 <= 3 * i1 and -inf elsewhere (row 0 sees 1 key: attention masks), "tril<N>:" 0 where
 * i0 <= i1 + N and -inf elsewhere (a prompt's causal mask after N cached keys), "rtril<N>:" values in
 * [-1, 1) where i0 <= i1 + N + 16 * plane (each plane of rows a mask of its own) and -inf elsewhere, "q8:" integers in
 * [-127, 127] with 127 first in every 32 (every 8-bit block format of activations holds them exactly,
 * with scale 1, whatever its block length). */
static void fill_leaf(struct ggml_tensor *t) {
    const int64_t n = ggml_nelements(t);
    float lo = -1.0f, hi = 1.0f;
    int idx_max = 0;
    if (strncmp(t->name, "pos:", 4) == 0) lo = 0.1f, hi = 2.0f;
    if (strncmp(t->name, "big:", 4) == 0) lo = -30.0f, hi = 30.0f;
    if (sscanf(t->name, "idx%d:", &idx_max) != 1) idx_max = 0;
    int uniq_max = 0;
    if (sscanf(t->name, "uniq%d:", &uniq_max) != 1) uniq_max = 0;
    const bool wide = strncmp(t->name, "wide:", 5) == 0; /* i32 over the whole range: most not representable in f32 */
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = idx_max > 0 ? (float)(int)test_uniform(0.0f, (float)idx_max) : test_uniform(lo, hi);
    if (strncmp(t->name, "q8:", 3) == 0)
        for (int64_t i = 0; i < n; i++) v[i] = i % 32 == 0 ? 127.0f : fminf(127.0f, floorf(test_uniform(-127.0f, 128.0f)));
    if (strncmp(t->name, "causal:", 7) == 0)
        for (int64_t i = 0; i < n; i++) v[i] = i % t->ne[0] <= 3 * ((i / t->ne[0]) % t->ne[1]) ? 0.0f : -INFINITY;
    int tril = 0;
    if (sscanf(t->name, "tril%d:", &tril) == 1)
        for (int64_t i = 0; i < n; i++) v[i] = i % t->ne[0] <= tril + (i / t->ne[0]) % t->ne[1] ? 0.0f : -INFINITY;
    if (sscanf(t->name, "rtril%d:", &tril) == 1)
        for (int64_t i = 0; i < n; i++)
            if (i % t->ne[0] > tril + (i / t->ne[0]) % t->ne[1] + 16 * (i / (t->ne[0] * t->ne[1]))) v[i] = -INFINITY;
    int *pool = uniq_max >= t->ne[0] ? malloc(sizeof(int) * (size_t)uniq_max) : NULL;
    for (int64_t row = 0; pool && row < n / t->ne[0]; row++) { /* partial Fisher-Yates */
        for (int k = 0; k < uniq_max; k++) pool[k] = k;
        for (int64_t k = 0; k < t->ne[0]; k++) {
            const int j = (int)k + (int)test_uniform(0.0f, (float)(uniq_max - k));
            const int tmp = pool[k];
            pool[k] = pool[j];
            pool[j] = tmp;
            v[row * t->ne[0] + k] = (float)pool[k];
        }
    }
    free(pool);
    const size_t nbytes = ggml_nbytes(t);
    void *raw = malloc(nbytes);
    switch (t->type) {
    case GGML_TYPE_F32: memcpy(raw, v, nbytes); break;
    case GGML_TYPE_F16: for (int64_t i = 0; i < n; i++) ((ggml_fp16_t *)raw)[i] = ggml_fp32_to_fp16(v[i]); break;
    case GGML_TYPE_BF16: for (int64_t i = 0; i < n; i++) ((ggml_bf16_t *)raw)[i] = ggml_fp32_to_bf16(v[i]); break;
    case GGML_TYPE_I32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)raw)[i] = wide ? (int32_t)(0x9E3779B1u * (uint32_t)(i + 1)) : (int32_t)v[i];
        break;
    case GGML_TYPE_I16:
        for (int64_t i = 0; i < n; i++) ((int16_t *)raw)[i] = wide ? (int16_t)(uint16_t)(0x9E37u * (uint32_t)(i + 1)) : (int16_t)v[i];
        break;
    case GGML_TYPE_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)raw)[i] = (int64_t)v[i]; break;
    default: ggml_quantize_chunk(t->type, v, raw, 0, ggml_nrows(t), t->ne[0], NULL); break;
    }
    ggml_backend_tensor_set(t, raw, 0, nbytes);
    free(raw);
    free(v);
}

/* Read any float/int tensor (views included) as floats in logical order; i32 as its low 24 bits, which
 * f32 holds exactly (a kernel that sent large values through f32 would change those). */
static float *read_f32(const struct ggml_tensor *t) {
    const int64_t n = ggml_nelements(t);
    const size_t nbytes = ggml_nbytes(t);
    unsigned char *raw = malloc(nbytes);
    float *out = malloc((size_t)n * sizeof *out);
    ggml_backend_tensor_get(t, raw, 0, nbytes);
    for (int64_t i = 0; i < n; i++) {
        int64_t i0, i1, i2, i3;
        ggml_unravel_index(t, i, &i0, &i1, &i2, &i3);
        const unsigned char *p = raw + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
        switch (t->type) {
        case GGML_TYPE_F32: memcpy(&out[i], p, 4); break;
        case GGML_TYPE_F16: { ggml_fp16_t h; memcpy(&h, p, 2); out[i] = ggml_fp16_to_fp32(h); break; }
        case GGML_TYPE_BF16: { ggml_bf16_t h; memcpy(&h, p, 2); out[i] = ggml_bf16_to_fp32(h); break; }
        case GGML_TYPE_I32: { int32_t x; memcpy(&x, p, 4); out[i] = (float)(x & 0xffffff); break; } /* exact bits */
        case GGML_TYPE_I16: { int16_t x; memcpy(&x, p, 2); out[i] = (float)x; break; }
        case GGML_TYPE_I64: { int64_t x; memcpy(&x, p, 8); out[i] = (float)x; break; }
        default: out[i] = NAN; break;
        }
    }
    free(raw);
    return out;
}

/* ------------------------------------------------------------- a case */

struct run_result {
    float *out;
    int64_t n;
    bool supported;
    bool computed;
};

/* Build the case in a fresh context, place it on backend, fill its leaves from seed, compute. */
static struct run_result run_case(const struct vk_test_case *c, ggml_backend_t backend, uint64_t seed) {
    struct run_result r = {0};
    struct ggml_init_params ip = {.mem_size = 64 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *out = c->build(ctx);
    if (!out) {
        ggml_free(ctx);
        return r;
    }
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    r.supported = true;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) r.supported &= ggml_backend_supports_op(backend, ggml_graph_node(g, i));
    ggml_backend_buffer_t buf = r.supported ? ggml_backend_alloc_ctx_tensors(ctx, backend) : NULL;
    if (buf) {
        test_seed(seed);
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (t->op == GGML_OP_NONE && !t->view_src) fill_leaf(t);
        if (ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS) {
            r.out = read_f32(out);
            r.n = ggml_nelements(out);
            r.computed = true;
        }
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
    return r;
}

static void check_case(const struct vk_test_case *c, int index) {
    struct ggml_init_params ip = {.mem_size = 64 * ggml_tensor_overhead(), .no_alloc = true};
    struct ggml_context *probe = ggml_init(ip);
    const bool have = c->build(probe) != NULL;
    ggml_free(probe);
    if (!have) {
        tap_skip("its op constructor is not in this build", "%s", c->name);
        return;
    }
    struct run_result v = run_case(c, backend_test, 1000 + index);
    if (!c->expect_supported) {
        tap_ok(!v.supported, "%s is declined by %s (computed on the CPU instead)", c->name, ggml_backend_name(backend_test));
        free(v.out);
        return;
    }
    if (!v.supported || !v.computed) {
        tap_ok(false, "%s on %s: %s", c->name, ggml_backend_name(backend_test), v.supported ? ggmlc_last_error() : "not supported");
        free(v.out);
        return;
    }
    struct run_result ref = run_case(c, backend_cpu, 1000 + index);
    if (!ref.computed) {
        tap_skip("the CPU backend cannot compute it", "%s", c->name);
    } else {
        if (v.n == 1) tap_diag("%s: %.9g on %s, %.9g on the CPU", c->name, v.out[0], ggml_backend_name(backend_test), ref.out[0]);
        ok_nmse(v.out, ref.out, (size_t)v.n, c->max_nmse, "%s matches the CPU", c->name);
    }
    free(v.out);
    free(ref.out);
}

static const char *backend_under_test;

/* The plugin reads its GGMLC_VK_* variables once, when it starts (vk-tuning.c): after setting
 * some, start it (and the CPU backend) again. */
static void restart_backends(void) {
    ggml_backend_free(backend_test);
    ggml_backend_free(backend_cpu);
    ggmlc_shutdown();
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name(backend_under_test);
    backend_test = reg && ggml_backend_reg_dev_count(reg) ? ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL) : NULL;
    backend_cpu = ggml_backend_init_by_name("cpu", NULL);
}

/* Whether name contains the len bytes at part. */
static bool contains_part(const char *name, const char *part, size_t len) {
    for (const char *at = name; *at; at++)
        if (strncmp(at, part, len) == 0) return true;
    return false;
}

/* Whether a case runs under GGMLC_TEST_ONLY: no filter, or its name contains one of the
 * filter's comma-separated parts ("mm_f16,mm_q8_0"; an empty part takes every case). */
static bool case_selected(const char *name, const char *only) {
    if (!only) return true;
    for (const char *part = only;;) {
        const char *end = strchr(part, ',');
        const size_t len = end ? (size_t)(end - part) : strlen(part);
        if (len == 0 || contains_part(name, part, len)) return true;
        if (!end) return false;
        part = end + 1;
    }
}

/* The integer-dot mat-vec cases with that kernel forced, under the default tuning, under one
 * of 32 threads and 3 rows per workgroup (several blocks per thread, rows past the end) and
 * under 3 workgroups taking turns over the rows; skipped, visibly, on a device without
 * integer dot products. */
static void check_dot_cases(ggml_backend_dev_t dev, const char *only, int first_index) {
    size_t n;
    const struct vk_test_case *cases = vk_test_cases_dot(&n);
    if (!strstr(ggmlc_device_caps(dev), "int-dot")) {
        for (size_t i = 0; i < n; i++)
            if (case_selected(cases[i].name, only))
                tap_skip("the device has no integer dot products", "%s", cases[i].name);
        return;
    }
    static const char *const tunings[] = {NULL, "32,3", "64,2,3"}; /* the last: 3 workgroups take turns */
    setenv("GGMLC_VK_MVQ_KERNEL", "dot", 1);
    for (size_t t = 0; t < sizeof tunings / sizeof *tunings; t++) {
        if (tunings[t]) setenv("GGMLC_VK_MVQD", tunings[t], 1);
        restart_backends();
        tap_diag("integer-dot mat-vec, GGMLC_VK_MVQD=%s", tunings[t] ? tunings[t] : "(default)");
        for (size_t i = 0; i < n; i++)
            if (case_selected(cases[i].name, only)) check_case(&cases[i], first_index + (int)i);
    }
    unsetenv("GGMLC_VK_MVQD");
    unsetenv("GGMLC_VK_MVQ_KERNEL");
    restart_backends();
}

/* The float mat-vec cases (mv_f*) again under a tuning that takes 3 steps along k per iteration
 * (mv.comp's STEPS: whole iterations, then single steps) with 64 threads and 4 rows, whatever
 * the default for their row lengths. */
static bool is_float_mv_case(const struct vk_test_case *c, const char *only) {
    return strncmp(c->name, "mv_f", 4) == 0 && case_selected(c->name, only);
}

static void check_mv_steps(const char *only) {
    size_t n, any = 0;
    const struct vk_test_case *cases = vk_test_cases(&n);
    for (size_t i = 0; i < n; i++) any += is_float_mv_case(&cases[i], only);
    if (!any) return;
    setenv("GGMLC_VK_MV", "64,4,3", 1);
    restart_backends();
    tap_diag("float mat-vec, GGMLC_VK_MV=64,4,3");
    for (size_t i = 0; i < n; i++)
        if (is_float_mv_case(&cases[i], only)) check_case(&cases[i], 600 + (int)i);
    unsetenv("GGMLC_VK_MV");
    restart_backends();
}

/* The cases of a CNN's training step under the default tuning (products of few tiles split
 * along k), never split (GGMLC_VK_MM_SPLIT=1) and split into 7 layers (a short last one). */
static void check_train_cases(const char *only) {
    static const char *const splits[] = {NULL, "1", "7"};
    size_t n;
    const struct vk_test_case *cases = vk_test_cases_train(&n);
    for (size_t s = 0; s < sizeof splits / sizeof *splits; s++) {
        if (splits[s]) setenv("GGMLC_VK_MM_SPLIT", splits[s], 1);
        restart_backends();
        tap_diag("training-step cases, GGMLC_VK_MM_SPLIT=%s", splits[s] ? splits[s] : "(default)");
        for (size_t i = 0; i < n; i++)
            if (case_selected(cases[i].name, only)) check_case(&cases[i], 800 + (int)i);
    }
    unsetenv("GGMLC_VK_MM_SPLIT");
    restart_backends();
}

/* The flash-attention cases with $var = value (the knob cleared afterwards). */
static void check_attention_with(const char *var, const char *value, const char *only) {
    const struct vk_test_case *(*lists[])(size_t *) = {vk_test_cases, vk_test_cases_ops};
    setenv(var, value, 1);
    restart_backends();
    tap_diag("flash attention, %s=%s", var, value);
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
        size_t n;
        const struct vk_test_case *cases = lists[l](&n);
        for (size_t i = 0; i < n; i++)
            if (strstr(cases[i].name, "flash_attn") && case_selected(cases[i].name, only))
                check_case(&cases[i], 700 + (int)i);
    }
    unsetenv(var);
    restart_backends();
}

/* The flash-attention cases with split keys forced: 3 splits (a few keys each, some of the causal
 * rows' splits wholly masked) and 16 (more splits than chunks of keys: some empty); split keys
 * only serve the vector and row kernels, so the tiled ones are turned off: first the vector
 * kernel's splits, then ($GGMLC_VK_FA_VEC=0) the row kernel's.  Then each kernel forced: the
 * vector kernel for the many-query cases, the row kernel, the tiled one for the few-query ones
 * (heads over 256 stay with the row kernel). */
static void check_split_attention(const char *only) {
    for (int vec = 1; vec >= 0; vec--) {
        if (!vec) setenv("GGMLC_VK_FA_VEC", "0", 1);
        setenv("GGMLC_VK_FA_TILE", "0", 1);
        check_attention_with("GGMLC_VK_FA_SPLIT", "3", only);
        setenv("GGMLC_VK_FA_TILE", "0", 1);
        check_attention_with("GGMLC_VK_FA_SPLIT", "16", only);
    }
    check_attention_with("GGMLC_VK_FA_TILE", "0", only); /* the row kernel ($GGMLC_VK_FA_VEC=0 still) */
    unsetenv("GGMLC_VK_FA_VEC");
    check_attention_with("GGMLC_VK_FA_TILE", "0", only);
    check_attention_with("GGMLC_VK_FA_TILE", "1", only);
}

/* ------------------------------------------------ through the scheduler */

#pragma weak ggml_map_custom1
#pragma weak ggml_unary
#pragma weak ggml_soft_max

/* The CPU-only op of the perceptron below: a custom op (no GPU plugin runs those) that cubes. */
static void cube(struct ggml_tensor *dst, const struct ggml_tensor *a, int ith, int nth, void *userdata) {
    (void)userdata;
    const int64_t n = ggml_nelements(dst);
    for (int64_t i = ith; i < n; i += nth) ((float *)dst->data)[i] = ((const float *)a->data)[i] * ((const float *)a->data)[i] * ((const float *)a->data)[i];
}

/* A two-layer perceptron with an op the Vulkan plugin lacks (a custom op) in the middle:
 * the scheduler splits it between Vulkan and the CPU.  Returns the output or NULL. */
static float *run_mlp(ggml_backend_t *backends, int n_backends, int64_t *n_out) {
    if (!ggml_map_custom1 || !ggml_unary || !ggml_soft_max) return NULL;
    struct ggml_init_params ip = {.mem_size = 64 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 16), *w1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 96);
    struct ggml_tensor *b1 = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 96), *w2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 96, 10);
    struct ggml_tensor *b2 = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 10);
    struct ggml_tensor *leaves[] = {x, w1, b1, w2, b2};
    for (size_t i = 0; i < 5; i++) ggml_set_input(leaves[i]);
    struct ggml_tensor *h = ggml_unary(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w1, x), b1), GGML_UNARY_OP_GELU);
    struct ggml_tensor *y = ggml_add(ctx, ggml_mul_mat(ctx, w2, h), b2);
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_map_custom1(ctx, y, cube, 1, NULL));
    ggml_set_output(out);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, NULL, n_backends, 256, false, true);
    float *result = NULL;
    if (sched && ggml_backend_sched_alloc_graph(sched, g)) {
        test_seed(77);
        for (size_t i = 0; i < 5; i++) fill_leaf(leaves[i]);
        if (ggml_backend_sched_graph_compute(sched, g) == GGML_STATUS_SUCCESS) {
            result = read_f32(out);
            *n_out = ggml_nelements(out);
            if (n_backends > 1) tap_diag("mlp through the scheduler: %d splits", ggml_backend_sched_get_n_splits(sched));
        }
    }
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    return result;
}

static void check_scheduler(void) {
    ggml_backend_t both[2] = {backend_test, backend_cpu}, cpu_only[1] = {backend_cpu};
    int64_t n = 0, n_ref = 0;
    float *out = run_mlp(both, 2, &n), *ref = run_mlp(cpu_only, 1, &n_ref);
    if (!out && !ref && !ggml_map_custom1) {
        tap_skip("map_custom1/unary/soft_max constructors missing", "a perceptron split between %s and the CPU", ggml_backend_name(backend_test));
    } else if (tap_ok(out && ref && n == n_ref, "a perceptron split between %s and the CPU computes: %s", ggml_backend_name(backend_test),
                      out ? "yes" : ggmlc_last_error())) {
        /* 1e-6 as for the other f16-weight products: with cooperative matrices the f32
         * activations of w2 are rounded to f16, as ggml's f16 products do */
        ok_nmse(out, ref, (size_t)n, 1e-6, "the split perceptron matches the CPU-only run");
    }
    free(out);
    free(ref);
}

/* ---------------------------------------------------------- errors */

static void check_error_paths(void) {
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend_test);
    const size_t max = ggml_backend_buft_get_max_size(buft);
    ggml_backend_buffer_t huge = max < SIZE_MAX / 2 ? ggml_backend_buft_alloc_buffer(buft, max + 1) : NULL;
    tap_ok(huge == NULL && ggmlc_last_status() == GGMLC_ERR_NOMEM, "a buffer over the maximum size is refused: %s", ggmlc_last_error());
    ggml_backend_buffer_free(huge);

    /* a node whose operands live in host memory: a failing status, not a crash */
    struct ggml_init_params ip = {.mem_size = 8 * ggml_tensor_overhead() + ggml_graph_overhead() + 4096, .no_alloc = false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    struct ggml_tensor *m = ggml_mul_mat(ctx, a, a);
    if (m) {
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, m);
        ggmlc_clear_error();
        const enum ggml_status st = ggml_backend_graph_compute(backend_test, g);
        tap_ok(st != GGML_STATUS_SUCCESS && ggmlc_last_error()[0] != '\0',
               "computing tensors of host memory fails cleanly: %s", ggmlc_last_error());
    } else {
        tap_skip("mul_mat constructor missing", "host-memory operands");
    }
    ggml_free(ctx);
}

/* The devices were closed by ggmlc_shutdown: the pipeline cache must be on disk. */
static void check_pipeline_cache(void) {
    if (!cache_dir[0]) return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s/ggmlc/vulkan-*.cache >/dev/null 2>&1", cache_dir);
    tap_ok(system(cmd) == 0, "the pipeline cache was written under %s/ggmlc", cache_dir);
}

/* A device choice that matches nothing fails the plugin's init with a clear reason. */
static void check_device_choice(const char *name) {
    setenv("GGMLC_VK_DEVICE", "no-such-device-anywhere", 1);
    ggmlc_init();
    bool failed = false;
    char reason[512] = "";
    for (size_t i = 0; i < ggmlc_backend_count(); i++) {
        struct ggmlc_backend_info info;
        if (ggmlc_backend_get_info(i, &info) && strcmp(info.name, name) == 0) {
            failed = !info.loaded;
            snprintf(reason, sizeof reason, "%s", info.reason ? info.reason : "");
        }
    }
    tap_ok(failed && strstr(reason, "no-such-device-anywhere"), "GGMLC_VK_DEVICE naming no device: %s", reason);
    ggmlc_shutdown();
    unsetenv("GGMLC_VK_DEVICE");
}

/* ------------------------------------------------------------- main */

/* The pipeline cache goes to a folder of the build tree, not the user's ~/.cache. */
static const char *configure_tests(void) {
    static char path[1024];
    const char *build = getenv("GGMLC_BUILDDIR");
    if (build && !getenv("GGMLC_TEST_KEEP_CONFIG")) {
        snprintf(path, sizeof path, "%s/tests/ggmlc-test-vulkan.ini", build);
        setenv("GGMLC_CONFIG", path, 1);
        snprintf(cache_dir, sizeof cache_dir, "%s/tests/vk-cache", build);
        setenv("XDG_CACHE_HOME", cache_dir, 1);
    }
    const char *name = getenv("GGMLC_TEST_BACKEND");
    return name && *name ? name : "vulkan";
}

int main(void) {
    const char *name = configure_tests();
    backend_under_test = name;
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name(name);
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) {
        char reason[512] = "not configured";
        for (size_t i = 0; i < ggmlc_backend_count(); i++) {
            struct ggmlc_backend_info info;
            if (ggmlc_backend_get_info(i, &info) && strcmp(info.name, name) == 0 && info.reason)
                snprintf(reason, sizeof reason, "%s", info.reason);
        }
        char msg[700];
        snprintf(msg, sizeof msg, "no %s device: %s", name, reason);
        return tap_skip_all(msg);
    }
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    tap_diag("testing %s: %s", ggml_backend_dev_name(dev), ggml_backend_dev_description(dev));
    backend_test = ggml_backend_dev_init(dev, NULL);
    backend_cpu = ggml_backend_init_by_name("cpu", NULL);
    if (!tap_ok(backend_test && backend_cpu, "backends %s and cpu start", name)) return tap_done();

    size_t n_cases;
    const struct vk_test_case *cases = vk_test_cases(&n_cases);
    const char *only = getenv("GGMLC_TEST_ONLY");
    for (size_t i = 0; i < n_cases; i++)
        if (case_selected(cases[i].name, only)) check_case(&cases[i], (int)i);
    size_t n_quant;
    const struct vk_test_case *quant = vk_test_cases_quant(&n_quant);
    for (size_t i = 0; i < n_quant; i++)
        if (case_selected(quant[i].name, only)) check_case(&quant[i], (int)(n_cases + i));
    /* GGMLC_TEST_DEFAULTS_ONLY: the selected cases under the default tuning alone, without the
     * reruns under forced kernels and splits (test-vulkan-next.sh: on Mesa 26's lavapipe the
     * reruns of the flash-attention cases took 8 of its minutes, and Debian's lavapipe runs them) */
    const bool reruns = !getenv("GGMLC_TEST_DEFAULTS_ONLY");
    check_dot_cases(dev, only, 400);
    if (reruns) check_mv_steps(only);
    if (!only) vk_check_moe_bad_ids(backend_test);
    cases = vk_test_cases_ops(&n_cases);
    for (size_t i = 0; i < n_cases; i++)
        if (case_selected(cases[i].name, only)) check_case(&cases[i], 500 + (int)i);
    if (reruns) {
        check_split_attention(only);
        check_train_cases(only);
    }
    check_scheduler();
    check_error_paths();

    ggml_backend_free(backend_test);
    ggml_backend_free(backend_cpu);
    ggmlc_shutdown();
    check_pipeline_cache();
    check_device_choice(name);
    return tap_done();
}
