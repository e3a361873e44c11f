/*
 * test-vulkan-writes.c - small writes into Vulkan buffers (ggml_backend_tensor_set and
 * _memset) are kept and recorded at the start of the next command buffer
 * (plugins/vulkan/vk-deferred.c).  Transfers of one command buffer may run in any order, so two
 * writes of the same bytes need a barrier between them: ggml's callers do write a tensor twice
 * between graphs (test-backend-ops randomizes every tensor, then ggml_graph_reset sets the loss
 * gradient to 1; without the barrier the H200 kept the random value).  Lavapipe runs transfers
 * in order, so the test sets GGMLC_DEBUG=vulkan-reorder: the plugin records the writes between
 * two barriers backwards, an order a device may run them in.  Each case writes, reads back (or
 * computes) on Vulkan and compares with what the writes mean, in order.
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

enum { N = 64 };

struct fixture {
    ggml_backend_t vk;
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *t, *u;
};

static bool fixture_new(struct fixture *f, ggml_backend_t vk) {
    f->vk = vk;
    f->ctx = ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead(), NULL, true});
    f->t = ggml_new_tensor_1d(f->ctx, GGML_TYPE_F32, N);
    f->u = ggml_new_tensor_1d(f->ctx, GGML_TYPE_F32, N);
    f->buf = ggml_backend_alloc_ctx_tensors(f->ctx, vk);
    return f->buf != NULL;
}

static void fixture_free(struct fixture *f) {
    ggml_backend_buffer_free(f->buf);
    ggml_free(f->ctx);
}

static void fill_values(float *v, float base) {
    for (int i = 0; i < N; i++) v[i] = base + (float)i;
}

static bool equal(const float *a, const float *b) { return memcmp(a, b, N * sizeof *a) == 0; }

/* t read back from the device. */
static void read_t(const struct fixture *f, float *out) { ggml_backend_tensor_get(f->t, out, 0, N * sizeof *out); }

static void test_rewrites(ggml_backend_t vk) {
    struct fixture f;
    if (!tap_ok(fixture_new(&f, vk), "a Vulkan buffer of two tensors")) return;
    float a[N], b[N], got[N], want[N];
    fill_values(a, 100), fill_values(b, -50);

    ggml_backend_tensor_set(f.t, a, 0, sizeof a);
    ggml_backend_tensor_set(f.t, b, 0, sizeof b);
    read_t(&f, got);
    tap_ok(equal(got, b), "a tensor written twice reads back the second values");

    ggml_backend_tensor_set(f.t, a, 0, sizeof a);
    ggml_backend_tensor_memset(f.t, 0, 0, sizeof a);
    read_t(&f, got);
    memset(want, 0, sizeof want);
    tap_ok(equal(got, want), "written, then cleared: zeros");

    ggml_backend_tensor_memset(f.t, 0, 0, sizeof a);
    ggml_backend_tensor_set(f.t, b + 16, 16 * sizeof(float), 16 * sizeof(float));
    read_t(&f, got);
    memcpy(want + 16, b + 16, 16 * sizeof(float));
    tap_ok(equal(got, want), "cleared, then a part written: the part over zeros");

    ggml_backend_tensor_set(f.t, a, 0, sizeof a); /* the tensor, then one element: test-backend-ops' steps */
    const float one = 1.0f;
    ggml_backend_tensor_set(f.t, &one, 5 * sizeof(float), sizeof one);
    ggml_backend_tensor_set(f.u, b, 0, sizeof b); /* another tensor in between: no barrier needed */
    ggml_backend_tensor_set(f.t, &one, 9 * sizeof(float), sizeof one);
    memcpy(want, a, sizeof a);
    want[5] = want[9] = 1.0f;
    struct ggml_context *gctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *sum = ggml_add(gctx, f.t, f.u);
    struct ggml_cgraph *gf = ggml_new_graph(gctx);
    ggml_build_forward_expand(gf, sum);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    bool ok = ggml_gallocr_alloc_graph(ga, gf) && ggml_backend_graph_compute(vk, gf) == GGML_STATUS_SUCCESS;
    if (ok) ggml_backend_tensor_get(sum, got, 0, sizeof got);
    for (int i = 0; i < N; i++) want[i] += b[i];
    tap_ok(ok && equal(got, want), "elements overwritten before a graph: the graph reads the last values");
    ggml_gallocr_free(ga);
    ggml_free(gctx);
    fixture_free(&f);
}

int main(void) {
    setenv("GGMLC_DEBUG", "vulkan-reorder", 1);
    test_vulkan_env();
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    if (!tap_ok(vk != NULL, "the Vulkan backend starts (%s)", ggmlc_last_error())) return tap_done();
    test_rewrites(vk);
    ggml_backend_free(vk);
    return tap_done();
}
