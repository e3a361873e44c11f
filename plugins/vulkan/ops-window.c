/*
 * ops-window.c - Segment Anything's helpers: win_part / win_unpart (an image
 * cut into windows and back), get_rel_pos (the relative-position table of
 * queries and keys) and add_rel_pos (window.comp, add-rel-pos.comp).
 */
#include "vk-impl.h"

enum { WINDOW_PART, WINDOW_UNPART, WINDOW_REL_POS };

static bool window_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (vk_float_code(a->type) < 0 || !vk_type_ok(d, a->type) || !vk_shape_fits(a) || !vk_shape_fits(node)) return false;
    switch (node->op) {
    case GGML_OP_WIN_PART: {
        const struct ggmlc_window_params p = ggmlc_win_part_params_of(node);
        return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && p.npx > 0 && p.w > 0 &&
               a->ne[3] == 1 && node->ne[0] == a->ne[0] && node->ne[1] == p.w && node->ne[2] == p.w;
    }
    case GGML_OP_WIN_UNPART: { /* a holds the windows, npx of them per row */
        const int64_t w = ggmlc_win_unpart_params_of(node).w;
        return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && w > 0 && a->ne[1] == w && a->ne[2] == w &&
               node->ne[0] == a->ne[0] && node->ne[3] == 1 &&
               a->ne[3] >= ((node->ne[1] + w - 1) / w) * ((node->ne[2] + w - 1) / w);
    }
    default: /* get_rel_pos: the table [C, 2 kh - 1] -> [C, kh, qh] of its type */
        return node->type == a->type && node->ne[1] == node->ne[2] && a->ne[1] == 2 * node->ne[1] - 1 && node->ne[3] == 1;
    }
}

static enum ggml_status window_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const size_t ts = ggml_type_size(a->type);
    const uint32_t mode = node->op == GGML_OP_WIN_PART ? WINDOW_PART : node->op == GGML_OP_WIN_UNPART ? WINDOW_UNPART : WINDOW_REL_POS;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("window_%s", ggml_type_name(a->type)));
    const struct vk_shape sa = vk_shape_of(a), sd = vk_shape_of(node);
    struct vk_pc_window pc = {
        .ne0 = sd.ne[0],
        .ne1 = sd.ne[1],
        .ne2 = sd.ne[2],
        .ne3 = sd.ne[3],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .na0 = sa.nb[0],
        .na1 = sa.nb[1],
        .na2 = sa.nb[2],
        .na3 = sa.nb[3],
        .ne01 = sa.ne[1],
        .ne02 = sa.ne[2],
        .mode = mode,
    };
    if (mode == WINDOW_PART) {
        const struct ggmlc_window_params p = ggmlc_win_part_params_of(node);
        pc.w = (uint32_t)p.w;
        pc.npx = (uint32_t)p.npx;
    } else if (mode == WINDOW_UNPART) {
        pc.w = (uint32_t)ggmlc_win_unpart_params_of(node).w;
        pc.npx = (uint32_t)((node->ne[1] + pc.w - 1) / pc.w);
    }
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, (uint32_t)ts, VK_PUSH_WORD(vk_pc_window, off_a));
    vk_dispatch_bind(&ds, node, true, (uint32_t)ts, VK_PUSH_WORD(vk_pc_window, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* a [K*K, Qw*Qh, B] + pw, ph [K, Qw, Qh, B], all f32 and contiguous (the constructor's contract). */
static bool add_rel_pos_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *pw = node->src[1], *ph = node->src[2];
    const struct ggml_tensor *all[4] = {a, pw, ph, node};
    for (int i = 0; i < 4; i++)
        if (all[i]->type != GGML_TYPE_F32 || !ggml_is_contiguous(all[i]) || !vk_shape_fits(all[i])) return false;
    return ggml_are_same_shape(pw, ph) && ggml_are_same_shape(a, node) && a->ne[0] == pw->ne[0] * pw->ne[0] &&
           ggml_nelements(a) == pw->ne[0] * ggml_nelements(pw);
}

static enum ggml_status add_rel_pos_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *pw = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("add_rel_pos_f32"));
    const struct vk_pc_add_rel_pos pc = {.K = (uint32_t)pw->ne[0],
                                         .n_q = (uint32_t)(ggml_nelements(pw) / pw->ne[0])};
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, node->src[0], false, 4, VK_PUSH_WORD(vk_pc_add_rel_pos, off_a));
    vk_dispatch_bind(&ds, node->src[1], false, 4, VK_PUSH_WORD(vk_pc_add_rel_pos, off_pw));
    vk_dispatch_bind(&ds, node->src[2], false, 4, VK_PUSH_WORD(vk_pc_add_rel_pos, off_ph));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_add_rel_pos, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_window_register(struct vk_op_kernel *t) {
    t[GGML_OP_WIN_PART] = (struct vk_op_kernel){window_supports, window_record};
    t[GGML_OP_WIN_UNPART] = (struct vk_op_kernel){window_supports, window_record};
    t[GGML_OP_GET_REL_POS] = (struct vk_op_kernel){window_supports, window_record};
    t[GGML_OP_ADD_REL_POS] = (struct vk_op_kernel){add_rel_pos_supports, add_rel_pos_record};
}
