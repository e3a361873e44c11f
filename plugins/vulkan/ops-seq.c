/*
 * ops-seq.c - sequence-model recurrences: gated linear attention, RWKV v6 and
 * RWKV v7 (recurrence.comp: a workgroup per head and sequence, an invocation
 * per state column or row), Mamba's ssm_scan (an invocation per channel), and
 * triangular solves (an invocation per right-hand side).
 */
#include "vk-impl.h"

#define SEQ_MAX_S 256 /* head sizes one workgroup covers */

/* Operands in order, then the state; every one f32 and contiguous (the constructors' contract). */
static int n_token_operands(enum ggml_op op) {
    return op == GGML_OP_GATED_LINEAR_ATTN ? 4 : op == GGML_OP_RWKV_WKV6 ? 5 : 6;
}

static bool recurrence_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const int n = n_token_operands(node->op);
    const struct ggml_tensor *k = node->src[0], *state = node->src[n];
    const int64_t S = k->ne[0];
    if (!state || S <= 0 || S > SEQ_MAX_S || S > d->props.limits.maxComputeWorkGroupSize[0] ||
        S > d->props.limits.maxComputeWorkGroupInvocations || d->props.limits.maxPerStageDescriptorStorageBuffers < (uint32_t)n + 2)
        return false;
    for (int i = 0; i <= n; i++)
        if (!node->src[i] || node->src[i]->type != GGML_TYPE_F32 || !ggml_is_contiguous(node->src[i]) || !vk_shape_fits(node->src[i]))
            return false;
    const int64_t n_seqs = state->ne[1];
    return node->type == GGML_TYPE_F32 && ggml_is_contiguous(node) && vk_shape_fits(node) && n_seqs > 0 && k->ne[2] % n_seqs == 0 &&
           ggml_nelements(state) == S * S * k->ne[1] * n_seqs && k->ne[1] <= d->props.limits.maxComputeWorkGroupCount[0] &&
           n_seqs <= d->props.limits.maxComputeWorkGroupCount[1];
}

static enum ggml_status recurrence_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const int n = n_token_operands(node->op);
    const struct ggml_tensor *k = node->src[0], *state = node->src[n];
    const char *name = node->op == GGML_OP_GATED_LINEAR_ATTN ? "gla_f32" : node->op == GGML_OP_RWKV_WKV6 ? "wkv6_f32" : "wkv7_f32";
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("%s", name));
    ds.spec[0] = (uint32_t)k->ne[0];
    ds.n_spec = 1;
    const struct vk_pc_recurrence pc = {
        .H = (uint32_t)k->ne[1],
        .T = (uint32_t)k->ne[2],
        .n_seqs = (uint32_t)state->ne[1],
        .scale = node->op == GGML_OP_GATED_LINEAR_ATTN ? ggmlc_op_param_f32(node, 0) : 1.0f,
    };
    vk_dispatch_push(&ds, pc);
    const int off = VK_PUSH_WORD(vk_pc_recurrence, off);
    for (int i = 0; i <= n; i++) vk_dispatch_bind(&ds, node->src[i], false, 4, off + i);
    vk_dispatch_bind(&ds, node, true, 4, off + n + 1);
    ds.groups[0] = (uint32_t)k->ne[1];
    ds.groups[1] = (uint32_t)state->ne[1];
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ ssm_scan */

/* src: s, x, dt, A, B, C (f32, unit-stride rows, s contiguous), ids (I32); the constructor's shapes. */
static bool ssm_scan_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    for (int i = 0; i < 7; i++) {
        const struct ggml_tensor *t = node->src[i];
        if (!t || t->type != (i == 6 ? GGML_TYPE_I32 : GGML_TYPE_F32) || t->nb[0] != 4 || !vk_shape_fits(t)) return false;
    }
    const struct ggml_tensor *s = node->src[0], *x = node->src[1], *B = node->src[4];
    if (ggmlc_ssm_scan_slots_of(node) > 1)
        return false; /* rollback snapshots: the CPU keeps them */
    return ggml_is_contiguous(s) && node->type == GGML_TYPE_F32 && ggml_is_contiguous(node) && vk_shape_fits(node) && B->ne[1] > 0 &&
           s->ne[0] < VK_LOOP_BUDGET && /* a token's states fit one dispatch's loop budget */
           x->ne[1] % B->ne[1] == 0 && d->props.limits.maxPerStageDescriptorStorageBuffers >= 9;
}

static enum ggml_status ssm_scan_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2], *A = node->src[3];
    const struct ggml_tensor *B = node->src[4], *C = node->src[5], *ids = node->src[6];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("ssm_scan_f32"));
    const struct vk_pc_ssm_scan pc = {
        .d_state = (uint32_t)s->ne[0],
        .head_dim = (uint32_t)x->ne[0],
        .n_head = (uint32_t)x->ne[1],
        .n_tok = (uint32_t)x->ne[2],
        .n_seqs = (uint32_t)x->ne[3],
        .n_group = (uint32_t)B->ne[1],
        .scalar_decay = A->ne[0] == 1,
        .n_slots = (uint32_t)s->ne[3],
        .nx1 = (uint32_t)(x->nb[1] / 4),
        .nx2 = (uint32_t)(x->nb[2] / 4),
        .nx3 = (uint32_t)(x->nb[3] / 4),
        .ndt1 = (uint32_t)(dt->nb[1] / 4),
        .ndt2 = (uint32_t)(dt->nb[2] / 4),
        .na1 = (uint32_t)(A->nb[1] / 4),
        .nb1 = (uint32_t)(B->nb[1] / 4),
        .nb2 = (uint32_t)(B->nb[2] / 4),
        .nb3 = (uint32_t)(B->nb[3] / 4),
        .nc1 = (uint32_t)(C->nb[1] / 4),
        .nc2 = (uint32_t)(C->nb[2] / 4),
        .nc3 = (uint32_t)(C->nb[3] / 4),
        .ns3 = (uint32_t)(s->nb[3] / 4),
        .ni0 = (uint32_t)(ids->nb[0] / 4),
    };
    vk_dispatch_push(&ds, pc);
    const int off = VK_PUSH_WORD(vk_pc_ssm_scan, off_s); /* off_s .. off_i: the sources in order */
    for (int i = 0; i < 7; i++) vk_dispatch_bind(&ds, node->src[i], false, 4, off + i);
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_ssm_scan, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    vk_groups_1d(rec->d, (uint64_t)(x->ne[0] * x->ne[1] * x->ne[3]), 256, ds.groups);
    /* each token loops over the d_state states: tokens in chunks within the loop budget, the
     * state carried over in the result */
    return vk_record_dispatch_chunks(rec, &ds, (uint32_t)x->ne[2],
                                     VK_LOOP_BUDGET / ((uint32_t)s->ne[0] + 1),
                                     VK_PUSH_WORD(vk_pc_ssm_scan, t_begin));
}

/* ------------------------------------------------------------ solve_tri */

/* A [n, n, B2, B3] and B (f32), d of B's shape; struct ggmlc_solve_tri_params. */
static bool solve_tri_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const bool left = ggmlc_solve_tri_params_of(node).left;
    return a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(b, node) &&
           a->ne[0] == a->ne[1] && (left ? b->ne[1] : b->ne[0]) == a->ne[0] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3] &&
           vk_shape_fits(a) && vk_shape_fits(b) && vk_shape_fits(node);
}

static enum ggml_status solve_tri_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const struct ggmlc_solve_tri_params st = ggmlc_solve_tri_params_of(node);
    const bool left = st.left, lower = st.lower;
    /* ggml's ne[0] indexes columns: a left solve runs down B's columns, a right one along its rows (A transposed) */
    const int p = left ? 1 : 0, v = 1 - p;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("solve_tri_f32"));
    const struct vk_shape sa = vk_shape_of(a), sb = vk_shape_of(b), sd = vk_shape_of(node);
    const struct vk_pc_solve_tri pc = {
        .n = sa.ne[0],
        .n_rhs = sb.ne[v],
        .ne2 = sb.ne[2],
        .ne3 = sb.ne[3],
        .a_p = sa.nb[p],
        .a_q = sa.nb[v],
        .na2 = sa.nb[2],
        .na3 = sa.nb[3],
        .b_p = sb.nb[p],
        .b_v = sb.nb[v],
        .nb2 = sb.nb[2],
        .nb3 = sb.nb[3],
        .x_p = sd.nb[p],
        .x_v = sd.nb[v],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .forward = left ? lower : !lower,
        .unit_diag = st.unit_diag,
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_solve_tri, off_a));
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_solve_tri, off_b));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_solve_tri, off_d));
    vk_groups_1d(rec->d, (uint64_t)(b->ne[v] * b->ne[2] * b->ne[3]), 64, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_seq_register(struct vk_op_kernel *t) {
    t[GGML_OP_SOLVE_TRI] = (struct vk_op_kernel){solve_tri_supports, solve_tri_record};
    t[GGML_OP_SSM_SCAN] = (struct vk_op_kernel){ssm_scan_supports, ssm_scan_record};
    t[GGML_OP_GATED_LINEAR_ATTN] = (struct vk_op_kernel){recurrence_supports, recurrence_record};
    t[GGML_OP_RWKV_WKV6] = (struct vk_op_kernel){recurrence_supports, recurrence_record};
    t[GGML_OP_RWKV_WKV7] = (struct vk_op_kernel){recurrence_supports, recurrence_record};
}
