/* client.c - adds two vectors through ggml's backend API; prints the sum. */
#include <stdio.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

int main(void) {
    struct ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    for (int i = 0; i < 3; i++) {
        ((float *)a->data)[i] = (float)(i + 1);
        ((float *)b->data)[i] = 10.0f * (float)(i + 1);
    }
    struct ggml_tensor *c = ggml_add(ctx, a, b);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, c);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu || ggml_backend_graph_compute(cpu, gf) != GGML_STATUS_SUCCESS) return 1;
    const float *y = (const float *)c->data;
    printf("%g %g %g\n", y[0], y[1], y[2]);
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return 0;
}
