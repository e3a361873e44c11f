/*
 * test-buffer-lifetime.c - after ggml_backend_buffer_free, the context's tensors still point
 * at the buffer; setting, reading or computing them gives a clear error (GGMLC_ERR_INVALID_ARG,
 * "freed"), never a plugin touching freed memory.  On the CPU backend and, where the Vulkan
 * plugin finds a device, on Vulkan.
 */
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N = 8 };

static bool freed_error(void) {
    return ggmlc_last_status() == GGMLC_ERR_INVALID_ARG &&
           strstr(ggmlc_last_error(), "freed") != NULL;
}

/* backend computes; cpu ends the scheduler's list (backend itself when it is the CPU). */
static void check_backend(ggml_backend_t backend, ggml_backend_t cpu) {
    const char *name = ggml_backend_name(backend);
    struct ggml_context *ctx = ggml_init(
        (struct ggml_init_params){64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *a = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N), "a");
    struct ggml_tensor *b = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N), "b");
    struct ggml_tensor *sum = ggml_set_name(ggml_add(ctx, a, b), "sum");
    struct ggml_tensor *view = ggml_view_1d(ctx, a, 4, 0);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, sum);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 10.0f * (float)i;
    ggml_backend_tensor_set(a, x, 0, sizeof x);
    ggml_backend_tensor_set(b, y, 0, sizeof y);
    bool ok = ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS;
    ggml_backend_tensor_get(sum, out, 0, sizeof out);
    for (int i = 0; i < N; i++) ok = ok && out[i] == 11.0f * (float)i;
    tap_ok(buf && ok, "%s: a + b computes before the buffer is freed", name);

    ggml_backend_buffer_free(buf);
    ggmlc_clear_error();
    ggml_backend_tensor_set(a, x, 0, sizeof x);
    tap_ok(freed_error(), "%s: tensor_set after the free is refused (%s)", name,
           ggmlc_last_error());
    for (int i = 0; i < N; i++) out[i] = -1.0f;
    ggmlc_clear_error();
    ggml_backend_tensor_get(view, out, 0, 4 * sizeof(float));
    tap_ok(freed_error() && out[0] == -1.0f,
           "%s: tensor_get of a view after the free is refused (%s)", name, ggmlc_last_error());
    ggmlc_clear_error();
    const enum ggml_status st = ggml_backend_graph_compute(backend, gf);
    tap_ok(st != GGML_STATUS_SUCCESS && freed_error(),
           "%s: graph_compute after the free fails (%s)", name, ggmlc_last_error());
    ggml_backend_t list[2] = {backend, cpu};
    ggml_backend_sched_t sched = ggml_backend_sched_new(backend == cpu ? &list[1] : list, NULL,
                                                        backend == cpu ? 1 : 2, 64, false, true);
    ggmlc_clear_error();
    const enum ggml_status st_sched =
        sched ? ggml_backend_sched_graph_compute(sched, gf) : GGML_STATUS_FAILED;
    tap_ok(sched && st_sched != GGML_STATUS_SUCCESS && freed_error(),
           "%s: the scheduler's compute after the free fails (status %d: %s)", name, (int)st_sched,
           ggmlc_last_error());
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(buf); /* a second free of the same buffer: ignored */
    tap_ok(true, "%s: a second ggml_backend_buffer_free is harmless", name);
    ggml_free(ctx);
}

int main(void) {
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    if (tap_ok(cpu != NULL, "the CPU backend starts")) check_backend(cpu, cpu);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    if (!test_vulkan_env()) return tap_done();
    ggml_backend_reg_t reg = (ggmlc_init(), ggml_backend_reg_by_name("vulkan"));
    if (reg && ggml_backend_reg_dev_count(reg) > 0) {
        ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
        cpu = ggml_backend_init_by_name("cpu", NULL);
        if (tap_ok(vk && cpu, "the Vulkan and CPU backends start")) check_backend(vk, cpu);
        ggml_backend_free(vk);
        ggml_backend_free(cpu);
    } else {
        tap_skip("no Vulkan device", "the Vulkan backend");
    }
    ggmlc_shutdown();
    return tap_done();
}
