/*
 * test-vulkan-faults.c - the Vulkan plugin's fault paths, driven by its fault
 * hook ($GGMLC_VK_FAULT, plugins/vulkan/vk-fault.c) so they run on lavapipe:
 *
 *   out of device memory  buffers fall back to host memory, the nodes using
 *                         them are computed on the CPU: the graph's results
 *                         match the CPU backend's, with one warning;
 *   failed pipeline       the node is computed on the CPU, one warning, and
 *                         the op is declined from then on;
 *   lost device           the computation fails with one clear error, no
 *                         crash or hang; every op is declined afterwards, so a
 *                         scheduler over {Vulkan, CPU} computes on the CPU;
 *   set-uid programs      (the core's simulation of one) the plugin reads no
 *                         GGMLC_VK_* variable, as it does otherwise.
 *
 * Each scenario loads the plugin afresh (ggmlc_init after setting the hook).
 * Skipped, visibly, when there is no Vulkan device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "fault-inject.h"
#include "ggmlc.h"
#include "testutil.h"

#define N_IN 40
#define N_HID 33
#define N_OUT 12
#define N_BATCH 7

static int n_warn, n_error;
static char last_message[512];

static void count_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level != GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_ERROR) return;
    if (!strstr(text, "vulkan")) return;
    if (level == GGML_LOG_LEVEL_WARN) n_warn++;
    else n_error++;
    snprintf(last_message, sizeof last_message, "%s", text);
    size_t len = strlen(last_message);
    if (len && last_message[len - 1] == '\n') last_message[len - 1] = '\0';
}

/* The graph: softmax(W2 gelu(rms_norm(W1 x + b1)) + b2), through ops the Vulkan plugin has. */
struct model {
    struct ggml_context *ctx_w, *ctx_g;
    struct ggml_tensor *x, *w1, *b1, *w2, *b2, *out;
    struct ggml_cgraph *graph;
};

static bool model_build(struct model *m) {
    struct ggml_init_params ip = {.mem_size = 8 * ggml_tensor_overhead(), .no_alloc = true};
    m->ctx_w = ggml_init(ip);
    ip.mem_size = 32 * ggml_tensor_overhead() + ggml_graph_overhead();
    m->ctx_g = ggml_init(ip);
    if (!m->ctx_w || !m->ctx_g) return false;
    m->x = ggml_new_tensor_2d(m->ctx_w, GGML_TYPE_F32, N_IN, N_BATCH);
    m->w1 = ggml_new_tensor_2d(m->ctx_w, GGML_TYPE_F32, N_IN, N_HID);
    m->b1 = ggml_new_tensor_1d(m->ctx_w, GGML_TYPE_F32, N_HID);
    m->w2 = ggml_new_tensor_2d(m->ctx_w, GGML_TYPE_F16, N_HID, N_OUT);
    m->b2 = ggml_new_tensor_1d(m->ctx_w, GGML_TYPE_F32, N_OUT);
    struct ggml_context *c = m->ctx_g;
    struct ggml_tensor *h = ggml_rms_norm(c, ggml_add(c, ggml_mul_mat(c, m->w1, m->x), m->b1), 1e-6f);
    h = ggml_gelu(c, h);
    m->out = ggml_soft_max(c, ggml_add(c, ggml_mul_mat(c, m->w2, h), m->b2));
    m->graph = ggml_new_graph(c);
    ggml_build_forward_expand(m->graph, m->out);
    return m->out != NULL;
}

static void model_fill(struct model *m) {
    struct ggml_tensor *leaves[] = {m->x, m->w1, m->b1, m->w2, m->b2};
    test_seed(42);
    for (size_t i = 0; i < sizeof leaves / sizeof *leaves; i++) {
        const size_t n = (size_t)ggml_nelements(leaves[i]);
        float *v = malloc(n * sizeof *v);
        test_fill_uniform(v, n, -1.0f, 1.0f);
        tensor_set_f32(leaves[i], v);
        free(v);
    }
}

static float *model_output(const struct model *m) {
    float *out = malloc(N_OUT * N_BATCH * sizeof *out);
    if (out) tensor_get_f32(m->out, out);
    return out;
}

static void model_free(struct model *m) {
    if (m->ctx_w) ggml_free(m->ctx_w);
    if (m->ctx_g) ggml_free(m->ctx_g);
}

/* Weights in one buffer of backend, activations in a graph allocator's: compute, read the output.
 * NULL with *status set when something fails. */
static float *run_model(ggml_backend_t backend, enum ggml_status *status) {
    struct model m = {0};
    float *out = NULL;
    ggml_backend_buffer_t weights = NULL;
    ggml_gallocr_t galloc = NULL;
    *status = GGML_STATUS_FAILED;
    if (model_build(&m) && (weights = ggml_backend_alloc_ctx_tensors(m.ctx_w, backend))) {
        model_fill(&m);
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (galloc && ggml_gallocr_alloc_graph(galloc, m.graph)) {
            *status = ggml_backend_graph_compute(backend, m.graph);
            if (*status == GGML_STATUS_SUCCESS) out = model_output(&m);
        }
    }
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(weights);
    model_free(&m);
    return out;
}

/* The same model through a scheduler over {backend, CPU}, inputs in host memory. */
static float *run_model_sched(ggml_backend_t backend, ggml_backend_t cpu, int *n_splits) {
    struct model m = {0};
    float *out = NULL;
    ggml_backend_buffer_t weights = NULL;
    ggml_backend_t pair[2] = {backend, cpu};
    ggml_backend_sched_t sched = ggml_backend_sched_new(pair, NULL, 2, 64, false, true);
    if (sched && model_build(&m) && (weights = ggml_backend_alloc_ctx_tensors(m.ctx_w, cpu))) {
        model_fill(&m);
        if (ggml_backend_sched_alloc_graph(sched, m.graph) && ggml_backend_sched_graph_compute(sched, m.graph) == GGML_STATUS_SUCCESS) {
            out = model_output(&m);
            *n_splits = ggml_backend_sched_get_n_splits(sched);
        }
    }
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(weights);
    model_free(&m);
    return out;
}

/* ----------------------------------------------------------- scenarios */

static float *reference;

/* Load the plugin with fault spec set; the Vulkan backend or NULL. */
static ggml_backend_t start(const char *spec) {
    setenv("GGMLC_VK_FAULT", spec, 1);
    ggmlc_init();
    n_warn = n_error = 0;
    last_message[0] = '\0';
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return NULL;
    return ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
}

static void stop(ggml_backend_t backend) {
    ggml_backend_free(backend);
    ggmlc_shutdown();
    unsetenv("GGMLC_VK_FAULT");
}

/* A node of op softmax, for asking supports_op. */
static bool supports_softmax_and_add(ggml_backend_t backend, bool *add) {
    struct ggml_init_params ip = {.mem_size = 8 * ggml_tensor_overhead(), .no_alloc = true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 3);
    const bool sm = ggml_backend_supports_op(backend, ggml_soft_max(ctx, a));
    *add = ggml_backend_supports_op(backend, ggml_add(ctx, a, a));
    ggml_free(ctx);
    return sm;
}

/* Computing under the fault gives the CPU's answer with exactly one warning. */
static void check_computes(const char *spec, const char *what) {
    ggml_backend_t backend = start(spec);
    if (!tap_ok(backend != NULL, "%s (%s): the backend starts", what, spec)) {
        stop(backend);
        return;
    }
    enum ggml_status st;
    float *out = run_model(backend, &st);
    if (tap_ok(out != NULL, "%s: the graph computes (%s)", what, out ? "yes" : ggmlc_last_error()))
        ok_nmse(out, reference, N_OUT * N_BATCH, 1e-6, "%s: the results match the CPU backend's", what);
    tap_ok(n_warn == 1 && n_error == 0, "%s: one warning (%d warnings, %d errors): %s", what, n_warn, n_error, last_message);
    free(out);
    /* a second run is quiet: each fault is told once */
    out = run_model(backend, &st);
    tap_ok(out && n_warn == 1, "%s: a second run computes without a new warning", what);
    free(out);
    stop(backend);
}

static void check_pipeline_declined(void) {
    ggml_backend_t backend = start("pipeline:softmax");
    if (!backend) {
        stop(backend);
        return;
    }
    bool add = false;
    tap_ok(supports_softmax_and_add(backend, &add) && add, "before any failure soft_max and add are claimed");
    enum ggml_status st;
    float *out = run_model(backend, &st);
    free(out);
    const bool sm = supports_softmax_and_add(backend, &add);
    tap_ok(!sm && add, "after its pipeline failed soft_max is declined (add still claimed)");
    stop(backend);
}

/* t's values uniform in [-1, 1), stored in its type (f32, f16 or a block format). */
static void fill_uniform(struct ggml_tensor *t) {
    const int64_t n = ggml_nelements(t);
    float *x = malloc((size_t)n * sizeof *x);
    void *raw = malloc(ggml_nbytes(t));
    if (x && raw) {
        test_fill_uniform(x, (size_t)n, -1, 1);
        if (t->type == GGML_TYPE_F32) memcpy(raw, x, ggml_nbytes(t));
        else if (t->type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(x, raw, n);
        else ggml_quantize_chunk(t->type, x, raw, 0, ggml_nrows(t), t->ne[0], NULL);
        ggml_backend_tensor_set(t, raw, 0, ggml_nbytes(t));
    }
    free(raw);
    free(x);
}

/* The leaves of ctx filled in order from seed, out's graph computed on backend: out's values
 * (malloc'd) or NULL.  Frees ctx. */
static float *compute_filled(ggml_backend_t backend, struct ggml_context *ctx, struct ggml_tensor *out, uint64_t seed) {
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    float *result = NULL;
    if (buf) {
        test_seed(seed);
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (t->op == GGML_OP_NONE) fill_uniform(t);
        if (ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS && (result = malloc(ggml_nbytes(out))))
            ggml_backend_tensor_get(out, result, 0, ggml_nbytes(out));
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return result;
}

static struct ggml_context *small_context(void) {
    return ggml_init((struct ggml_init_params){.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
}

/* Two integer-dot q8_0 products of one b, with b scaled in place between them by a node whose
 * pipeline fails (the CPU computes it between two command buffers): the second command buffer
 * must quantize b anew, not reuse the first one's.  Returns the output or NULL. */
static float *run_requantize(ggml_backend_t backend) {
    struct ggml_context *ctx = small_context();
    struct ggml_tensor *a[2] = {ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 256, 40), ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 256, 40)};
    struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 2);
    struct ggml_tensor *out = ggml_add(ctx, ggml_mul_mat(ctx, a[0], b), ggml_mul_mat(ctx, a[1], ggml_scale_inplace(ctx, b, -3.0f)));
    return compute_filled(backend, ctx, out, 5);
}

static void check_requantize(void) {
    setenv("GGMLC_VK_MVQ_KERNEL", "dot", 1);
    ggml_backend_t backend = start("pipeline:unary_f32_f32");
    float *out = backend ? run_requantize(backend) : NULL;
    const bool warned = n_warn == 1 && strstr(last_message, "unary_f32_f32");
    stop(backend);
    unsetenv("GGMLC_VK_MVQ_KERNEL");
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL); /* after stop: the plugin starts again without faults */
    float *ref = cpu ? run_requantize(cpu) : NULL;
    ggml_backend_free(cpu);
    ggmlc_shutdown(); /* the next scenario starts the plugin with its own faults */
    if (tap_ok(ref && out && warned, "products of one b around a node the CPU takes compute (%s; %s)", out ? "yes" : ggmlc_last_error(),
               last_message))
        ok_nmse(out, ref, 80, 1e-6, "products of one b around a node the CPU takes: b quantized again, as the CPU does");
    free(out);
    free(ref);
}

/* The m x n product of weights of type wtype [k, m] and f32 activations [k, n], its leaves filled from seed. */
static float *run_product(ggml_backend_t backend, enum ggml_type wtype, int64_t k, int64_t m, int64_t n, uint64_t seed) {
    struct ggml_context *ctx = small_context();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, wtype, k, m), *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    return compute_filled(backend, ctx, ggml_mul_mat(ctx, a, b), seed);
}

/* 256x128 of f16 weights: whole tiles of the cooperative-matrix kernel, so its FLEX variant too. */
static float *run_f16_product(ggml_backend_t backend) { return run_product(backend, GGML_TYPE_F16, 64, 256, 128, 6); }

/* 64x16 of f16 weights over k = 1024: few tiles, split along k when $GGMLC_VK_COOPMAT_SPLIT asks. */
static float *run_split_product(ggml_backend_t backend) { return run_product(backend, GGML_TYPE_F16, 1024, 64, 16, 8); }

/* 64x16 of f32 weights over k = 1024: the tiled GEMM, split along k when $GGMLC_VK_MM_SPLIT asks
 * (a convolution's weight gradient in training). */
static float *run_tiled_split_product(ggml_backend_t backend) {
    return run_product(backend, GGML_TYPE_F32, 1024, 64, 16, 11);
}

/* One query of 4 heads over 600 keys (f32): split keys when $GGMLC_VK_FA_SPLIT asks for it, the
 * tiled kernel when $GGMLC_VK_FA_TILE=1 does. */
static struct ggml_tensor *attention_node(struct ggml_context *ctx) {
    struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 1, 4);
    struct ggml_tensor *k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 600, 2), *v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 600, 2);
    return ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.125f, 0.0f, 0.0f);
}

static float *run_attention(ggml_backend_t backend) {
    struct ggml_context *ctx = small_context();
    return compute_filled(backend, ctx, attention_node(ctx), 7);
}

/* 40x2 of q8_0 weights: the integer-dot mat-vec when $GGMLC_VK_MVQ_KERNEL=dot (the float kernels keep b in
 * f32 where the CPU quantizes it, hence their 1e-4 bound). */
static float *run_q8_0_product(ggml_backend_t backend) { return run_product(backend, GGML_TYPE_Q8_0, 256, 40, 2, 9); }

/* 40x4 of q8_0 weights over a 4096-deep b: too wide for the mat-vec that quantizes b itself
 * (mvqdq_*), so b goes through quantize_q8 into the integer-dot kernel (mvqd_*). */
static float *run_q8_0_deep_product(ggml_backend_t backend) { return run_product(backend, GGML_TYPE_Q8_0, 4096, 40, 4, 9); }

/* 64x32 of q8_0 weights: read as blocks by the cooperative-matrix kernel, or dequantized into f16 for it
 * ($GGMLC_VK_COOPMAT_BLOCKS=0). */
static float *run_dequantized_product(ggml_backend_t backend) { return run_product(backend, GGML_TYPE_Q8_0, 256, 64, 32, 10); }

/* A GPT-sized loss: 300 rows of 256 logits, a row's term per workgroup then their sum. */
static float *run_cross_entropy(ggml_backend_t backend) {
    struct ggml_context *ctx = small_context();
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 300), *t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 300);
    return compute_filled(backend, ctx, ggml_cross_entropy_loss(ctx, x, t), 12);
}

static bool claims_attention(ggml_backend_t backend) {
    struct ggml_context *ctx = small_context();
    const bool claimed = ggml_backend_supports_op(backend, attention_node(ctx));
    ggml_free(ctx);
    return claimed;
}

/* A pipeline whose failure the kernel needing it survives on the GPU: the graph computes, right, with a
 * warning that names the shader and what runs instead. */
struct gpu_fallback {
    const char *spec;                        /* the fault, pipeline:NAME */
    const char *cap;                         /* a device cap the case needs, or NULL */
    const char *env, *env_value;             /* a setting that makes the kernel need the pipeline, or NULL */
    float *(*run)(ggml_backend_t backend);   /* the graph: its output (malloc'd) */
    int n_out;
    double nmse;                             /* from the CPU's output at most */
    const char *instead;                     /* in the warning */
    bool several;                            /* the fault hits several variants, each told once */
    bool (*claims)(ggml_backend_t backend);  /* the op still claimed afterwards, or NULL: not checked */
    const char *computes, *result;           /* what the checks say */
};

static bool device_has(const char *cap) {
    ggml_backend_reg_t reg = (ggmlc_init(), ggml_backend_reg_by_name("vulkan"));
    const bool has = reg && ggml_backend_reg_dev_count(reg) && strstr(ggmlc_device_caps(ggml_backend_reg_dev_get(reg, 0)), cap);
    ggmlc_shutdown();
    return has;
}

static void check_gpu_fallback(const struct gpu_fallback *f) {
    if (f->cap && !device_has(f->cap)) {
        tap_skip("the device lacks what the case needs", "%s: the device has no %s", f->spec, f->cap);
        return;
    }
    if (f->env) setenv(f->env, f->env_value, 1);
    ggml_backend_t backend = start(f->spec);
    float *out = backend ? f->run(backend) : NULL;
    const bool warned = (f->several ? n_warn >= 1 : n_warn == 1) && strstr(last_message, strchr(f->spec, ':') + 1) &&
                        strstr(last_message, f->instead);
    const bool claimed = !f->claims || (backend && f->claims(backend));
    stop(backend);
    if (f->env) unsetenv(f->env);
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL); /* after stop: the plugin starts again without faults */
    float *ref = cpu ? f->run(cpu) : NULL;
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    if (tap_ok(ref && out && warned, "%s: %s, with a warning (%s; %s)", f->spec, f->computes, out ? "yes" : ggmlc_last_error(),
               last_message))
        ok_nmse(out, ref, f->n_out, f->nmse, "%s: %s", f->spec, f->result);
    if (f->claims) tap_ok(claimed, "%s: the op is still claimed afterwards", f->spec);
    free(out);
    free(ref);
}

/* The cooperative-matrix kernels (FLEX -> the KHR or NV fragments -> the tiled GEMM; block-format weights
 * read as blocks -> dequantized first), the split-k sum, the activations' packing and the weights'
 * dequantization for them (Mesa 26's lavapipe has them:
 * tests/test-vulkan-next.sh), the integer-dot mat-vec and its activations' quantization, flash
 * attention's split-key combine and its tiled kernel, the loss's two dispatches (any device). */
static const struct gpu_fallback gpu_fallbacks[] = {
    {"pipeline:mm_coopmat_flex", "coopmat-flex", NULL, NULL, run_f16_product, 256 * 128, 1e-6, "instead", true, NULL,
     "the f16 product computes", "on the next kernel, the CPU's result"},
    {"pipeline:mm_coopmat", "coopmat-khr", NULL, NULL, run_f16_product, 256 * 128, 1e-6, "instead", true, NULL,
     "the f16 product computes", "on the next kernel, the CPU's result"},
    {"pipeline:mm_split_sum", "coopmat-khr", "GGMLC_VK_COOPMAT_SPLIT", "3", run_split_product, 64 * 16, 1e-6, "unsplit", false, NULL,
     "the product computes", "unsplit, the CPU's result"},
    {"pipeline:pack_f16", "coopmat-khr", "GGMLC_VK_COOPMAT_PACK", "1", run_f16_product, 256 * 128, 1e-6, "f32 activations", false,
     NULL, "the f16 product computes", "reading f32 b, the CPU's result"},
    {"pipeline:dequant_q8_0_f16", "coopmat-khr", "GGMLC_VK_COOPMAT_BLOCKS", "0", run_dequantized_product, 64 * 32, 1e-4, "tiled GEMM", false, NULL,
     "the q8_0 product computes", "on the tiled GEMM, the CPU's result"},
    {"pipeline:mm_coopmat_khr_q8_0", "coopmat-khr", "GGMLC_VK_COOPMAT_BLOCKS", "1", run_dequantized_product, 64 * 32, 1e-4,
     "dequantized into f16 first", false, NULL, "the q8_0 product computes", "on dequantized weights, the CPU's result"},
    {"pipeline:quantize_q8", "int-dot", "GGMLC_VK_MVQ_KERNEL", "dot", run_q8_0_deep_product, 40 * 4, 1e-4, "float kernels", false, NULL,
     "the q8_0 product computes", "on the float kernel, the CPU's result"},
    {"pipeline:mvqd_q8_0", "int-dot", "GGMLC_VK_MVQ_KERNEL", "dot", run_q8_0_deep_product, 40 * 4, 1e-4, "float kernels", false, NULL,
     "the q8_0 product computes", "on the float kernel, the CPU's result"},
    {"pipeline:mvqdq_q8_0", "int-dot", "GGMLC_VK_MVQ_KERNEL", "dot", run_q8_0_product, 40 * 2, 1e-4, "unfused nodes", false, NULL,
     "the q8_0 product computes", "quantizing b apart, the CPU's result"},
    {"pipeline:fattn_combine", NULL, "GGMLC_VK_FA_SPLIT", "3", run_attention, 64 * 4, 1e-6, "unsplit", false, claims_attention,
     "split attention computes", "on the unsplit kernel, the CPU's result"},
    {"pipeline:fattn_tile", NULL, "GGMLC_VK_FA_TILE", "1", run_attention, 64 * 4, 1e-6, "one workgroup per query row", false,
     claims_attention, "tiled attention computes", "on the row kernel, the CPU's result"},
    {"pipeline:mm_split_sum", NULL, "GGMLC_VK_MM_SPLIT", "3", run_tiled_split_product, 64 * 16, 1e-6,
     "unsplit", false, NULL, "the tiled f32 product computes", "unsplit, the CPU's result"},
    {"pipeline:cross_entropy_rows", NULL, NULL, NULL, run_cross_entropy, 1, 1e-10, "one workgroup", false, NULL,
     "the loss computes", "by one workgroup, the CPU's result"},
};

static void check_lost(void) {
    ggml_backend_t backend = start("lost");
    if (!tap_ok(backend != NULL, "lost device: the backend starts")) {
        stop(backend);
        return;
    }
    enum ggml_status st;
    float *out = run_model(backend, &st);
    tap_ok(out == NULL && st == GGML_STATUS_FAILED && strstr(ggmlc_last_error(), "lost"),
           "lost device: the computation fails cleanly: %s", ggmlc_last_error());
    tap_ok(n_error == 1 && n_warn == 0 && strstr(last_message, "lost"), "lost device: said once, as an error: %s", last_message);
    free(out);
    bool add = true;
    const bool sm = supports_softmax_and_add(backend, &add);
    tap_ok(!sm && !add, "lost device: every op is declined afterwards");
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    int n_splits = -1;
    out = cpu ? run_model_sched(backend, cpu, &n_splits) : NULL;
    if (tap_ok(out != NULL, "lost device: a scheduler over {Vulkan, CPU} still computes (%d splits)", n_splits))
        ok_nmse(out, reference, N_OUT * N_BATCH, 1e-6, "lost device: on the CPU, with the CPU's results");
    tap_ok(n_error == 1, "lost device: no further error on the way (%d errors)", n_error);
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), 4096);
    tap_ok(b == NULL && strstr(ggmlc_last_error(), "lost"), "lost device: a new buffer is refused: %s", ggmlc_last_error());
    ggml_backend_buffer_free(b);
    free(out);
    ggml_backend_free(cpu);
    stop(backend);
}

/* The plugin of this build tree loaded by path (the configuration is not read in set-uid mode):
 * whether it starts with a device, and the model's output on that device (or NULL). */
static bool load_plugin_directly(float **out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/plugin-copies/vulkan.so", getenv("GGMLC_BUILDDIR"));
    ggmlc_init();
    n_warn = n_error = 0;
    last_message[0] = '\0';
    ggml_backend_reg_t reg = ggml_backend_load(path);
    const bool started = reg && ggml_backend_reg_dev_count(reg) > 0;
    ggml_backend_t backend = started ? ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL) : NULL;
    enum ggml_status st;
    *out = backend ? run_model(backend, &st) : NULL;
    ggml_backend_free(backend);
    ggmlc_shutdown();
    return started;
}

/* A set-uid program must not let its caller steer the plugin: with the core's simulation of one,
 * GGMLC_VK_DEVICE naming no device and GGMLC_VK_FAULT=lost are ignored (the plugin starts and
 * computes); without it, the same variables stop the plugin (read at init, vk-tuning.c) and lose
 * the device (vk-fault.c). */
static void check_secure_mode(void) {
    if (!getenv("GGMLC_BUILDDIR")) {
        tap_skip("run through make check", "set-uid mode: GGMLC_VK_* variables are ignored");
        return;
    }
    float *out;
    setenv("GGMLC_VK_DEVICE", "no-such-device", 1);
    ggmlc_fault_simulate_secure_mode(true);
    const bool secure_started = load_plugin_directly(&out);
    free(out);
    ggmlc_fault_simulate_secure_mode(false);
    const bool started = load_plugin_directly(&out);
    free(out);
    tap_ok(secure_started && !started && strstr(last_message, "no-such-device"),
           "GGMLC_VK_DEVICE is ignored in set-uid mode and honoured otherwise (%s)", last_message);
    unsetenv("GGMLC_VK_DEVICE");
    setenv("GGMLC_VK_FAULT", "lost", 1);
    ggmlc_fault_simulate_secure_mode(true);
    load_plugin_directly(&out);
    const bool secure_computes = out != NULL;
    free(out);
    ggmlc_fault_simulate_secure_mode(false);
    load_plugin_directly(&out);
    tap_ok(secure_computes && out == NULL, "GGMLC_VK_FAULT=lost is ignored in set-uid mode and honoured otherwise");
    free(out);
    unsetenv("GGMLC_VK_FAULT");
}


int main(void) {
    test_vulkan_env();
    ggml_log_set(count_log, NULL);
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    enum ggml_status st;
    reference = cpu ? run_model(cpu, &st) : NULL;
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    if (!tap_ok(reference != NULL, "the CPU backend computes the reference")) return tap_done();

    check_computes("alloc", "out of device memory for every buffer");
    check_computes("alloc:1", "out of device memory for the weights only");
    check_computes("pipeline:softmax", "soft_max's pipeline fails to compile");
    check_computes("pipeline", "every pipeline fails to compile");
    check_pipeline_declined();
    check_requantize();
    for (size_t i = 0; i < sizeof gpu_fallbacks / sizeof *gpu_fallbacks; i++) check_gpu_fallback(&gpu_fallbacks[i]);
    check_lost();
    check_secure_mode();
    free(reference);
    return tap_done();
}
