/*
 * test-vulkan-reorder.c - the Vulkan plugin puts a scheduler's nodes in an order whose dispatches
 * share barriers before they are placed (plugins/vulkan/vk-reorder.c), and lets dispatches that
 * do not conflict share a barrier (vk-order.c): a node may run before one that comes earlier in
 * the graph, never before one whose bytes it reads, writes or overwrites.  Each case is a graph
 * with such hazards (in-place ops over what an earlier node still reads, views of a tensor in
 * the device's memory written and read in parts, products sharing quantized activations, memory
 * the allocator hands from a dead tensor to a new one), computed on Vulkan through a
 * ggml_backend_sched and on the CPU backend in graph order, every output compared.  Each case runs twice:
 * with the plugin's default order and, after reloading it, with GGMLC_VK_REORDER=0 (graph
 * order); the barriers the plugin logs (GGMLC_DEBUG=vulkan) are counted: never more with the
 * reordering, and as many as the longest chain of dependent dispatches where the case says so.
 * GGMLC_VK_MVQ_KERNEL=dot (by hand) takes the q8_0 products through the integer-dot kernels,
 * which quantize the activations into scratch memory shared by the products.
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

enum { MAX_OUT = 4, MAX_VALUES = 1 << 14, N_CASES = 7 };

struct built {
    struct ggml_tensor *out[MAX_OUT];
    int n_out;
};

struct reorder_case {
    const char *name;
    void (*build)(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b);
    int barriers_reordered; /* what the reordering must reach; -1: only no more than in graph order */
    double max_nmse;
};

static int last_barriers; /* from the plugin's log */

static void count_log(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)user;
    const char *at = strstr(text, "dispatches, ");
    if (strstr(text, "graph of") && at) last_barriers = atoi(at + strlen("dispatches, "));
}

/* Inputs live in a context of their own, placed in the backend's memory before the graph is
 * (as a model's weights and KV cache are): in-place ops and copies into views write them there. */
static struct ggml_context *inputs_ctx;

static struct ggml_tensor *input(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1) {
    (void)ctx;
    return ggml_new_tensor_2d(inputs_ctx, type, ne0, ne1);
}

static void output(struct ggml_cgraph *gf, struct built *b, struct ggml_tensor *t) {
    ggml_set_output(t);
    ggml_build_forward_expand(gf, t);
    b->out[b->n_out++] = t;
}

/* ------------------------------------------------------------- the graphs */

/* Two chains of three dependent nodes, one after the other in the graph: in graph order the
 * second chain waits behind the first; reordered, the chains run side by side (2 barriers). */
static void two_chains(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    for (int c = 0; c < 2; c++) {
        struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 300, 2);
        struct ggml_tensor *s = ggml_scale(ctx, x, 0.5f + (float)c), *q = ggml_sqr(ctx, s);
        ggml_set_output(s); /* kept: the allocator gives neither's memory to the other chain */
        ggml_set_output(q);
        struct ggml_tensor *y = ggml_add(ctx, q, x);
        output(gf, b, y);
    }
}

/* A product reads x, then x is scaled in place (a write over what the product reads), then
 * another product reads the new x, beside an independent chain. */
static void in_place_over_read(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 64, 1), *w1 = input(ctx, GGML_TYPE_F32, 64, 40);
    struct ggml_tensor *w2 = input(ctx, GGML_TYPE_F16, 64, 24), *z = input(ctx, GGML_TYPE_F32, 100, 3);
    output(gf, b, ggml_mul_mat(ctx, w1, x));
    struct ggml_tensor *x2 = ggml_scale_inplace(ctx, x, -2.0f);
    ggml_build_forward_expand(gf, x2);
    output(gf, b, ggml_sqr(ctx, ggml_mul_mat(ctx, w2, x2)));
    output(gf, b, ggml_sqrt(ctx, ggml_sqr(ctx, z)));
}

/* A tensor's halves as views: one half is read, the other overwritten (no conflict: they may
 * share a barrier); then the overwritten half is read and the read half overwritten; the whole
 * tensor is summed last. */
static void views_in_parts(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    const int64_t n = 256;
    struct ggml_tensor *buf = input(ctx, GGML_TYPE_F32, 2 * n, 1), *src = input(ctx, GGML_TYPE_F32, n, 1);
    struct ggml_tensor *lo = ggml_view_1d(ctx, buf, n, 0), *hi = ggml_view_1d(ctx, buf, n, (size_t)n * sizeof(float));
    output(gf, b, ggml_scale(ctx, hi, 3.0f));
    struct ggml_tensor *lo_set = ggml_cpy(ctx, ggml_sqr(ctx, src), lo);
    ggml_build_forward_expand(gf, lo_set);
    output(gf, b, ggml_scale(ctx, lo_set, 0.25f));
    struct ggml_tensor *hi_set = ggml_cpy(ctx, ggml_neg(ctx, src), hi);
    ggml_build_forward_expand(gf, hi_set);
    output(gf, b, ggml_sum_rows(ctx, ggml_view_1d(ctx, buf, 2 * n, 0)));
}

/* A decode layer's q, k and v products of one q8_0-weighted activation (quantized once and
 * shared), the activation changed in place between k and v (its quantized form is stale then). */
static void shared_quantized(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 256, 1);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 48), x));
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 16), x));
    struct ggml_tensor *x2 = ggml_add_inplace(ctx, x, input(ctx, GGML_TYPE_F32, 256, 1));
    ggml_build_forward_expand(gf, x2);
    output(gf, b, ggml_mul_mat(ctx, input(ctx, GGML_TYPE_Q8_0, 256, 32), x2));
}

/* Intermediates that die early: the allocator gives their memory to later nodes of the other
 * branch, so a later node may write what an earlier one of another branch still reads. */
static void reused_memory(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 512, 2), *y = input(ctx, GGML_TYPE_F32, 512, 2);
    struct ggml_tensor *a = ggml_sqr(ctx, x);                     /* dies after a2 */
    struct ggml_tensor *a2 = ggml_scale(ctx, a, 0.5f);            /* dies after a3 */
    struct ggml_tensor *b1 = ggml_neg(ctx, y);                    /* may take a's memory */
    struct ggml_tensor *a3 = ggml_add(ctx, a2, x);
    struct ggml_tensor *b2 = ggml_mul(ctx, b1, y);                /* may take a2's memory */
    struct ggml_tensor *ab = ggml_sub(ctx, ggml_sqr(ctx, a3), ggml_scale(ctx, b2, 1.5f));
    ggml_build_forward_expand(gf, a3);
    ggml_build_forward_expand(gf, b2);
    output(gf, b, ab);
}

/* A small decode-shaped step: norm, three products, softmax over a product, and the residual. */
static void layer_like(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    struct ggml_tensor *x = input(ctx, GGML_TYPE_F32, 128, 1), *g = input(ctx, GGML_TYPE_F32, 128, 1);
    struct ggml_tensor *n = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), g);
    struct ggml_tensor *q = ggml_mul_mat(ctx, input(ctx, GGML_TYPE_F16, 128, 64), n);
    struct ggml_tensor *k = ggml_mul_mat(ctx, input(ctx, GGML_TYPE_F16, 128, 64), n);
    struct ggml_tensor *v = ggml_mul_mat(ctx, input(ctx, GGML_TYPE_F16, 128, 128), n);
    struct ggml_tensor *p = ggml_soft_max(ctx, ggml_mul(ctx, ggml_scale(ctx, q, 0.125f), k));
    struct ggml_tensor *o = ggml_mul_mat(ctx, input(ctx, GGML_TYPE_F16, 64, 128), p);
    output(gf, b, ggml_add(ctx, ggml_add(ctx, o, v), x));
    output(gf, b, p);
}

/* Two independent products split along k (few tiles, long rows): each passes its partial results
 * to its sum through the transient scratch; the nodes take regions of their own in turn, so the
 * second product need not wait for the first one's sum to have read them. */
static void split_products(struct ggml_context *ctx, struct ggml_cgraph *gf, struct built *b) {
    for (int i = 0; i < 2; i++)
        output(gf, b,
               ggml_mul_mat(ctx, input(ctx, GGML_TYPE_F32, 1024, 12),
                            input(ctx, GGML_TYPE_F32, 1024, 10)));
}

static const struct reorder_case cases[N_CASES] = {
    {"two chains", two_chains, 3,
     1e-12}, /* 2, and 1 before the outputs are copied for reading back */
    {"in place over a read", in_place_over_read, -1,
     1e-6}, /* f16 weights: the CPU rounds the activations (vk-test-cases.h) */
    {"views written and read in parts", views_in_parts, -1, 1e-12},
    {"shared quantized activations", shared_quantized, -1, 1e-4}, /* activations rounded to q8_0 */
    {"memory reused across branches", reused_memory, -1, 1e-12},
    {"layer-like", layer_like, -1, 1e-6},
    {"split products side by side", split_products, 2,
     1e-10}, /* 1, and 1 before the outputs are copied */
};

/* ---------------------------------------------------------------- running */

static uint64_t rng_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static void fill_input(struct ggml_tensor *t, uint64_t seed) {
    static float f[MAX_VALUES];
    static char bytes[MAX_VALUES * sizeof(float)];
    const int64_t n = ggml_nelements(t);
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int64_t i = 0; i < n; i++) f[i] = (float)((double)rng_next(&s) / (double)(1ULL << 53) * 2.0 - 1.0);
    if (t->type == GGML_TYPE_F32) memcpy(bytes, f, (size_t)n * sizeof *f);
    else ggml_quantize_chunk(t->type, f, bytes, 0, n / t->ne[0], t->ne[0], NULL);
    ggml_backend_tensor_set(t, bytes, 0, ggml_nbytes(t));
}

/* Compute c's graph on backend into out[k]; its barriers (Vulkan) into *barriers.  With cpu
 * (for Vulkan), through a ggml_backend_sched of backend and cpu, as llama.cpp runs its graphs:
 * the scheduler lets the backend order the nodes before it places them; else through a graph
 * allocator, in the graph's order. */
static bool compute(ggml_backend_t backend, ggml_backend_t cpu, const struct reorder_case *c,
                    float out[MAX_OUT][MAX_VALUES], int *barriers) {
    static char meta[1 << 20], meta_in[1 << 16];
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    inputs_ctx = ggml_init((struct ggml_init_params){sizeof meta_in, meta_in, true});
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 64, false);
    struct built b = {0};
    c->build(ctx, gf, &b);
    ggml_backend_buffer_t in_buf = ggml_backend_alloc_ctx_tensors(inputs_ctx, backend);
    ggml_backend_t both[2] = {backend, cpu};
    ggml_backend_sched_t sched = cpu ? ggml_backend_sched_new(both, NULL, 2, 256, false, true) : NULL;
    ggml_gallocr_t galloc = cpu ? NULL : ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    bool ok = in_buf && (cpu ? sched && ggml_backend_sched_alloc_graph(sched, gf) : ggml_gallocr_alloc_graph(galloc, gf));
    if (ok) {
        uint64_t seed = 1;
        for (struct ggml_tensor *t = ggml_get_first_tensor(inputs_ctx); t; t = ggml_get_next_tensor(inputs_ctx, t))
            fill_input(t, seed++);
        last_barriers = -1;
        ok = (cpu ? ggml_backend_sched_graph_compute(sched, gf) : ggml_backend_graph_compute(backend, gf)) ==
             GGML_STATUS_SUCCESS;
        *barriers = last_barriers;
        for (int k = 0; k < b.n_out && ok; k++) ggml_backend_tensor_get(b.out[k], out[k], 0, ggml_nbytes(b.out[k]));
    }
    if (sched) ggml_backend_sched_free(sched);
    if (galloc) ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(in_buf);
    ggml_free(inputs_ctx);
    ggml_free(ctx);
    return ok;
}

static size_t out_elements(const struct reorder_case *c, int k) {
    static char meta[1 << 16], meta_in[1 << 16];
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    inputs_ctx = ggml_init((struct ggml_init_params){sizeof meta_in, meta_in, true});
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 64, false);
    struct built b = {0};
    c->build(ctx, gf, &b);
    const size_t n = k < b.n_out ? (size_t)ggml_nelements(b.out[k]) : 0;
    ggml_free(inputs_ctx);
    ggml_free(ctx);
    return n;
}

/* Every case on Vulkan against the CPU; each case's barriers into barriers[]. */
static void run_cases(const char *order, int barriers[N_CASES]) {
    static float got[MAX_OUT][MAX_VALUES], want[MAX_OUT][MAX_VALUES];
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    ggml_backend_t vk = reg && ggml_backend_reg_dev_count(reg) ? ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL) : NULL;
    if (tap_ok(cpu && vk, "%s: the CPU and Vulkan backends", order))
        for (int i = 0; i < N_CASES; i++) {
            const struct reorder_case *c = &cases[i];
            int unused;
            barriers[i] = -1;
            if (!tap_ok(compute(cpu, NULL, c, want, &unused) && compute(vk, cpu, c, got, &barriers[i]), "%s, %s: computed (%s)",
                        order, c->name, ggmlc_last_error()))
                continue;
            for (int k = 0; k < MAX_OUT && out_elements(c, k); k++)
                ok_nmse(got[k], want[k], out_elements(c, k), c->max_nmse, "%s, %s: output %d as on the CPU", order, c->name, k);
        }
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
}

int main(void) {
    if (!test_vulkan_env()) return tap_skip_all("GGMLC_BUILDDIR is not set");
    setenv("GGMLC_DEBUG", "vulkan", 1);
    unsetenv("GGMLC_VK_REORDER");
    ggml_log_set(count_log, NULL);
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    const bool have = reg && ggml_backend_reg_dev_count(reg) > 0;
    ggmlc_shutdown();
    if (!have) return tap_skip_all("no Vulkan device");
    int reordered[N_CASES], in_order[N_CASES];
    run_cases("reordered", reordered);
    setenv("GGMLC_VK_REORDER", "0", 1);
    run_cases("graph order", in_order);
    for (int i = 0; i < N_CASES; i++) {
        const struct reorder_case *c = &cases[i];
        tap_ok(reordered[i] >= 0 && reordered[i] <= in_order[i], "%s: %d barriers reordered, %d in graph order", c->name,
               reordered[i], in_order[i]);
        if (c->barriers_reordered >= 0)
            tap_ok(reordered[i] == c->barriers_reordered, "%s: %d barriers reordered (%d expected)", c->name, reordered[i],
                   c->barriers_reordered);
    }
    return tap_done();
}
