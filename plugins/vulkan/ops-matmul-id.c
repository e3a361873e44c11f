/*
 * ops-matmul-id.c - mul_mat_id, the indirect product of mixtures of experts:
 * d[:, slot, t] = as[:, :, ids[slot, t]]^T b[:, slot % b->ne[1], t].  Weights
 * F32, F16, BF16 or any quantized type the shaders decode; f32 activations.
 * Few tokens: a matrix-vector product per (slot, token) pair (mv-id.comp).
 * More: per expert and tile of rows, a GEMM over the pairs routed to that
 * expert, found by scanning ids on the device (mm-id.comp).
 */
#include "ops-matmul.h"

#define MV_ID_MAX_TOKENS 8

struct id_tiles {
    uint32_t wg, bm, bn, bk, tm, tn;
};

/* GEMM tiles: larger where shared memory allows (GPUs), mm.comp's defaults otherwise. */
static struct id_tiles id_tiles_for(const struct vk_device *d) {
    if (d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU && d->props.limits.maxComputeSharedMemorySize >= 32768)
        return (struct id_tiles){256, 128, 128, 8, 8, 8};
    return (struct id_tiles){256, 64, 64, 16, 4, 4};
}

/* Rows of d per workgroup of the matrix-vector kernel (see mvq_rows in ops-matmul.c). */
static uint32_t mv_id_rows(const struct vk_device *d) {
    return d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 4;
}

static bool use_mv(const struct ggml_tensor *node) {
    return node->src[2]->ne[1] <= MV_ID_MAX_TOKENS;
}

/* Weights: whole rows with unit stride along k; strides in vk_addr_unit, within 32 bits. */
static bool weights_ok(const struct vk_device *d, const struct ggml_tensor *as) {
    if (as->nb[0] != ggml_type_size(as->type)) return false;
    if (!vk_is_block_quant(as->type)) return vk_float_code(as->type) >= 0 && vk_type_ok(d, as->type) && vk_shape_fits(as);
    return vk_quant_readable(d, as);
}

static bool ids_ok(const struct ggml_tensor *ids) {
    return ids->type == GGML_TYPE_I32 && ids->nb[0] % 4 == 0 && ids->nb[1] % 4 == 0 && ids->nb[0] / 4 <= UINT32_MAX &&
           ids->nb[1] / 4 <= UINT32_MAX && (uint64_t)ids->ne[0] * ids->ne[1] <= UINT32_MAX;
}

static bool mul_mat_id_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    if (!as || !b || !ids || !d->caps.storage16 || !d->caps.subgroup_arith) return false;
    if (!weights_ok(d, as) || !ids_ok(ids) || b->type != GGML_TYPE_F32 || b->nb[0] != 4 || !vk_shape_fits(b)) return false;
    if (node->type != GGML_TYPE_F32 || node->nb[0] != 4 || !vk_shape_fits(node)) return false;
    if (as->ne[3] != 1 || b->ne[3] != 1 || b->ne[1] == 0 || node->ne[0] != as->ne[1] || node->ne[1] != ids->ne[0] ||
        node->ne[2] != ids->ne[1] || b->ne[2] != ids->ne[1])
        return false;
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    if (use_mv(node)) return (uint64_t)ids->ne[0] * ids->ne[1] <= max[2];
    const struct id_tiles t = id_tiles_for(d);
    return (uint64_t)(as->ne[1] + t.bm - 1) / t.bm <= max[0] && (uint64_t)as->ne[2] <= max[2];
}

/* The scratch memory of mul_mat_id node: b quantized for the integer-dot kernel. */
static void mul_mat_id_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                               struct vk_scratch_need *need) {
    VkDeviceSize bytes;
    if (!node->src[0] || !node->src[1] || !node->src[2]) return;
    if (use_mv(node) && vk_mvq_dot_id_takes(d, node, &bytes)) need->needed += vk_scratch_round(bytes);
}

/* Few tokens: the integer-dot kernel where it takes the weights (ops-matmul-dot.c), mv-id.comp
 * otherwise; more: mm-id.comp. */
static enum ggml_status mul_mat_id_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    const bool mv = use_mv(node);
    const size_t a_unit = vk_addr_unit(as->type);
    enum ggml_status st;
    if (mv && vk_mvq_dot_id_record(rec, node, &st)) return st;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("%s_id_%s", mv ? "mv" : "mm", ggml_type_name(as->type)));
    const struct vk_pc_mm_id pc = vk_pc_matmul_id(node, a_unit);
    vk_dispatch_push(&ds, pc);
    if (mv) {
        const uint32_t rows = mv_id_rows(rec->d);
        ds.spec[0] = 128;
        ds.spec[1] = rows;
        ds.n_spec = 2;
        vk_groups_1d(rec->d, (uint64_t)as->ne[1], rows, ds.groups);
        ds.groups[2] = (uint32_t)(ids->ne[0] * ids->ne[1]);
    } else {
        const struct id_tiles t = id_tiles_for(rec->d);
        const uint32_t spec[6] = {t.wg, t.bm, t.bn, t.bk, t.tm, t.tn};
        memcpy(ds.spec, spec, sizeof spec);
        ds.n_spec = 6;
        ds.groups[0] = (uint32_t)((as->ne[1] + t.bm - 1) / t.bm);
        ds.groups[1] = 1;
        ds.groups[2] = (uint32_t)as->ne[2];
    }
    vk_dispatch_bind(&ds, as, false, (uint32_t)a_unit, VK_PUSH_WORD(vk_pc_mm_id, off_a));
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_mm_id, off_b));
    vk_dispatch_bind(&ds, ids, false, 4, VK_PUSH_WORD(vk_pc_mm_id, off_i));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm_id, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_matmul_id_register(struct vk_op_kernel *t) {
    t[GGML_OP_MUL_MAT_ID] =
        (struct vk_op_kernel){mul_mat_id_supports, mul_mat_id_record, mul_mat_id_scratch};
}
