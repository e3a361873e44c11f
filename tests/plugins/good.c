/*
 * good.c - a small, valid test plugin: one host-memory device that adds
 * F32 tensors of the same shape, computed through the core's default
 * per-node path (no graph_compute of its own).
 *
 * Options: device = its device name (default "<backend>0"), type = cpu|gpu.
 * Built a second time with GOOD_WRITE_MARKER: loading the library then
 * creates the file named by $GGMLC_TEST_MARKER, which shows whether the
 * loader opened it at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ggmlc-plugin.h"

#ifdef GOOD_WRITE_MARKER
__attribute__((constructor)) static void write_marker(void) {
    const char *path = getenv("GGMLC_TEST_MARKER");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fputs("opened\n", f);
        fclose(f);
    }
}
#endif

struct good_device {
    char name[64];
    char description[96];
    enum ggml_backend_dev_type type;
};

/* dst = src0 + src1, element by element, any strides. */
static enum ggml_status good_add(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    for (int64_t i3 = 0; i3 < dst->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < dst->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < dst->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
                    const size_t oa = i0 * a->nb[0] + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
                    const size_t ob = i0 * b->nb[0] + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
                    const size_t od = i0 * dst->nb[0] + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3];
                    *(float *)((char *)dst->data + od) =
                        *(const float *)((const char *)a->data + oa) + *(const float *)((const char *)b->data + ob);
                }
    return GGML_STATUS_SUCCESS;
}

static const ggmlc_op_fn good_ops[GGML_OP_ADD + 1] = {[GGML_OP_ADD] = good_add};

static bool good_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    return op->op == GGML_OP_ADD && op->type == GGML_TYPE_F32 && op->src[0]->type == GGML_TYPE_F32 &&
           op->src[1]->type == GGML_TYPE_F32 && ggml_are_same_shape(op, op->src[0]) && ggml_are_same_shape(op, op->src[1]);
}

static const char *good_dev_name(ggml_backend_dev_t dev) { return ((struct good_device *)ggmlc_device_context(dev))->name; }

static const char *good_dev_description(ggml_backend_dev_t dev) {
    return ((struct good_device *)ggmlc_device_context(dev))->description;
}

static void good_dev_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) {
    *free_mem = 1u << 20;
    *total = 2u << 20;
}

static enum ggml_backend_dev_type good_dev_type(ggml_backend_dev_t dev) {
    return ((struct good_device *)ggmlc_device_context(dev))->type;
}

static const char *good_dev_caps(ggml_backend_dev_t dev) { return "test-only add-f32"; }

static const char *good_backend_name(ggml_backend_t backend) { return good_dev_name(ggml_backend_get_device(backend)); }

static const struct ggmlc_backend_iface good_backend_iface = {
    .struct_size = sizeof(struct ggmlc_backend_iface),
    .get_name = good_backend_name,
};

static ggml_backend_t good_init_backend(ggml_backend_dev_t dev, const char *params) {
    return ggmlc_backend_new(dev, &good_backend_iface, NULL);
}

static ggml_backend_buffer_type_t good_buffer_type(ggml_backend_dev_t dev) { return ggml_backend_cpu_buffer_type(); }

static bool good_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) { return ggml_backend_buft_is_host(buft); }

static void good_dev_free(ggml_backend_dev_t dev) { free(ggmlc_device_context(dev)); }

static const struct ggmlc_device_iface good_device_iface = {
    .struct_size = sizeof(struct ggmlc_device_iface),
    .get_name = good_dev_name,
    .get_description = good_dev_description,
    .get_memory = good_dev_memory,
    .get_type = good_dev_type,
    .get_caps = good_dev_caps,
    .init_backend = good_init_backend,
    .get_buffer_type = good_buffer_type,
    .ops = good_ops,
    .n_ops = GGML_OP_ADD + 1,
    .supports_op = good_supports_op,
    .supports_buft = good_supports_buft,
    .free = good_dev_free,
};

static const struct ggmlc_reg_iface good_reg_iface = {.struct_size = sizeof(struct ggmlc_reg_iface)};

static int good_probe(void) { return 1; }

static enum ggmlc_status good_init(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) {
    const char *type = ggmlc_plugin_option(opts, "type", "cpu");
    struct good_device *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return ggmlc_set_error(GGMLC_ERR_NOMEM, "good: out of memory");
    snprintf(ctx->name, sizeof ctx->name, "%s", ggmlc_plugin_option(opts, "device", "good0"));
    snprintf(ctx->description, sizeof ctx->description, "test device of backend %s", opts->name);
    ctx->type = strcasecmp(type, "gpu") == 0 ? GGML_BACKEND_DEVICE_TYPE_GPU : GGML_BACKEND_DEVICE_TYPE_CPU;
    ggml_backend_reg_t reg = ggmlc_reg_new(opts->name, &good_reg_iface, NULL);
    if (!reg || !ggmlc_device_new(reg, &good_device_iface, ctx)) {
        free(ctx);
        return ggmlc_last_status();
    }
    *reg_out = reg;
    return GGMLC_OK;
}

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER, "good", "1.2.3", "a test plugin that adds f32 tensors", good_probe, good_init, NULL,
};
