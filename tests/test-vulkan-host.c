/*
 * test-vulkan-host.c - a segment equal to one submitted before is submitted again without its
 * commands being logged (plugins/vulkan/vk-replay.c, "segments kept whole"), and never when
 * anything its commands depend on differs.  Graphs are rebuilt each time in the same memory, as
 * a decode loop rebuilds them, and differ from the first in one thing at a time; each computes
 * on Vulkan and on the CPU backend, the results are compared, and the plugin's trace
 * (GGMLC_DEBUG=vulkan-replay) must show the segment replayed whole exactly when it is equal:
 *   - the same graph, new input values: replayed whole;
 *   - an op changed (mul for add), an op parameter (the scale), a shape (rows gathered), a
 *     stride (a view of every other row instead of the first rows: same shape, same address),
 *     a flag (one more output): recorded;
 *   - the same graph at the same addresses in another buffer (a second allocator; the first
 *     one's memory still alive): recorded;
 *   - back in the first buffer, then the first graph again: right results, then replayed whole.
 * The graph gathers rows, so its segment also reads back index checks; a bad index must still
 * be reported when the segment is replayed whole.
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

/* What a graph computes: z = cont(rows of soft_max(scale(w x (+|*) b, s))), x the rows idx of
 * the table; the rows of y taken are the first m/2 (step 1) or every other one (step 2). */
struct params {
    float scale;
    bool mul;          /* the bias multiplied instead of added */
    int m;             /* rows gathered: M or M / 2 */
    int step;          /* 1 or 2 */
    bool y_output;     /* y marked as an output too */
    const int32_t *idx;
};

static float table_data[K * ROWS], w_data[K * N], b_data[N];

static bool weights_new(struct weights *wt, ggml_backend_t backend) {
    wt->ctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    wt->table = ggml_new_tensor_2d(wt->ctx, GGML_TYPE_F32, K, ROWS);
    wt->w = ggml_new_tensor_2d(wt->ctx, GGML_TYPE_F32, K, N);
    wt->b = ggml_new_tensor_1d(wt->ctx, GGML_TYPE_F32, N);
    wt->buf = ggml_backend_alloc_ctx_tensors(wt->ctx, backend);
    if (!wt->buf) return false;
    ggml_backend_tensor_set(wt->table, table_data, 0, sizeof table_data);
    ggml_backend_tensor_set(wt->w, w_data, 0, sizeof w_data);
    ggml_backend_tensor_set(wt->b, b_data, 0, sizeof b_data);
    return true;
}

static void weights_free(struct weights *wt) {
    ggml_backend_buffer_free(wt->buf);
    ggml_free(wt->ctx);
}

/* Segments the plugin logged (recorded or replayed from an equal log) and replayed whole. */
static int n_logged, n_whole;

static void count_log(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)user;
    if (strstr(text, "replayed whole")) n_whole++;
    else if (strstr(text, "commands recorded") || strstr(text, "commands replayed")) n_logged++;
}

/* Build p's graph in the same memory as every time, allocate it with galloc, set its input,
 * compute it on backend and read z (out, N * m / 2 floats); false on any failure. */
static bool compute(ggml_backend_t backend, ggml_gallocr_t galloc, const struct weights *wt,
                    const struct params *p, float *out) {
    static char meta[1 << 20]; /* reused each time, as a decode loop reuses its memory */
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){sizeof meta, meta, true});
    struct ggml_tensor *idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, p->m);
    ggml_set_input(idx);
    struct ggml_tensor *x = ggml_get_rows(ctx, wt->table, idx);
    struct ggml_tensor *wx = ggml_mul_mat(ctx, wt->w, x);
    struct ggml_tensor *y = p->mul ? ggml_mul(ctx, wx, wt->b) : ggml_add(ctx, wx, wt->b);
    y = ggml_soft_max(ctx, ggml_scale(ctx, y, p->scale));
    if (p->y_output) ggml_set_output(y);
    struct ggml_tensor *rows = ggml_view_2d(ctx, y, N, p->m / 2, (size_t)p->step * y->nb[1], 0);
    struct ggml_tensor *z = ggml_cont(ctx, rows);
    ggml_set_output(z);
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 32, false);
    ggml_build_forward_expand(gf, z);
    bool ok = ggml_gallocr_alloc_graph(galloc, gf);
    if (ok) {
        ggml_backend_tensor_set(idx, p->idx, 0, (size_t)p->m * sizeof *p->idx);
        ok = ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS;
    }
    if (ok) ggml_backend_tensor_get(z, out, 0, ggml_nbytes(z));
    ggml_free(ctx);
    return ok;
}

static ggml_backend_t cpu;
static struct weights cpu_w;

enum expect { RECORDED, WHOLE, EITHER };

/* Compute p on Vulkan and on the CPU, compare, and check how the Vulkan segment was submitted. */
static void check(const char *what, ggml_backend_t vk, ggml_gallocr_t vk_galloc, const struct weights *vk_w,
                  const struct params *p, enum expect want) {
    static float got[N * M], expected[N * M];
    ggml_gallocr_t cpu_galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    const bool ref = compute(cpu, cpu_galloc, &cpu_w, p, expected);
    ggml_gallocr_free(cpu_galloc);
    n_logged = n_whole = 0;
    if (!tap_ok(ref && compute(vk, vk_galloc, vk_w, p, got), "%s: computed (%s)", what, ggmlc_last_error())) return;
    ok_nmse(got, expected, (size_t)N * p->m / 2, 1e-10, "%s: the CPU's results", what);
    if (want == EITHER) return;
    tap_ok(want == WHOLE ? n_whole == 1 && n_logged == 0 : n_logged == 1 && n_whole == 0,
           "%s: %s (logged %d, replayed whole %d)", what, want == WHOLE ? "replayed whole" : "recorded", n_logged,
           n_whole);
}

static const int32_t idx_a[M] = {0, 3, 5, 7, 9, 11, 13, 15}, idx_b[M] = {15, 1, 1, 2, 8, 4, 6, 0};

/* A bad index in a segment replayed whole is still reported. */
static void check_bad_index(ggml_backend_t vk, ggml_gallocr_t galloc, const struct weights *vk_w) {
    static float got[N * M];
    const int32_t bad[M] = {0, 1, 2, 3, ROWS + 4, 5, 6, 7};
    n_logged = n_whole = 0;
    const bool ok = compute(vk, galloc, vk_w, &(struct params){.scale = 0.5f, .m = M, .step = 1, .idx = bad}, got);
    tap_ok(!ok && n_whole == 1, "an index out of range in a segment replayed whole fails the graph (%s; whole %d)",
           ggmlc_last_error(), n_whole);
}

static void run_cases(ggml_backend_t vk) {
    struct weights vk_w;
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    ggml_gallocr_t other = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    if (!tap_ok(weights_new(&vk_w, vk) && galloc && other, "the weights on Vulkan")) return;
    const struct params base = {.scale = 0.5f, .m = M, .step = 1, .idx = idx_a};
    struct params p = base;
    check("a first graph", vk, galloc, &vk_w, &p, RECORDED);
    p.idx = idx_b;
    check("the same graph, new inputs", vk, galloc, &vk_w, &p, WHOLE);
    p = base, p.mul = true;
    check("mul for add", vk, galloc, &vk_w, &p, RECORDED);
    p = base, p.scale = 0.25f;
    check("the scale changed", vk, galloc, &vk_w, &p, RECORDED);
    p = base, p.m = M / 2;
    check("fewer rows gathered", vk, galloc, &vk_w, &p, RECORDED);
    p = base, p.step = 2;
    check("every other row: another stride", vk, galloc, &vk_w, &p, RECORDED);
    p = base, p.y_output = true;
    check("one more output", vk, galloc, &vk_w, &p, RECORDED);
    check("the first graph in another buffer", vk, other, &vk_w, &base, RECORDED);
    check("back in the first buffer", vk, galloc, &vk_w, &base, EITHER);
    p = base, p.idx = idx_b;
    check("the first graph again", vk, galloc, &vk_w, &p, WHOLE);
    check_bad_index(vk, galloc, &vk_w);
    check("after the bad index, the first graph", vk, galloc, &vk_w, &base, EITHER);
    ggml_gallocr_free(other);
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
    test_seed(37);
    test_fill_uniform(table_data, K * ROWS, -1.0f, 1.0f);
    test_fill_uniform(w_data, K * N, -0.3f, 0.3f);
    test_fill_uniform(b_data, N, -0.5f, 0.5f);
    cpu = ggml_backend_init_by_name("cpu", NULL);
    ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    if (tap_ok(cpu && vk && weights_new(&cpu_w, cpu), "the CPU and Vulkan backends")) run_cases(vk);
    weights_free(&cpu_w);
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    return tap_done();
}
