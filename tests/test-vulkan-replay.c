/*
 * test-vulkan-replay.c - the Vulkan plugin keeps the command buffer of a segment and submits
 * it again for a segment with the same commands (plugins/vulkan/vk-replay.c), as a decode or
 * training loop builds the same graph each step.  A kept command buffer must never compute
 * another graph: every case below computes on Vulkan and on the CPU backend and compares,
 * and the plugin's trace (GGMLC_DEBUG=vulkan-replay) must show a replay where the commands
 * are equal and a new recording where they are not:
 *   - the same graph rebuilt in a new context at the same addresses, with new input data:
 *     replayed (the inputs ride in the device's own command buffer, submitted first);
 *   - an op parameter changed (the scale factor, a push constant): recorded;
 *   - the weights at another address (another buffer, other values): recorded;
 *   - another graph (one more node): recorded;
 *   - the first graph again after these: replayed from its kept command buffer;
 *   - the graph's memory freed and allocated anew: the results stay right.
 * The graph takes a row gather, so its segment also reads back index checks.
 * Skipped, visibly, when there is no Vulkan device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

enum { K = 64, N = 48, ROWS = 16, M = 8 };

/* The weights (a table of rows, a matrix, a bias), in one buffer of a backend. */
struct weights {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *table, *w, *b;
};

/* What a graph computes: out = soft_max(scale(w x + b, s)) (then squared when extra), with x
 * the rows idx of the table. */
struct params {
    float scale;
    bool extra;
    const int32_t *idx;
};

static float table_data[K * ROWS], w_data[K * N], w2_data[K * N], b_data[N];

/* pad_bytes of other tensors first, so that the weights lie at other offsets. */
static bool weights_new(struct weights *wt, ggml_backend_t backend, const float *w, size_t pad_bytes) {
    wt->ctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    if (pad_bytes) ggml_new_tensor_1d(wt->ctx, GGML_TYPE_I8, (int64_t)pad_bytes);
    wt->table = ggml_new_tensor_2d(wt->ctx, GGML_TYPE_F32, K, ROWS);
    wt->w = ggml_new_tensor_2d(wt->ctx, GGML_TYPE_F32, K, N);
    wt->b = ggml_new_tensor_1d(wt->ctx, GGML_TYPE_F32, N);
    wt->buf = ggml_backend_alloc_ctx_tensors(wt->ctx, backend);
    if (!wt->buf) return false;
    ggml_backend_tensor_set(wt->table, table_data, 0, sizeof table_data);
    ggml_backend_tensor_set(wt->w, w, 0, K * N * sizeof *w);
    ggml_backend_tensor_set(wt->b, b_data, 0, sizeof b_data);
    return true;
}

static void weights_free(struct weights *wt) {
    ggml_backend_buffer_free(wt->buf);
    ggml_free(wt->ctx);
}

/* Segments the plugin recorded and replayed, counted from its trace. */
static int n_recorded, n_replayed;

static void count_log(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)user;
    if (strstr(text, "commands recorded")) n_recorded++;
    else if (strstr(text, "commands replayed")) n_replayed++;
}

/* Build p's graph in a new context, allocate it with galloc, set its input, compute it on
 * backend and read out[N * M]; false on any failure. */
static bool compute(ggml_backend_t backend, ggml_gallocr_t galloc, const struct weights *wt,
                    const struct params *p, float *out) {
    static char meta[1 << 20]; /* reused each time, as a decode loop reuses its memory */
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    struct ggml_tensor *idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, M);
    ggml_set_input(idx);
    struct ggml_tensor *x = ggml_get_rows(ctx, wt->table, idx);
    struct ggml_tensor *y = ggml_add(ctx, ggml_mul_mat(ctx, wt->w, x), wt->b);
    struct ggml_tensor *z = ggml_soft_max(ctx, ggml_scale(ctx, y, p->scale));
    if (p->extra) z = ggml_sqr(ctx, z);
    ggml_set_output(z);
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 16, false);
    ggml_build_forward_expand(gf, z);
    bool ok = ggml_gallocr_alloc_graph(galloc, gf);
    if (ok) {
        ggml_backend_tensor_set(idx, p->idx, 0, M * sizeof *p->idx);
        ok = ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS;
    }
    if (ok) ggml_backend_tensor_get(z, out, 0, N * M * sizeof *out);
    ggml_free(ctx);
    return ok;
}

static ggml_backend_t cpu;
static struct weights cpu_w, cpu_w2;

/* Compute p on Vulkan (with vk_w) and on the CPU (with the weights of the same values),
 * compare, and check that the Vulkan segment was recorded (want_replay false) or replayed. */
static void check(const char *what, ggml_backend_t vk, ggml_gallocr_t vk_galloc, const struct weights *vk_w,
                  bool second_weights, const struct params *p, bool want_replay) {
    static float got[N * M], want[N * M];
    ggml_gallocr_t cpu_galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    const bool ref = compute(cpu, cpu_galloc, second_weights ? &cpu_w2 : &cpu_w, p, want);
    ggml_gallocr_free(cpu_galloc);
    n_recorded = n_replayed = 0;
    if (!tap_ok(ref && compute(vk, vk_galloc, vk_w, p, got), "%s: computed (%s)", what, ggmlc_last_error())) return;
    ok_nmse(got, want, N * M, 1e-10, "%s: the CPU's results", what);
    tap_ok(want_replay ? n_replayed == 1 && n_recorded == 0 : n_recorded == 1 && n_replayed == 0,
           "%s: %s (recorded %d, replayed %d)", what, want_replay ? "replayed" : "recorded", n_recorded,
           n_replayed);
}

static void run_cases(ggml_backend_t vk) {
    struct weights vk_w, vk_w2;
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    if (!tap_ok(weights_new(&vk_w, vk, w_data, 0) && weights_new(&vk_w2, vk, w2_data, 4096) && galloc,
                "the weights on Vulkan"))
        return;
    const int32_t idx_a[M] = {0, 3, 5, 7, 9, 11, 13, 15}, idx_b[M] = {15, 1, 1, 2, 8, 4, 6, 0};
    const struct params first = {.scale = 0.5f, .idx = idx_a};
    check("a first graph", vk, galloc, &vk_w, false, &first, false);
    check("the same graph, new inputs", vk, galloc, &vk_w, false, &(struct params){.scale = 0.5f, .idx = idx_b},
          true);
    check("the scale changed", vk, galloc, &vk_w, false, &(struct params){.scale = 0.25f, .idx = idx_b}, false);
    check("the weights at another address", vk, galloc, &vk_w2, true, &first, false);
    check("one more node", vk, galloc, &vk_w, false, &(struct params){.scale = 0.5f, .extra = true, .idx = idx_a},
          false);
    check("the first graph again", vk, galloc, &vk_w, false, &(struct params){.scale = 0.5f, .idx = idx_b}, true);
    ggml_gallocr_free(galloc);
    weights_free(&vk_w2);
    galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    static float got[N * M], want[N * M];
    ggml_gallocr_t cpu_galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    const bool ok = compute(vk, galloc, &vk_w, &first, got) && compute(cpu, cpu_galloc, &cpu_w, &first, want);
    if (tap_ok(ok, "after the graph's memory was freed and allocated anew: computed"))
        ok_nmse(got, want, N * M, 1e-10, "after the graph's memory was freed and allocated anew: the CPU's results");
    ggml_gallocr_free(cpu_galloc);
    ggml_gallocr_free(galloc);
    weights_free(&vk_w);
}

int main(void) {
    if (!test_vulkan_env()) return tap_skip_all("GGMLC_BUILDDIR is not set");
    setenv("GGMLC_DEBUG", "vulkan-replay", 1);
    unsetenv("GGMLC_VK_REPLAY");
    ggml_log_set(count_log, NULL);
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    test_seed(31);
    test_fill_uniform(table_data, K * ROWS, -1.0f, 1.0f);
    test_fill_uniform(w_data, K * N, -0.3f, 0.3f);
    test_fill_uniform(w2_data, K * N, -0.3f, 0.3f);
    test_fill_uniform(b_data, N, -0.5f, 0.5f);
    cpu = ggml_backend_init_by_name("cpu", NULL);
    ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    if (tap_ok(cpu && vk && weights_new(&cpu_w, cpu, w_data, 0) && weights_new(&cpu_w2, cpu, w2_data, 0),
               "the CPU and Vulkan backends"))
        run_cases(vk);
    weights_free(&cpu_w);
    weights_free(&cpu_w2);
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    return tap_done();
}
