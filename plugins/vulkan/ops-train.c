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

/* Push constants of x's rows against t's, into d. */
static struct vk_pc_cross_entropy cross_entropy_pc(const struct ggml_tensor *x, const struct ggml_tensor *t,
                                                   const struct ggml_tensor *d) {
    const struct vk_shape sx = vk_shape_of(x), st = vk_shape_of(t), sd = vk_shape_of(d);
    return (struct vk_pc_cross_entropy){
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
}

enum { CE_BLOCK = 256, CE_SHORT_ROW = 64 /* as cross-entropy.comp */ };

static void cross_entropy_init(struct vk_dispatch *ds, enum vk_shader_id shader, const struct vk_pc_cross_entropy *pc) {
    vk_dispatch_init(ds, shader);
    ds->spec[0] = CE_BLOCK;
    ds->n_spec = 1;
    vk_dispatch_push(ds, *pc);
}

/* The bytes of the rows' terms of the loss (the scratch of its two-dispatch form). */
static VkDeviceSize cross_entropy_terms(const struct ggml_tensor *node) {
    return vk_scratch_round((VkDeviceSize)ggml_nrows(node->src[0]) * 4);
}

static void cross_entropy_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                                  struct vk_scratch_need *need) {
    (void)d;
    const VkDeviceSize bytes = cross_entropy_terms(node);
    if (node->op == GGML_OP_CROSS_ENTROPY_LOSS && bytes <= VK_SCRATCH_TRANSIENT_MAX && bytes > need->transient)
        need->transient = bytes;
}

static bool two_pass_pipelines(struct vk_device *d, enum vk_shader_id rows, enum vk_shader_id sum) {
    const uint32_t spec[1] = {CE_BLOCK};
    return vk_optional_pipeline(d, rows, spec, 1, VK_PATH_LOSS_ROWS, "the loss by one workgroup") &&
           vk_optional_pipeline(d, sum, spec, 1, VK_PATH_LOSS_ROWS, "the loss by one workgroup");
}

/* The loss as each row's term into the transient scratch (a workgroup per long row, a thread per
 * short one), then their sum by one workgroup; false when the scratch does not hold the terms or
 * a pipeline fails (then one workgroup computes it all). */
static bool cross_entropy_two_pass(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    const struct ggml_tensor *x = node->src[0], *t = node->src[1];
    const VkDeviceSize bytes = cross_entropy_terms(node);
    const enum vk_shader_id rows_shader = vk_shader_find("cross_entropy_rows_f32"),
                            sum_shader = vk_shader_find("cross_entropy_sum_f32");
    VkDeviceSize at;
    if (!vk_scratch_transient(rec, bytes, &at) || !two_pass_pipelines(rec->d, rows_shader, sum_shader)) return false;
    const struct vk_pc_cross_entropy pc = cross_entropy_pc(x, t, node);
    struct vk_dispatch rows, sum;
    cross_entropy_init(&rows, rows_shader, &pc);
    vk_dispatch_bind(&rows, x, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_x));
    vk_dispatch_bind(&rows, t, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_t));
    vk_dispatch_bind(&rows, x, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_g)); /* unread */
    vk_dispatch_bind_scratch(&rows, at, bytes, true);                               /* off_d 0 */
    const uint64_t n_rows = (uint64_t)ggml_nrows(x);
    vk_groups_1d(rec->d, n_rows, x->ne[0] <= CE_SHORT_ROW ? CE_BLOCK : 1, rows.groups);
    *st = vk_record_dispatch(rec, &rows);
    if (*st != GGML_STATUS_SUCCESS) return true;
    cross_entropy_init(&sum, sum_shader, &pc);
    vk_dispatch_bind_scratch(&sum, at, bytes, false); /* as x, off_x 0 */
    vk_dispatch_bind(&sum, t, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_t)); /* unread */
    vk_dispatch_bind(&sum, t, false, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_g)); /* unread */
    vk_dispatch_bind(&sum, node, true, 4, VK_PUSH_WORD(vk_pc_cross_entropy, off_d));
    *st = vk_record_dispatch(rec, &sum);
    return true;
}

static enum ggml_status cross_entropy_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const bool back = node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    const struct ggml_tensor *x = node->src[back ? 1 : 0], *t = node->src[back ? 2 : 1], *g = back ? node->src[0] : x;
    enum ggml_status st;
    if (!back && cross_entropy_two_pass(rec, node, &st)) return st;
    struct vk_dispatch ds;
    const struct vk_pc_cross_entropy pc = cross_entropy_pc(x, t, node);
    cross_entropy_init(&ds, vk_shader_find(back ? "cross_entropy_back_f32" : "cross_entropy_f32"), &pc);
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
    t[GGML_OP_CROSS_ENTROPY_LOSS] = (struct vk_op_kernel){cross_entropy_supports, cross_entropy_record, cross_entropy_scratch};
    t[GGML_OP_CROSS_ENTROPY_LOSS_BACK] = (struct vk_op_kernel){cross_entropy_supports, cross_entropy_record};
    t[GGML_OP_OPT_STEP_ADAMW] = (struct vk_op_kernel){opt_step_supports, opt_step_record};
    t[GGML_OP_OPT_STEP_SGD] = (struct vk_op_kernel){opt_step_supports, opt_step_record};
}
