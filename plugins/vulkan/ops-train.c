/*
 * ops-train.c - training kernels: cross_entropy_loss and its gradient, and
 * the optimizer steps opt_step_adamw / opt_step_sgd (in place, f32).
 */
#include "vk-impl.h"

/* ------------------------------------------------------ cross entropy */

static bool f32_rows(const struct ggml_tensor *t) { return t->type == GGML_TYPE_F32 && t->nb[0] == 4 && vk_shape_fits(t); }

static bool cross_entropy_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const bool back = node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    const struct ggml_tensor *x = node->src[back ? 1 : 0], *t = node->src[back ? 2 : 1], *g = back ? node->src[0] : NULL;
    return x && t && f32_rows(x) && f32_rows(t) && ggml_are_same_shape(x, t) && f32_rows(node) &&
           (!back || (g && g->type == GGML_TYPE_F32 && ggml_is_scalar(g) && ggml_are_same_shape(node, x)));
}

static enum ggml_status cross_entropy_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const bool back = node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    const struct ggml_tensor *x = node->src[back ? 1 : 0], *t = node->src[back ? 2 : 1], *g = back ? node->src[0] : x;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find(back ? "cross_entropy_back_f32" : "cross_entropy_f32"));
    ds.spec[0] = 256;
    ds.n_spec = 1;
    const struct vk_shape sx = vk_shape_of(x), st = vk_shape_of(t), sd = vk_shape_of(node);
    const struct vk_pc_cross_entropy pc = {
        .ne0 = sx.ne[0],
        .ne1 = sx.ne[1],
        .ne2 = sx.ne[2],
        .ne3 = sx.ne[3],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .nt1 = st.nb[1],
        .nt2 = st.nb[2],
        .nt3 = st.nb[3],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_x));
    vk_dispatch_bind(&ds, t, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_t));
    vk_dispatch_bind(&ds, g, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_g));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_d));
    if (back) vk_groups_1d(rec->d, (uint64_t)ggml_nrows(x), 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------------- optimizers */

static bool contiguous_f32(const struct ggml_tensor *t) { return t && t->type == GGML_TYPE_F32 && ggml_is_contiguous(t) && vk_shape_fits(t); }

static bool opt_step_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    if (!contiguous_f32(node) || !contiguous_f32(node->src[1])) return false;
    if (node->op == GGML_OP_OPT_STEP_SGD)
        return contiguous_f32(node->src[2]) && ggml_nelements(node->src[2]) == GGMLC_SGD_N_PARAMS;
    return contiguous_f32(node->src[2]) && contiguous_f32(node->src[3]) &&
           contiguous_f32(node->src[4]) && ggml_nelements(node->src[4]) == GGMLC_ADAMW_N_PARAMS;
}

static enum ggml_status opt_step_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const bool adamw = node->op == GGML_OP_OPT_STEP_ADAMW;
    const struct ggml_tensor *g = node->src[1], *hp = node->src[adamw ? 4 : 2];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("optstep_f32"));
    const struct vk_pc_optstep pc = {.n = (uint32_t)ggml_nelements(node), .adamw = adamw};
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, node, true, 4,
                     VK_PUSH_WORD(vk_pc_optstep, off_w)); /* node views the parameters */
    vk_dispatch_bind(&ds, g, false, 4, VK_PUSH_WORD(vk_pc_optstep, off_g));
    /* SGD reads no moments */
    vk_dispatch_bind(&ds, adamw ? node->src[2] : g, adamw, 4, VK_PUSH_WORD(vk_pc_optstep, off_m));
    vk_dispatch_bind(&ds, adamw ? node->src[3] : g, adamw, 4, VK_PUSH_WORD(vk_pc_optstep, off_v));
    vk_dispatch_bind(&ds, hp, false, 4, VK_PUSH_WORD(vk_pc_optstep, off_h));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_train_register(struct vk_op_kernel *t) {
    t[GGML_OP_CROSS_ENTROPY_LOSS] = (struct vk_op_kernel){cross_entropy_supports, cross_entropy_record};
    t[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = (struct vk_op_kernel){cross_entropy_supports, cross_entropy_record};
    t[GGML_OP_OPT_STEP_ADAMW] = (struct vk_op_kernel){opt_step_supports, opt_step_record};
    t[GGML_OP_OPT_STEP_SGD] = (struct vk_op_kernel){opt_step_supports, opt_step_record};
}
