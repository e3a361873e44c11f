/*
 * test-vulkan-readback.c - a segment's outputs (ggml_set_output) are copied to host-visible
 * memory by its own command buffer (plugins/vulkan/vk-record.c, "outputs read back with the
 * segment"), so that a decode step reads its logits without a second submit and fence wait:
 *   - compute, then read the output: one submit and one wait in all, the CPU's values;
 *   - read part of it again: no submit, no wait;
 *   - write the output, then read it: the written values, not the ones read back;
 *   - an output with a row gather (index checks read back in the same copy): one wait;
 *   - an output larger than what is read back: its values through a transfer of its own.
 * The counters are ggmlc_counters_get's.  Skipped, visibly, when there is no Vulkan device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N = 256, BIG = 1 << 19, ROWS = 8 }; /* BIG floats: 2 MiB, over the 1 MiB read back */

static float x_data[BIG], table_data[N * ROWS];

/* y = 2x (n values) or, with gather, y = rows idx of the table; computed on backend. */
struct graph {
    struct ggml_context *ctx;
    ggml_gallocr_t galloc;
    struct ggml_tensor *y;
};

static bool graph_new(struct graph *g, ggml_backend_t backend, int64_t n, bool gather) {
    g->ctx = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_cgraph *gf = ggml_new_graph(g->ctx);
    struct ggml_tensor *x, *idx = NULL;
    if (gather) {
        x = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, N, ROWS);
        idx = ggml_new_tensor_1d(g->ctx, GGML_TYPE_I32, 3);
        ggml_set_input(idx);
        g->y = ggml_get_rows(g->ctx, x, idx);
    } else {
        x = ggml_new_tensor_1d(g->ctx, GGML_TYPE_F32, n);
        g->y = ggml_scale(g->ctx, x, 2.0f);
    }
    ggml_set_input(x);
    ggml_set_output(g->y);
    ggml_build_forward_expand(gf, g->y);
    g->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!ggml_gallocr_alloc_graph(g->galloc, gf)) return false;
    ggml_backend_tensor_set(x, gather ? table_data : x_data, 0, ggml_nbytes(x));
    if (idx) ggml_backend_tensor_set(idx, (const int32_t[]){5, 0, 7}, 0, 3 * sizeof(int32_t));
    return ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS;
}

static void graph_free(struct graph *g) {
    ggml_gallocr_free(g->galloc);
    ggml_free(g->ctx);
}

static struct ggmlc_counters since(const struct ggmlc_counters *before) {
    struct ggmlc_counters now;
    ggmlc_counters_get(&now);
    now.submits -= before->submits;
    now.waits -= before->waits;
    return now;
}

static void check_small(ggml_backend_t vk) {
    static float got[N], want[N];
    for (int i = 0; i < N; i++) want[i] = 2.0f * x_data[i];
    struct graph g;
    struct ggmlc_counters c0, c;
    bool ok = graph_new(&g, vk, N, false);
    ggmlc_counters_get(&c0);
    if (ok) ggml_backend_tensor_get(g.y, got, 0, sizeof got);
    if (tap_ok(ok, "2x computed on Vulkan (%s)", ggmlc_last_error())) {
        ok_nmse(got, want, N, 0, "2x read back: the CPU's values");
        ggmlc_counters_get(&c);
        tap_ok(c.submits - c0.submits == 0 && c.waits - c0.waits <= 1, "the read adds no submit (%llu) and at most the graph's wait (%llu)",
               (unsigned long long)(c.submits - c0.submits), (unsigned long long)(c.waits - c0.waits));
        ggmlc_counters_get(&c0);
        float part[16];
        ggml_backend_tensor_get(g.y, part, 40 * sizeof(float), sizeof part);
        c = since(&c0);
        tap_ok(memcmp(part, want + 40, sizeof part) == 0 && c.submits == 0 && c.waits == 0,
               "part of it read again: its values, no submit (%llu), no wait (%llu)", (unsigned long long)c.submits,
               (unsigned long long)c.waits);
        float written[N];
        for (int i = 0; i < N; i++) written[i] = (float)i;
        ggml_backend_tensor_set(g.y, written, 0, sizeof written);
        ggml_backend_tensor_get(g.y, got, 0, sizeof got);
        tap_ok(memcmp(got, written, sizeof got) == 0, "the output written after the graph reads as written");
    }
    graph_free(&g);
}

/* The graph computed with its outputs' read then costs one submit and one wait. */
static void check_one_wait(ggml_backend_t vk) {
    static float got[N];
    struct ggmlc_counters c0;
    ggmlc_counters_get(&c0);
    struct graph g;
    const bool ok = graph_new(&g, vk, N, false);
    ggml_backend_tensor_get(g.y, got, 0, sizeof got);
    const struct ggmlc_counters c = since(&c0);
    tap_ok(ok && c.submits == 1 && c.waits == 1, "graph and read: %llu submit, %llu wait (1 each)",
           (unsigned long long)c.submits, (unsigned long long)c.waits);
    graph_free(&g);
}

static void check_gather(ggml_backend_t vk) {
    static float got[3 * N], want[3 * N];
    const int rows[3] = {5, 0, 7};
    for (int r = 0; r < 3; r++) memcpy(want + r * N, table_data + rows[r] * N, N * sizeof(float));
    struct ggmlc_counters c0;
    ggmlc_counters_get(&c0);
    struct graph g;
    const bool ok = graph_new(&g, vk, N, true);
    if (ok) ggml_backend_tensor_get(g.y, got, 0, sizeof got);
    const struct ggmlc_counters c = since(&c0);
    if (tap_ok(ok, "a row gather computed (%s)", ggmlc_last_error())) {
        ok_nmse(got, want, 3 * N, 0, "the gathered rows read back with the index checks: the CPU's values");
        tap_ok(c.submits == 1 && c.waits == 1, "graph with index checks and read: %llu submit, %llu wait (1 each)",
               (unsigned long long)c.submits, (unsigned long long)c.waits);
    }
    graph_free(&g);
}

static void check_big(ggml_backend_t vk) {
    static float got[BIG], want[BIG];
    for (int i = 0; i < BIG; i++) want[i] = 2.0f * x_data[i];
    struct graph g;
    const bool ok = graph_new(&g, vk, BIG, false);
    if (ok) ggml_backend_tensor_get(g.y, got, 0, sizeof got);
    if (tap_ok(ok, "2x of 2 MiB computed (%s)", ggmlc_last_error()))
        ok_nmse(got, want, BIG, 0, "2x of 2 MiB, read by a transfer of its own: the CPU's values");
    graph_free(&g);
}

int main(void) {
    if (!test_vulkan_env()) return tap_skip_all("GGMLC_BUILDDIR is not set");
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    test_seed(17);
    test_fill_uniform(x_data, BIG, -1.0f, 1.0f);
    test_fill_uniform(table_data, N * ROWS, -1.0f, 1.0f);
    ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    if (tap_ok(vk != NULL, "the Vulkan backend")) {
        check_small(vk);
        check_one_wait(vk);
        check_gather(vk);
        check_big(vk);
    }
    ggml_backend_free(vk);
    ggmlc_shutdown();
    return tap_done();
}
