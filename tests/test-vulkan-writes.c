/*
 * test-vulkan-writes.c - small writes into Vulkan buffers (ggml_backend_tensor_set and
 * _memset) are kept and recorded at the start of the next command buffer
 * (plugins/vulkan/vk-deferred.c).  Transfers of one command buffer may run in any order, so two
 * writes of the same bytes need a barrier between them: ggml's callers do write a tensor twice
 * between graphs (test-backend-ops randomizes every tensor, then ggml_graph_reset sets the loss
 * gradient to 1; without the barrier the H200 kept the random value).  Lavapipe runs transfers
 * in order, so the test sets GGMLC_DEBUG=vulkan-reorder: the plugin records the writes between
 * two barriers backwards, an order a device may run them in.  Each case writes, reads back (or
 * computes) on Vulkan and compares with what the writes mean, in order.  Writes too large for
 * the command buffer (over 256 KiB) or not 4-byte aligned are kept as copies out of an upload
 * buffer: they submit nothing themselves, keep their order with the small writes around them,
 * and the upload buffer is not written over while a graph that copies out of it may run.
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

enum { BIG = 1 << 17 }; /* floats: 512 KiB, over the command buffer's share */

static void fill_big(float *v, float base) {
    for (int i = 0; i < BIG; i++) v[i] = base + (float)(i % 1000) * 0.5f;
}

static uint64_t submits_now(void) {
    struct ggmlc_counters c;
    ggmlc_counters_get(&c);
    return c.submits;
}

/* big * 2 computed on vk, started only (ggml_backend_graph_compute_async): read with *sum later. */
struct doubled {
    struct ggml_context *ctx;
    struct ggml_cgraph *gf;
    struct ggml_tensor *out;
    ggml_gallocr_t ga;
};

static bool doubled_start(struct doubled *g, ggml_backend_t vk, struct ggml_tensor *big) {
    g->ctx = ggml_init(
        (struct ggml_init_params){4 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    g->out = ggml_scale(g->ctx, big, 2.0f);
    g->gf = ggml_new_graph(g->ctx);
    ggml_build_forward_expand(g->gf, g->out);
    g->ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(vk));
    return ggml_gallocr_alloc_graph(g->ga, g->gf) &&
           ggml_backend_graph_compute_async(vk, g->gf) == GGML_STATUS_SUCCESS;
}

/* Whether the doubled graph read values v. */
static bool doubled_check(struct doubled *g, ggml_backend_t vk, const float *v, float *got) {
    ggml_backend_synchronize(vk);
    ggml_backend_tensor_get(g->out, got, 0, BIG * sizeof *got);
    bool ok = true;
    for (int i = 0; i < BIG && ok; i++) ok = got[i] == 2.0f * v[i];
    ggml_gallocr_free(g->ga);
    ggml_free(g->ctx);
    return ok;
}

static void test_large_writes(ggml_backend_t vk) {
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *big = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, BIG),
                       *bytes = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, 64);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, vk);
    float *a = malloc(BIG * sizeof *a), *b = malloc(BIG * sizeof *b),
          *got = malloc(BIG * sizeof *got);
    if (!tap_ok(buf && a && b && got, "a Vulkan buffer of a 512 KiB tensor")) goto done;
    fill_big(a, 1.0f), fill_big(b, -7.0f);

    const uint64_t before = submits_now();
    ggml_backend_tensor_set(big, a, 0, BIG * sizeof *a);
    tap_ok(submits_now() == before, "a 512 KiB write submits nothing by itself (%llu submits)",
           (unsigned long long)(submits_now() - before));
    ggml_backend_tensor_get(big, got, 0, BIG * sizeof *got);
    tap_ok(memcmp(got, a, BIG * sizeof *a) == 0, "a 512 KiB write reads back");

    ggml_backend_tensor_set(big, a, 0, BIG * sizeof *a);
    ggml_backend_tensor_set(big, b + 1000, 1000 * sizeof *b,
                            100000 * sizeof *b); /* large, over the first */
    const float small[4] = {-1, -2, -3, -4};
    ggml_backend_tensor_set(big, small, 1100 * sizeof *b,
                            sizeof small); /* small, over the second */
    memcpy(got, a, BIG * sizeof *a);
    memcpy(got + 1000, b + 1000, 100000 * sizeof *b);
    memcpy(got + 1100, small, sizeof small);
    memcpy(b, got, BIG * sizeof *b); /* what the tensor must hold now */
    ggml_backend_tensor_get(big, got, 0, BIG * sizeof *got);
    tap_ok(memcmp(got, b, BIG * sizeof *b) == 0,
           "large and small writes over each other keep their order");

    struct doubled first, second;
    ggml_backend_tensor_set(big, a, 0, BIG * sizeof *a);
    bool started = doubled_start(&first, vk, big);
    fill_big(b, 3.0f);
    ggml_backend_tensor_set(big, b, 0,
                            BIG * sizeof *b); /* while the first graph may still copy a */
    started = doubled_start(&second, vk, big) && started;
    tap_ok(started && doubled_check(&first, vk, a, got),
           "a graph started before the next large write reads the values before it");
    tap_ok(started && doubled_check(&second, vk, b, got), "... and the next graph the new ones");

    const char text[] = "unaligned";
    char back[sizeof text];
    ggml_backend_tensor_memset(bytes, 0, 0, 64);
    ggml_backend_tensor_set(bytes, text, 3, sizeof text);
    ggml_backend_tensor_get(bytes, back, 3, sizeof back);
    tap_ok(memcmp(back, text, sizeof text) == 0, "a write at an unaligned offset reads back");
done:
    free(a), free(b), free(got);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
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
    test_large_writes(vk);
    ggml_backend_free(vk);
    return tap_done();
}
