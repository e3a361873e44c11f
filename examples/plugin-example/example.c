/*
 * example.c - a complete third-party backend plugin for ggmlc.
 *
 * It computes ADD, MUL and RELU on f32 tensors in its own memory, and
 * nothing else: ggmlc's scheduler runs every other operator on the CPU and
 * copies tensors between the two.  Its buffers are plain malloc'ed memory,
 * but they are declared as device memory (is_host = false), exactly like a
 * GPU's, so the core never reads them directly: data moves only through the
 * buffer's set/get/memset hooks.
 *
 * Build it against an installed ggmlc with the Makefile next to this file;
 * docs/plugins.md walks through it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ggmlc-plugin.h>

/* ------------------------------------------------------------ buffers */

#define EXAMPLE_ALIGNMENT 64

static void buffer_free(ggml_backend_buffer_t buffer) { free(ggmlc_buffer_context(buffer)); }
static void *buffer_base(ggml_backend_buffer_t buffer) { return ggmlc_buffer_context(buffer); }

/* tensor->data is an address inside this buffer: the hooks copy bytes to and from it */
static enum ggml_status buffer_memset(ggml_backend_buffer_t buffer, struct ggml_tensor *t, uint8_t value, size_t offset,
                                      size_t size) {
    memset((char *)t->data + offset, value, size);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status buffer_set(ggml_backend_buffer_t buffer, struct ggml_tensor *t, const void *data, size_t offset,
                                   size_t size) {
    memcpy((char *)t->data + offset, data, size);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status buffer_get(ggml_backend_buffer_t buffer, const struct ggml_tensor *t, void *data, size_t offset,
                                   size_t size) {
    memcpy(data, (const char *)t->data + offset, size);
    return GGML_STATUS_SUCCESS;
}

static void buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    memset(ggmlc_buffer_context(buffer), value, ggml_backend_buffer_get_size(buffer));
}

static const struct ggmlc_buffer_iface buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = buffer_free,
    .get_base = buffer_base,
    .memset_tensor = buffer_memset,
    .set_tensor = buffer_set,
    .get_tensor = buffer_get,
    .clear = buffer_clear,
    /* no cpy_tensor: the core stages device-to-device copies through host memory */
};

static const char *buft_name(ggml_backend_buffer_type_t buft) { return "EXAMPLE"; }
static size_t buft_alignment(ggml_backend_buffer_type_t buft) { return EXAMPLE_ALIGNMENT; }

static ggml_backend_buffer_t buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    const size_t padded = (size + EXAMPLE_ALIGNMENT - 1) / EXAMPLE_ALIGNMENT * EXAMPLE_ALIGNMENT;
    void *mem = aligned_alloc(EXAMPLE_ALIGNMENT, padded);
    if (!mem) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "example: cannot allocate %zu bytes", size);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggmlc_buffer_new(buft, &buffer_iface, mem, size);
    if (!buffer) free(mem);
    return buffer;
}

static const struct ggmlc_buft_iface buft_iface = {
    .struct_size = sizeof(struct ggmlc_buft_iface),
    .get_name = buft_name,
    .alloc_buffer = buft_alloc,
    .get_alignment = buft_alignment,
    /* is_host left NULL: the memory counts as the device's own */
};

/* ------------------------------------------------------------ kernels */

struct example_device {
    ggml_backend_buffer_type_t buft;
    int verbose;
    size_t nodes_computed; /* read by programs through get_proc_address */
};

static struct example_device the_device;

/* dst = op(src0, src1) with src1 repeated (broadcast) over dst; all f32 and contiguous. */
static enum ggml_status binary(const struct ggmlc_op_call *call, struct ggml_tensor *dst, int is_mul) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const float *pa = a->data, *pb = b->data;
    float *pd = dst->data;
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < dst->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < dst->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < dst->ne[1]; i1++) {
                const int64_t row = ((i3 % b->ne[3]) * b->ne[2] + i2 % b->ne[2]) * b->ne[1] + i1 % b->ne[1];
                const float *rb = pb + row * b->ne[0];
                for (int64_t i0 = 0; i0 < dst->ne[0]; i0++, i++) {
                    const float y = rb[i0 % b->ne[0]];
                    pd[i] = is_mul ? pa[i] * y : pa[i] + y;
                }
            }
    return GGML_STATUS_SUCCESS;
}

static void note_node(const struct ggml_tensor *dst) {
    the_device.nodes_computed++;
    if (the_device.verbose) ggmlc_log(GGML_LOG_LEVEL_INFO, "example: computing %s '%s'\n", ggml_op_desc(dst), dst->name);
}

static enum ggml_status op_add(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    note_node(dst);
    return binary(call, dst, 0);
}

static enum ggml_status op_mul(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    note_node(dst);
    return binary(call, dst, 1);
}

static enum ggml_status op_unary(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    note_node(dst);
    const float *x = dst->src[0]->data;
    float *y = dst->data;
    const int64_t n = ggml_nelements(dst);
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f; /* supports_op admits RELU only */
    return GGML_STATUS_SUCCESS;
}

/* The op vtable: indexed by enum ggml_op, NULL = not computed here. */
static ggmlc_op_fn example_ops[GGML_OP_COUNT];

/* Finer check for ops that have a vtable entry: types, layouts, the unary kind. */
static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    if (op->type != GGML_TYPE_F32 || !ggml_is_contiguous(op)) return false;
    for (int s = 0; s < 2; s++) {
        const struct ggml_tensor *src = op->src[s];
        if (src && (src->type != GGML_TYPE_F32 || !ggml_is_contiguous(src))) return false;
    }
    switch (op->op) {
    case GGML_OP_ADD:
    case GGML_OP_MUL:
        return ggml_are_same_shape(op, op->src[0]) && ggml_can_repeat(op->src[1], op->src[0]);
    case GGML_OP_UNARY:
        return ggml_get_unary_op(op) == GGML_UNARY_OP_RELU;
    default:
        return false;
    }
}

/* ------------------------------------------------------ device, backend */

static const char *dev_name(ggml_backend_dev_t dev) { return "EXAMPLE0"; }
static const char *dev_description(ggml_backend_dev_t dev) { return "ggmlc example plugin (ADD, MUL, RELU in its own memory)"; }
static void dev_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) { *free_mem = *total = (size_t)1 << 30; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) { return GGML_BACKEND_DEVICE_TYPE_ACCEL; }
static ggml_backend_buffer_type_t dev_buffer_type(ggml_backend_dev_t dev) { return the_device.buft; }
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) { return buft == the_device.buft; }

static const char *backend_name(ggml_backend_t backend) { return "example"; }

static const struct ggmlc_backend_iface backend_iface = {
    .struct_size = sizeof(struct ggmlc_backend_iface),
    .get_name = backend_name,
    /* no graph_compute: the core calls example_ops[] node by node */
};

static ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char *params) {
    return ggmlc_backend_new(dev, &backend_iface, &the_device);
}

/* ------------------------------------------------------------ registry */

static size_t nodes_computed(void) { return the_device.nodes_computed; }

static void *reg_proc_address(ggml_backend_reg_t reg, const char *name) {
    return strcmp(name, "example_nodes_computed") == 0 ? (void *)nodes_computed : NULL;
}

static const struct ggmlc_reg_iface reg_iface = {
    .struct_size = sizeof(struct ggmlc_reg_iface),
    .get_proc_address = reg_proc_address,
};

static int plugin_probe(void) { return 1; /* needs no hardware */ }

static enum ggmlc_status plugin_init(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) {
    the_device.verbose = strcmp(ggmlc_plugin_option(opts, "verbose", "0"), "0") != 0;
    example_ops[GGML_OP_ADD] = op_add;
    example_ops[GGML_OP_MUL] = op_mul;
    example_ops[GGML_OP_UNARY] = op_unary;

    ggml_backend_reg_t reg = ggmlc_reg_new("example", &reg_iface, NULL);
    if (!reg) return GGMLC_ERR_NOMEM;
    const struct ggmlc_device_iface dev_iface = {
        .struct_size = sizeof(struct ggmlc_device_iface),
        .get_name = dev_name,
        .get_description = dev_description,
        .get_memory = dev_memory,
        .get_type = dev_type,
        .init_backend = dev_init_backend,
        .get_buffer_type = dev_buffer_type,
        .ops = example_ops,
        .n_ops = GGML_OP_COUNT,
        .supports_op = dev_supports_op,
        .supports_buft = dev_supports_buft,
    };
    ggml_backend_dev_t dev = ggmlc_device_new(reg, &dev_iface, &the_device);
    if (!dev) return GGMLC_ERR_NOMEM;
    the_device.buft = ggmlc_buft_new(dev, &buft_iface, NULL);
    if (!the_device.buft) return GGMLC_ERR_NOMEM;
    if (the_device.verbose) ggmlc_log(GGML_LOG_LEVEL_INFO, "example: backend '%s' ready\n", opts->name);
    *reg_out = reg;
    return GGMLC_OK;
}

static void plugin_fini(void) { memset(&the_device, 0, sizeof the_device); }

/* The one exported symbol: data, read and checked before any code above runs. */
GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER,
    "example",
    "1.0",
    "example third-party backend: ADD, MUL, RELU in its own buffers",
    plugin_probe,
    plugin_init,
    plugin_fini,
};
