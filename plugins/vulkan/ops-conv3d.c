/*
 * ops-conv3d.c - volumetric image ops: im2col_3d and conv_3d (direct), each
 * output element gathering its taps.  Strides, paddings and dilations travel
 * packed two to a push word, so they must fit 16 bits.
 */
#include "vk-impl.h"

/* Pack s0 s1 s2 p0 p1 p2 d0 d1 d2 of g into five words; false when one does not fit. */
static bool pack_geometry(const struct ggmlc_conv3d_params *g, uint32_t packed[5]) {
    int32_t params[9];
    for (int i = 0; i < 3; i++) {
        params[i] = g->s[i];
        params[3 + i] = g->p[i];
        params[6 + i] = g->d[i];
    }
    memset(packed, 0, 5 * sizeof *packed);
    for (int i = 0; i < 9; i++) {
        const bool is_pad = i >= 3 && i < 6;
        if (params[i] < (is_pad ? 0 : 1) || params[i] > 0xffff) return false;
        packed[i / 2] |= (uint32_t)params[i] << (16 * (i % 2));
    }
    return true;
}

static bool unit_rows(const struct ggml_tensor *t) { return t->nb[0] == ggml_type_size(t->type); }

/* ---------------------------------------------------------- im2col_3d */

/* a: kernel (its shape), b: data [W, H, D, IC*N] (f32/f16); struct ggmlc_conv3d_params. */
static bool im2col_3d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    uint32_t packed[5];
    const struct ggmlc_conv3d_params g = ggmlc_im2col_3d_params_of(node);
    const int32_t ic = g.ic;
    return ic > 0 && pack_geometry(&g, packed) && b->ne[3] % ic == 0 &&
           node->ne[0] == a->ne[0] * a->ne[1] * a->ne[2] * ic && (b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16) &&
           (node->type == GGML_TYPE_F32 || node->type == GGML_TYPE_F16) && vk_type_ok(d, b->type) && vk_type_ok(d, node->type) &&
           unit_rows(b) && unit_rows(node) && vk_shape_fits(b) && vk_shape_fits(node);
}

static enum ggml_status im2col_3d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const size_t tb = ggml_type_size(b->type), td = ggml_type_size(node->type);
    const struct ggmlc_conv3d_params g = ggmlc_im2col_3d_params_of(node);
    const uint32_t ic = (uint32_t)g.ic, n = (uint32_t)(b->ne[3] / ic);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("im2col3d_%s_%s", ggml_type_name(b->type), ggml_type_name(node->type)));
    struct vk_pc_im2col3d pc = {
        .KW = (uint32_t)a->ne[0],
        .KH = (uint32_t)a->ne[1],
        .KD = (uint32_t)a->ne[2],
        .IC = ic,
        .W = (uint32_t)b->ne[0],
        .H = (uint32_t)b->ne[1],
        .D = (uint32_t)b->ne[2],
        .nx1 = (uint32_t)(b->nb[1] / tb),
        .nx2 = (uint32_t)(b->nb[2] / tb),
        .nx3 = (uint32_t)(b->nb[3] / tb),
        .OW = (uint32_t)node->ne[1],
        .OH = (uint32_t)node->ne[2],
        .OD = (uint32_t)node->ne[3] / n,
        .N = n,
        .nd1 = (uint32_t)(node->nb[1] / td),
        .nd2 = (uint32_t)(node->nb[2] / td),
        .nd3 = (uint32_t)(node->nb[3] / td),
    };
    pack_geometry(&g, pc.spd);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, b, false, (uint32_t)tb, VK_PUSH_WORD(vk_pc_im2col3d, off_x));
    vk_dispatch_bind(&ds, node, true, (uint32_t)td, VK_PUSH_WORD(vk_pc_im2col3d, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ conv_3d */

/* a: kernel [KW, KH, KD, IC*OC] (f32/f16), b: data [W, H, D, IC*N] (f32);
 * struct ggmlc_conv3d_params. */
static bool conv_3d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    uint32_t packed[5];
    const struct ggmlc_conv3d_params g = ggmlc_conv_3d_params_of(node);
    const int64_t ic = g.ic, n = g.n, oc = g.oc;
    return pack_geometry(&g, packed) && ic > 0 && n > 0 && oc > 0 && k->ne[3] == ic * oc &&
           x->ne[3] == ic * n &&
           node->ne[3] == oc * n && (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) &&
           x->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && unit_rows(k) && unit_rows(x) && unit_rows(node) &&
           vk_shape_fits(k) && vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status conv_3d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const size_t tk = ggml_type_size(k->type);
    const struct ggmlc_conv3d_params g = ggmlc_conv_3d_params_of(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv3d_%s", ggml_type_name(k->type)));
    struct vk_pc_conv3d pc = {
        .KW = (uint32_t)k->ne[0],
        .KH = (uint32_t)k->ne[1],
        .KD = (uint32_t)k->ne[2],
        .IC = (uint32_t)g.ic,
        .OC = (uint32_t)g.oc,
        .nk1 = (uint32_t)(k->nb[1] / tk),
        .nk2 = (uint32_t)(k->nb[2] / tk),
        .nk3 = (uint32_t)(k->nb[3] / tk),
        .W = (uint32_t)x->ne[0],
        .H = (uint32_t)x->ne[1],
        .D = (uint32_t)x->ne[2],
        .nx1 = (uint32_t)(x->nb[1] / 4),
        .nx2 = (uint32_t)(x->nb[2] / 4),
        .nx3 = (uint32_t)(x->nb[3] / 4),
        .OW = (uint32_t)node->ne[0],
        .OH = (uint32_t)node->ne[1],
        .OD = (uint32_t)node->ne[2],
        .NQ = (uint32_t)node->ne[3],
        .nd1 = (uint32_t)(node->nb[1] / 4),
        .nd2 = (uint32_t)(node->nb[2] / 4),
        .nd3 = (uint32_t)(node->nb[3] / 4),
    };
    pack_geometry(&g, pc.spd);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, k, false, (uint32_t)tk, VK_PUSH_WORD(vk_pc_conv3d, off_k));
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_conv3d, off_x));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_conv3d, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_conv3d_register(struct vk_op_kernel *t) {
    t[GGML_OP_IM2COL_3D] = (struct vk_op_kernel){im2col_3d_supports, im2col_3d_record};
    t[GGML_OP_CONV_3D] = (struct vk_op_kernel){conv_3d_supports, conv_3d_record};
}
