/* test-op-param-readers.c - every op-parameter reader of ggmlc-plugin.h returns what the
 * ggml constructor was given: pooling, the 1-D, 2-D and 3-D window geometries, group norm,
 * GLU, unary functions with values, scale/clamp/arange, timestep embedding, SAM's windows,
 * solve_tri, padding (zero, circular, reflection), roll, set/acc, get_rel_pos, the custom
 * operators and the single-value ops.  Each case gives every slot a different value, so a
 * reader that takes a neighbouring slot fails.  Built with the public headers only, as a
 * third-party plugin is. */
#include <math.h>
#include <string.h>

#include "ggml.h"
#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "testutil.h"

static struct ggml_tensor *f32(struct ggml_context *ctx, int64_t ne0, int64_t ne1, int64_t ne2,
                               int64_t ne3) {
    return ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ne0, ne1, ne2, ne3);
}

static bool pool_is(const struct ggmlc_pool_params *p, const int32_t want[7]) {
    const int32_t got[7] = {p->op, p->k0, p->k1, p->s0, p->s1, p->p0, p->p1};
    return memcmp(got, want, sizeof got) == 0;
}

static void test_pool(struct ggml_context *ctx) {
    struct ggml_tensor *a = f32(ctx, 16, 3, 1, 1);
    struct ggml_tensor *r = ggml_pool_1d(ctx, a, GGML_OP_POOL_AVG, 3, 2, 1);
    const struct ggmlc_pool_params p1 = ggmlc_pool_1d_params_of(r);
    tap_ok(r && pool_is(&p1, (const int32_t[]){GGML_OP_POOL_AVG, 3, 1, 2, 1, 1, 0}),
           "ggmlc_pool_1d_params_of: op, k0, s0, p0 of ggml_pool_1d (a 1x1 window along ne[1])");
    struct ggml_tensor *img = f32(ctx, 16, 12, 2, 1);
    r = ggml_pool_2d(ctx, img, GGML_OP_POOL_MAX, 3, 4, 2, 5, 1.0f, 2.0f);
    const struct ggmlc_pool_params p2 = ggmlc_pool_2d_params_of(r);
    tap_ok(r && pool_is(&p2, (const int32_t[]){GGML_OP_POOL_MAX, 3, 4, 2, 5, 1, 2}),
           "ggmlc_pool_2d_params_of: op, k0, k1, s0, s1, p0, p1 of ggml_pool_2d");
    struct ggml_tensor *b =
        ggml_pool_2d_back(ctx, r, img, GGML_OP_POOL_MAX, 3, 4, 2, 5, 1.0f, 2.0f);
    const struct ggmlc_pool_params pb = ggmlc_pool_2d_params_of(b);
    tap_ok(b && pool_is(&pb, (const int32_t[]){GGML_OP_POOL_MAX, 3, 4, 2, 5, 1, 2}),
           "ggmlc_pool_2d_params_of: the same values of ggml_pool_2d_back");
}

static void test_windows_1d_2d(struct ggml_context *ctx) {
    struct ggml_tensor *k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 2, 4); /* [K, OC, IC] */
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 10, 4, 1);
    struct ggml_tensor *t = ggml_conv_transpose_1d(ctx, k, x, 3, 1, 2);
    const struct ggmlc_conv1d_params c = ggmlc_conv_transpose_1d_params_of(t);
    tap_ok(t && c.s0 == 3 && c.p0 == 1 && c.d0 == 2,
           "ggmlc_conv_transpose_1d_params_of: s0, p0, d0 of ggml_conv_transpose_1d");
    struct ggml_tensor *cols = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 6, 5, 1); /* [K*OC, T, N] */
    t = ggml_col2im_1d(ctx, cols, 2, 3, 1);
    const struct ggmlc_conv1d_params ci = ggmlc_col2im_1d_params_of(t);
    tap_ok(t && ci.s0 == 2 && ci.oc == 3 && ci.p0 == 1 && ci.d0 == 1,
           "ggmlc_col2im_1d_params_of: s0, oc, p0 of ggml_col2im_1d (dilation 1)");
    struct ggml_tensor *k2 = f32(ctx, 3, 3, 2, 4), *img = f32(ctx, 16, 12, 2, 1);
    t = ggml_conv_2d_direct(ctx, k2, img, 2, 3, 1, 4, 5, 1);
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(t);
    tap_ok(t && g.s0 == 2 && g.s1 == 3 && g.p0 == 1 && g.p1 == 4 && g.d0 == 5 && g.d1 == 1 &&
               g.is_2d == 0,
           "ggmlc_conv2d_params_of: s0, s1, p0, p1, d0, d1 of ggml_conv_2d_direct");
    t = ggml_conv_transpose_2d_p0(ctx, f32(ctx, 3, 3, 2, 2), img, 3);
    tap_ok(t && ggmlc_op_param_i32(t, 0) == 3,
           "ggmlc_op_param_i32(node, 0): the stride of ggml_conv_transpose_2d_p0");
}

static bool conv3d_is(const struct ggmlc_conv3d_params *g, const int32_t want[12]) {
    int32_t got[12];
    memcpy(got, g->s, 3 * sizeof *got);
    memcpy(got + 3, g->p, 3 * sizeof *got);
    memcpy(got + 6, g->d, 3 * sizeof *got);
    got[9] = g->ic, got[10] = g->n, got[11] = g->oc;
    return memcmp(got, want, sizeof got) == 0;
}

static void test_windows_3d(struct ggml_context *ctx) {
    struct ggml_tensor *k = f32(ctx, 2, 2, 2, 3 * 2), *x = f32(ctx, 16, 16, 16, 3);
    struct ggml_tensor *t = ggml_im2col_3d(ctx, k, x, 3, 2, 3, 1, 1, 0, 2, 1, 2, 3, GGML_TYPE_F32);
    const struct ggmlc_conv3d_params a = ggmlc_im2col_3d_params_of(t);
    tap_ok(t && conv3d_is(&a, (const int32_t[]){2, 3, 1, 1, 0, 2, 1, 2, 3, 3, 0, 0}),
           "ggmlc_im2col_3d_params_of: IC, strides, paddings, dilations of ggml_im2col_3d");
    t = ggml_conv_3d_direct(ctx, k, x, 2, 3, 1, 1, 0, 2, 1, 2, 3, 3, 1, 2);
    const struct ggmlc_conv3d_params b = ggmlc_conv_3d_params_of(t);
    tap_ok(t && conv3d_is(&b, (const int32_t[]){2, 3, 1, 1, 0, 2, 1, 2, 3, 3, 1, 2}),
           "ggmlc_conv_3d_params_of: the geometry, channels, batch, output channels of "
           "ggml_conv_3d_direct");
}

static void test_norm_glu_unary(struct ggml_context *ctx) {
    struct ggml_tensor *x = f32(ctx, 8, 4, 6, 1);
    const struct ggmlc_group_norm_params gn =
        ggmlc_group_norm_params_of(ggml_group_norm(ctx, x, 3, 1e-5f));
    tap_ok(gn.n_groups == 3 && gn.eps == 1e-5f, "ggmlc_group_norm_params_of: n_groups, eps");
    const struct ggmlc_glu_params g1 =
        ggmlc_glu_params_of(ggml_glu(ctx, x, GGML_GLU_OP_GEGLU, true));
    tap_ok(g1.op == GGML_GLU_OP_GEGLU && g1.swapped == 1,
           "ggmlc_glu_params_of: op, swapped of ggml_glu");
    struct ggml_tensor *y = f32(ctx, 8, 4, 6, 1);
    const struct ggmlc_glu_params g2 =
        ggmlc_glu_params_of(ggml_swiglu_oai(ctx, x, y, 1.702f, 7.0f));
    tap_ok(g2.op == GGML_GLU_OP_SWIGLU_OAI && g2.swapped == 0 && g2.alpha == 1.702f &&
               g2.limit == 7.0f,
           "ggmlc_glu_params_of: alpha, limit of ggml_swiglu_oai");
    const float alpha_n = 0.8f, alpha_p = 0.5f, beta = 0.25f, eps = -1e-6f;
    const struct ggmlc_unary_params u =
        ggmlc_unary_params_of(ggml_xielu(ctx, x, alpha_n, alpha_p, beta, eps));
    /* ggml stores xIELU's slopes through softplus: beta + softplus(alpha_n), softplus(alpha_p) */
    tap_ok(u.op == GGML_UNARY_OP_XIELU && fabsf(u.p[0] - (beta + log1pf(expf(alpha_n)))) < 1e-6f &&
               fabsf(u.p[1] - log1pf(expf(alpha_p))) < 1e-6f && u.p[2] == beta && u.p[3] == eps,
           "ggmlc_unary_params_of: op and xIELU's four values");
    const struct ggmlc_unary_params r =
        ggmlc_unary_params_of(ggml_unary(ctx, x, GGML_UNARY_OP_RELU));
    tap_ok(r.op == GGML_UNARY_OP_RELU, "ggmlc_unary_params_of: the op of ggml_unary");
}

static void test_float_values(struct ggml_context *ctx) {
    struct ggml_tensor *x = f32(ctx, 8, 4, 1, 1);
    const struct ggmlc_scale_params s = ggmlc_scale_params_of(ggml_scale_bias(ctx, x, 2.5f, -1.0f));
    tap_ok(s.s == 2.5f && s.b == -1.0f, "ggmlc_scale_params_of: s, b of ggml_scale_bias");
    const struct ggmlc_clamp_params c = ggmlc_clamp_params_of(ggml_clamp(ctx, x, -2.0f, 3.0f));
    tap_ok(c.min == -2.0f && c.max == 3.0f, "ggmlc_clamp_params_of: min, max");
    const struct ggmlc_arange_params a =
        ggmlc_arange_params_of(ggml_arange(ctx, 1.0f, 10.0f, 0.5f));
    tap_ok(a.start == 1.0f && a.stop == 10.0f && a.step == 0.5f,
           "ggmlc_arange_params_of: start, stop, step");
    tap_ok(ggmlc_op_param_f32(ggml_leaky_relu(ctx, x, 0.125f, false), 0) == 0.125f &&
               ggmlc_op_param_f32(ggml_fill(ctx, x, -4.5f), 0) == -4.5f,
           "ggmlc_op_param_f32(node, 0): leaky_relu's slope, fill's value");
}

static void test_image_helpers(struct ggml_context *ctx) {
    struct ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    const struct ggmlc_timestep_params t =
        ggmlc_timestep_params_of(ggml_timestep_embedding(ctx, ts, 16, 10000));
    tap_ok(t.dim == 16 && t.max_period == 10000, "ggmlc_timestep_params_of: dim, max_period");
    struct ggml_tensor *img = f32(ctx, 4, 10, 7, 1); /* [C, W, H] */
    struct ggml_tensor *parts = ggml_win_part(ctx, img, 4);
    const struct ggmlc_window_params wp = ggmlc_win_part_params_of(parts);
    tap_ok(parts && wp.npx == 3 && wp.npy == 2 && wp.w == 4,
           "ggmlc_win_part_params_of: npx, npy (windows that cover 10 x 7), w");
    const struct ggmlc_window_params wu =
        ggmlc_win_unpart_params_of(ggml_win_unpart(ctx, parts, 10, 7, 4));
    tap_ok(wu.w == 4, "ggmlc_win_unpart_params_of: w");
    const struct ggmlc_rel_pos_params rp =
        ggmlc_rel_pos_params_of(ggml_get_rel_pos(ctx, f32(ctx, 4, 7, 1, 1), 4, 4));
    tap_ok(rp.qh == 4 && rp.kh == 4, "ggmlc_rel_pos_params_of: qh, kh");
    struct ggml_tensor *A = f32(ctx, 4, 4, 1, 1), *B = f32(ctx, 3, 4, 1, 1);
    const struct ggmlc_solve_tri_params st =
        ggmlc_solve_tri_params_of(ggml_solve_tri(ctx, A, B, true, false, true));
    tap_ok(st.left && !st.lower && st.unit_diag,
           "ggmlc_solve_tri_params_of: left, lower, unit diagonal");
}

static bool pad_is(const struct ggmlc_pad_params *p, const int32_t lp[4], const int32_t rp[4]) {
    return memcmp(p->lp, lp, sizeof p->lp) == 0 && memcmp(p->rp, rp, sizeof p->rp) == 0;
}

static void test_pad_roll_set(struct ggml_context *ctx) {
    struct ggml_tensor *x = f32(ctx, 8, 8, 8, 8);
    const int32_t lp[4] = {1, 3, 0, 2}, rp[4] = {2, 4, 1, 0};
    const struct ggmlc_pad_params z =
        ggmlc_pad_params_of(ggml_pad_ext(ctx, x, 1, 2, 3, 4, 0, 1, 2, 0));
    tap_ok(pad_is(&z, lp, rp) && !z.circular,
           "ggmlc_pad_params_of: the eight paddings of ggml_pad_ext");
    const struct ggmlc_pad_params c =
        ggmlc_pad_params_of(ggml_pad_ext_circular(ctx, x, 1, 2, 3, 4, 0, 1, 2, 0));
    tap_ok(pad_is(&c, lp, rp) && c.circular,
           "ggmlc_pad_params_of: ... and circular of ggml_pad_ext_circular");
    const struct ggmlc_pad_params r =
        ggmlc_pad_reflect_1d_params_of(ggml_pad_reflect_1d(ctx, x, 2, 3));
    tap_ok(pad_is(&r, (const int32_t[]){2, 0, 0, 0}, (const int32_t[]){3, 0, 0, 0}) && !r.circular,
           "ggmlc_pad_reflect_1d_params_of: p0, p1 as lp[0], rp[0]");
    const struct ggmlc_roll_params ro = ggmlc_roll_params_of(ggml_roll(ctx, x, 1, -2, 3, 0));
    tap_ok(ro.shift[0] == 1 && ro.shift[1] == -2 && ro.shift[2] == 3 && ro.shift[3] == 0,
           "ggmlc_roll_params_of: the four shifts");
    struct ggml_tensor *a = f32(ctx, 16, 4, 1, 1), *b = f32(ctx, 4, 2, 1, 1);
    const struct ggmlc_set_params s = ggmlc_set_params_of(ggml_set(ctx, a, b, 64, 128, 192, 8));
    tap_ok(s.nb1 == 64 && s.nb2 == 128 && s.nb3 == 192 && s.offset == 8 && !s.inplace,
           "ggmlc_set_params_of: nb1, nb2, nb3, offset of ggml_set");
    const struct ggmlc_set_params ai =
        ggmlc_set_params_of(ggml_acc_inplace(ctx, a, b, 64, 128, 192, 8));
    tap_ok(ai.nb1 == 64 && ai.offset == 8 && ai.inplace,
           "ggmlc_set_params_of: inplace of ggml_acc_inplace");
}

static void custom1(struct ggml_tensor *d, const struct ggml_tensor *a, int ith, int nth, void *u) {
    (void)d, (void)a, (void)ith, (void)nth, (void)u;
}
static void custom2(struct ggml_tensor *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                    int ith, int nth, void *u) {
    (void)d, (void)a, (void)b, (void)ith, (void)nth, (void)u;
}
static void custom3(struct ggml_tensor *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                    const struct ggml_tensor *c, int ith, int nth, void *u) {
    (void)d, (void)a, (void)b, (void)c, (void)ith, (void)nth, (void)u;
}
static void custom(struct ggml_tensor *d, int ith, int nth, void *u) {
    (void)d, (void)ith, (void)nth, (void)u;
}

static void test_custom(struct ggml_context *ctx) {
    static int user;
    struct ggml_tensor *x = f32(ctx, 8, 4, 1, 1);
    const struct ggml_map_custom1_op_params c1 =
        ggmlc_map_custom1_params_of(ggml_map_custom1(ctx, x, custom1, 3, &user));
    const struct ggml_map_custom2_op_params c2 =
        ggmlc_map_custom2_params_of(ggml_map_custom2(ctx, x, x, custom2, 2, &user));
    const struct ggml_map_custom3_op_params c3 = ggmlc_map_custom3_params_of(
        ggml_map_custom3(ctx, x, x, x, custom3, GGML_N_TASKS_MAX, &user));
    tap_ok(c1.fun == custom1 && c1.n_tasks == 3 && c1.userdata == &user && c2.fun == custom2 &&
               c2.n_tasks == 2 && c2.userdata == &user && c3.fun == custom3 &&
               c3.n_tasks == GGML_N_TASKS_MAX && c3.userdata == &user,
           "ggmlc_map_custom{1,2,3}_params_of: function, task count, user data");
    struct ggml_tensor *args[1] = {x};
    const struct ggml_custom_op_params c = ggmlc_custom_op_params_of(
        ggml_custom_4d(ctx, GGML_TYPE_F32, 4, 1, 1, 1, args, 1, custom, 5, &user));
    tap_ok(c.fun == custom && c.n_tasks == 5 && c.userdata == &user,
           "ggmlc_custom_op_params_of: function, task count, user data of ggml_custom_4d");
}

static void test_single_values(struct ggml_context *ctx) {
    struct ggml_tensor *x = f32(ctx, 8, 4, 1, 1);
    tap_ok(ggmlc_op_param_i32(ggml_concat(ctx, x, x, 1), 0) == 1 &&
               ggmlc_op_param_i32(ggml_argsort(ctx, x, GGML_SORT_ORDER_DESC), 0) ==
                   GGML_SORT_ORDER_DESC,
           "ggmlc_op_param_i32(node, 0): concat's dim, argsort's order");
}

int main(void) {
    if (ggmlc_init() != GGMLC_OK) return tap_skip_all("ggmlc_init failed");
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    test_pool(ctx);
    test_windows_1d_2d(ctx);
    test_windows_3d(ctx);
    test_norm_glu_unary(ctx);
    test_float_values(ctx);
    test_image_helpers(ctx);
    test_pad_roll_set(ctx);
    test_custom(ctx);
    test_single_values(ctx);
    ggml_free(ctx);
    return tap_done();
}
