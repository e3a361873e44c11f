/*
 * vk-fallback.c - computing one node on the CPU for the Vulkan plugin, when
 * the GPU cannot: its pipeline failed to compile, or one of its tensors lives
 * in a buffer that fell back to host memory because the device ran out.
 *
 * The operands are read into host copies with the same shapes and strides
 * (through the buffers' get_tensor, so device and host-backed buffers alike),
 * the node is rebuilt on those copies and computed by the CPU plugin
 * (ggml_graph_compute_with_ctx), and what it wrote goes back the same way.
 * Slow but exact: the CPU backend is the reference every kernel is tested
 * against.
 */
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "vk-impl.h"

#define FALLBACK_THREADS 4

/* Sources an op writes besides its result: AdamW's two moments. */
static bool src_written(const struct ggml_tensor *node, int i) {
    return node->op == GGML_OP_OPT_STEP_ADAMW && (i == 2 || i == 3);
}

/* A host tensor of ctx with t's type, shape and strides, holding a copy of t's bytes. */
static struct ggml_tensor *host_copy(struct ggml_context *ctx, const struct ggml_tensor *t, void **mem) {
    const size_t n = ggml_nbytes(t);
    *mem = malloc(n ? n : 1);
    struct ggml_tensor *h = *mem ? ggml_new_tensor(ctx, t->type, GGML_MAX_DIMS, t->ne) : NULL;
    if (!h) return NULL;
    memcpy(h->nb, t->nb, sizeof h->nb);
    h->data = *mem;
    if (n) ggml_backend_tensor_get(t, h->data, 0, n);
    return h;
}

enum ggml_status vk_cpu_compute_node(struct vk_device *d, const struct ggml_tensor *node) {
    ggmlc_clear_error();
    void *mem[GGML_MAX_SRC + 1] = {0};
    struct ggml_tensor *src_copy[GGML_MAX_SRC] = {0};
    const size_t graph_size = GGML_MAX_SRC + 1; /* the node and its operands (leaves) */
    const size_t ctx_size = (GGML_MAX_SRC + 2) * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){ctx_size, NULL, true});
    enum ggml_status s = GGML_STATUS_ALLOC_FAILED;
    struct ggml_tensor *out = ctx ? host_copy(ctx, node, &mem[GGML_MAX_SRC]) : NULL; /* keeps bytes an in-place op does not write */
    bool ok = out != NULL;
    for (int i = 0; ok && i < GGML_MAX_SRC; i++)
        if (node->src[i]) ok = (src_copy[i] = host_copy(ctx, node->src[i], &mem[i])) != NULL;
    const bool read_ok = ggmlc_last_status() == GGMLC_OK; /* a failed download (device lost) is recorded, not returned */
    if (ok && !read_ok) {
        s = GGML_STATUS_FAILED;
    } else if (ok) {
        out->op = node->op;
        memcpy(out->op_params, node->op_params, sizeof out->op_params);
        out->flags = node->flags;
        memcpy(out->src, src_copy, sizeof out->src);
        struct ggml_cgraph *g = ggml_new_graph_custom(ctx, graph_size, false);
        ggml_build_forward_expand(g, out);
        s = ggml_graph_compute_with_ctx(NULL, g, FALLBACK_THREADS);
    } else {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory computing %s on the CPU", d->name, ggml_op_desc(node));
    }
    if (s == GGML_STATUS_SUCCESS) {
        ggml_backend_tensor_set((struct ggml_tensor *)node, out->data, 0, ggml_nbytes(node));
        for (int i = 0; i < GGML_MAX_SRC; i++)
            if (node->src[i] && src_written(node, i)) ggml_backend_tensor_set(node->src[i], src_copy[i]->data, 0, ggml_nbytes(node->src[i]));
        if (ggmlc_last_status() != GGMLC_OK) s = GGML_STATUS_FAILED;
    }
    for (int i = 0; i <= GGML_MAX_SRC; i++) free(mem[i]);
    if (ctx) ggml_free(ctx);
    return s;
}
