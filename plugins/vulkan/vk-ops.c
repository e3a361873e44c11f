/*
 * vk-ops.c - the op table, the exact support check shared by every op, and
 * small helpers the op families use to describe tensors to shaders.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk-impl.h"

static struct vk_op_kernel op_table[GGML_OP_COUNT];
static pthread_once_t op_table_once = PTHREAD_ONCE_INIT;

static void fill_op_table(void) {
    vk_ops_elementwise_register(op_table);
    vk_ops_reduce_register(op_table);
    vk_ops_matmul_register(op_table);
    vk_ops_index_register(op_table);
    vk_ops_nn_register(op_table);
    vk_ops_train_register(op_table);
    vk_ops_conv_register(op_table);
    vk_ops_matmul_id_register(op_table);
}

const struct vk_op_kernel *vk_op_table(void) {
    pthread_once(&op_table_once, fill_op_table);
    return op_table;
}

int vk_float_code(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F32: return 0;
    case GGML_TYPE_F16: return 1;
    case GGML_TYPE_BF16: return 2;
    default: return -1;
    }
}

bool vk_is_block_quant(enum ggml_type t) {
    return t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1 || t == GGML_TYPE_Q8_0 ||
           t == GGML_TYPE_Q2_K || t == GGML_TYPE_Q3_K || t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K || t == GGML_TYPE_Q6_K ||
           t == GGML_TYPE_IQ4_NL || t == GGML_TYPE_IQ4_XS || t == GGML_TYPE_MXFP4;
}

size_t vk_addr_unit(enum ggml_type t) {
    if (!vk_is_block_quant(t)) return ggml_type_size(t);
    return t == GGML_TYPE_MXFP4 ? 1 : 2;
}

bool vk_quant_readable(const struct vk_device *d, const struct ggml_tensor *t) {
    if (!vk_is_block_quant(t->type) || !d->caps.storage16 || (t->type == GGML_TYPE_MXFP4 && !d->caps.int8)) return false;
    if (t->ne[0] % ggml_blck_size(t->type) != 0 || t->nb[0] != ggml_type_size(t->type)) return false;
    const size_t unit = vk_addr_unit(t->type);
    for (int i = 1; i < 4; i++)
        if (t->nb[i] % unit != 0 || t->nb[i] / unit > UINT32_MAX) return false;
    return ggml_nbytes(t) / unit <= UINT32_MAX;
}

bool vk_type_ok(const struct vk_device *d, enum ggml_type type) {
    if (type == GGML_TYPE_F32 || type == GGML_TYPE_I32) return true;
    return (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) && d->use_f16;
}

/* The shaders by name in an open-addressing hash table (built once): kernels look their
 * shader up by name for every node they support or record, and a scan of the few hundred
 * names was a visible part of the host's time per graph. */
#define VK_NAME_SLOTS 1024 /* a power of two, over twice the shaders */
_Static_assert(VK_SHADER_COUNT * 2 <= VK_NAME_SLOTS, "the shader name table has free slots");
static uint16_t name_slots[VK_NAME_SLOTS]; /* shader id + 1; 0: empty */
static pthread_once_t name_slots_once = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *s) { /* FNV-1a */
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void fill_name_slots(void) {
    for (int i = 0; i < VK_SHADER_COUNT; i++) {
        uint32_t at = name_hash(vk_shader_blobs[i].name);
        while (name_slots[at % VK_NAME_SLOTS]) at++;
        name_slots[at % VK_NAME_SLOTS] = (uint16_t)(i + 1);
    }
}

enum vk_shader_id vk_shader_find(const char *fmt, ...) {
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    pthread_once(&name_slots_once, fill_name_slots);
    for (uint32_t at = name_hash(name);; at++) {
        const int slot = name_slots[at % VK_NAME_SLOTS];
        if (!slot) return VK_SHADER_COUNT;
        if (strcmp(vk_shader_blobs[slot - 1].name, name) == 0) return (enum vk_shader_id)(slot - 1);
    }
}

struct vk_shape vk_shape_of(const struct ggml_tensor *t) {
    const size_t ts = ggml_type_size(t->type);
    struct vk_shape s;
    for (int i = 0; i < 4; i++) {
        s.ne[i] = (uint32_t)t->ne[i];
        s.nb[i] = (uint32_t)(t->nb[i] / ts);
    }
    return s;
}

bool vk_shape_fits(const struct ggml_tensor *t) {
    const size_t ts = ggml_type_size(t->type);
    if (ggml_blck_size(t->type) != 1 || ts == 0) return false;
    for (int i = 0; i < 4; i++)
        if (t->nb[i] % ts != 0 || t->nb[i] / ts > UINT32_MAX || t->ne[i] > UINT32_MAX) return false;
    return ggml_nelements(t) <= UINT32_MAX;
}

/* A tensor's bytes, bound with an offset rounded down to the alignment, must fit one binding. */
static bool fits_binding(const struct vk_device *d, const struct ggml_tensor *t) {
    const uint64_t slack = d->props.limits.minStorageBufferOffsetAlignment + 4;
    return (uint64_t)ggml_nbytes(t) + slack <= d->props.limits.maxStorageBufferRange;
}

void vk_node_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                     struct vk_scratch_need *need) {
    if (node->op < 0 || node->op >= GGML_OP_COUNT) return;
    const struct vk_op_kernel *k = &vk_op_table()[node->op];
    if (k->scratch) k->scratch(d, node, need);
}

bool vk_supports_node(const struct vk_device *d, const struct ggml_tensor *node) {
    if (!node || node->op < 0 || node->op >= GGML_OP_COUNT || d->lost) return false; /* a lost device computes nothing */
    if (ggmlc_op_is_view(node->op)) return true;
    if (d->op_broken[node->op]) return false; /* its pipeline failed to compile: the CPU takes it */
    const struct vk_op_kernel *k = &vk_op_table()[node->op];
    if (!k->record || !fits_binding(d, node)) return false;
    for (int i = 0; i < GGML_MAX_SRC; i++)
        if (node->src[i] && !fits_binding(d, node->src[i])) return false;
    return !k->supports || k->supports(d, node);
}
