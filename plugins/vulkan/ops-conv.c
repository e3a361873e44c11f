/*
 * ops-conv.c - image ops: im2col (convolutions run as im2col + mul_mat),
 * conv_2d and conv_2d_dw (direct), conv_transpose_1d / 2d, Mamba's ssm_conv,
 * pool_1d / pool_2d and upscale (nearest, bilinear, bicubic); the gradients
 * im2col_back and pool_2d_back, and col2im_1d.
 */
#include <stdatomic.h>
#include <string.h>

#include "ops-matmul.h"
#include "vk-impl.h"

/* ------------------------------------------------------------- im2col */

static bool im2col_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *b = node->src[1];
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(node);
    if (g.s0 < 0 || g.s1 < 0 || g.p0 < 0 || g.p1 < 0 || g.d0 < 0 || g.d1 < 0) return false;
    return (b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16) && (node->type == GGML_TYPE_F32 || node->type == GGML_TYPE_F16) &&
           vk_type_ok(d, b->type) && vk_type_ok(d, node->type) && vk_shape_fits(b) && vk_shape_fits(node) &&
           node->nb[0] == ggml_type_size(node->type);
}

static enum ggml_status im2col_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(node);
    const bool is_2d = g.is_2d != 0;
    const size_t tb = ggml_type_size(b->type), td = ggml_type_size(node->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("im2col_%s_%s", ggml_type_name(b->type), ggml_type_name(node->type)));
    /* a 1-D im2col is the 2-D one with a height of 1: b [IW, IC, N], d [K, OW, N] */
    const int c = is_2d ? 2 : 1,
              n = is_2d ? 3 : 2; /* the dimensions of the channels (b) and the batch */
    const struct vk_pc_im2col pc = {
        .IW = (uint32_t)b->ne[0],
        .IH = is_2d ? (uint32_t)b->ne[1] : 1,
        .IC = (uint32_t)b->ne[c],
        .KW = (uint32_t)a->ne[0],
        .KH = is_2d ? (uint32_t)a->ne[1] : 1,
        .OW = (uint32_t)node->ne[1],
        .OH = is_2d ? (uint32_t)node->ne[2] : 1,
        .N = (uint32_t)node->ne[n],
        .s0 = (uint32_t)g.s0,
        .s1 = is_2d ? (uint32_t)g.s1 : 1,
        .d0 = (uint32_t)g.d0,
        .d1 = is_2d ? (uint32_t)g.d1 : 1,
        .p0 = g.p0,
        .p1 = is_2d ? g.p1 : 0,
        .nbw = (uint32_t)(b->nb[0] / tb),
        .nbh = is_2d ? (uint32_t)(b->nb[1] / tb) : 0,
        .nbc = (uint32_t)(b->nb[c] / tb),
        .nbn = (uint32_t)(b->nb[c + 1] / tb),
        .ndw = (uint32_t)(node->nb[1] / td),
        .ndh = is_2d ? (uint32_t)(node->nb[2] / td) : 0,
        .ndn = (uint32_t)(node->nb[n] / td),
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, b, false, (uint32_t)tb, VK_PUSH_WORD(vk_pc_im2col, off_b));
    vk_dispatch_bind(&ds, node, true, (uint32_t)td, VK_PUSH_WORD(vk_pc_im2col, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------------------- pool */

/* A 1-D pool reads as a 2-D one with a 1x1 window along ne[1]. */
static struct ggmlc_pool_params pool_params(const struct ggml_tensor *node) {
    return node->op == GGML_OP_POOL_1D ? ggmlc_pool_1d_params_of(node)
                                       : ggmlc_pool_2d_params_of(node);
}

/* Kernel and stride >= 1, padding >= 0. */
static bool pool_window_ok(const struct ggmlc_pool_params *p) {
    return p->k0 > 0 && p->k1 > 0 && p->s0 > 0 && p->s1 > 0 && p->p0 >= 0 && p->p1 >= 0;
}

static bool pool_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const struct ggmlc_pool_params p = pool_params(node);
    if (!pool_window_ok(&p)) return false;
    return (p.op == GGML_OP_POOL_MAX || p.op == GGML_OP_POOL_AVG) &&
           (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) &&
           vk_type_ok(d, a->type) && node->type == GGML_TYPE_F32 && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status pool_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const struct ggmlc_pool_params p = pool_params(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("pool_%s", ggml_type_name(a->type)));
    struct vk_pc_pool pc = {
        .is_avg = p.op == GGML_OP_POOL_AVG,
        .k0 = (uint32_t)p.k0,
        .k1 = (uint32_t)p.k1,
        .s0 = (uint32_t)p.s0,
        .s1 = (uint32_t)p.s1,
        .p0 = p.p0,
        .p1 = p.p1,
    };
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ggml_type_size(a->type), VK_PUSH_WORD(vk_pc_pool, off_a));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_pool, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------- upscale */

/* The mode, slot 0: (nearest, bilinear, bicubic) | GGML_SCALE_FLAG_ALIGN_CORNERS. */
static bool upscale_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const uint32_t mode = (uint32_t)ggmlc_op_param_i32(node, 0);
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && (mode & 0xff) < GGML_SCALE_MODE_COUNT &&
           (mode & ~0xffu & ~(uint32_t)GGML_SCALE_FLAG_ALIGN_CORNERS) == 0 && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status upscale_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const uint32_t mode = (uint32_t)ggmlc_op_param_i32(node, 0);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("upscale_f32"));
    struct vk_pc_upscale pc = {.mode = mode & 0xff,
                               .align = (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0};
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_upscale, off_a));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_upscale, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------- conv_transpose_2d */

/* a: kernel [KW, KH, OC, IC] (f32/f16), b: input [IW, IH, IC, N] (f32); the stride: slot 0. */
static bool conv_transpose_2d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && ggmlc_op_param_i32(node, 0) > 0 && k->ne[3] == x->ne[2] &&
           vk_shape_fits(k) &&
           vk_shape_fits(x) && vk_shape_fits(node);
}

/* The push constants of the conv_transpose_2d kernels for node. */
static struct vk_pc_conv_transpose_2d conv_transpose_2d_push(const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const struct vk_shape sk = vk_shape_of(k), sx = vk_shape_of(x), sd = vk_shape_of(node);
    return (struct vk_pc_conv_transpose_2d){
        .KW = sk.ne[0],
        .KH = sk.ne[1],
        .OC = sk.ne[2],
        .IC = sk.ne[3],
        .nk0 = sk.nb[0],
        .nk1 = sk.nb[1],
        .nk2 = sk.nb[2],
        .nk3 = sk.nb[3],
        .IW = sx.ne[0],
        .IH = sx.ne[1],
        .N = sx.ne[3],
        .nx0 = sx.nb[0],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .OW = sd.ne[0],
        .OH = sd.ne[1],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .s = (uint32_t)ggmlc_op_param_i32(node, 0),
    };
}

static bool conv_gemm_any_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);

/* conv_transpose_2d: the implicit GEMMs (as conv_2d's), else one invocation per output. */
static enum ggml_status conv_transpose_2d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    enum ggml_status st;
    if (conv_gemm_any_record(rec, node, &st)) return st;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv_transpose_2d_%s", ggml_type_name(k->type)));
    const struct vk_pc_conv_transpose_2d pc = conv_transpose_2d_push(node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, k, false, (uint32_t)ggml_type_size(k->type), VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_k));
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_x));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------ conv_2d (direct) */

/* a: kernel [KW, KH, IC, OC] (f32/f16; depthwise [KW, KH, 1, C]), b: data [W, H, IC, N] (f32),
 * any strides (ggml's channels-innermost CWHN layout is a permuted view);
 * struct ggmlc_conv2d_params. */
static bool conv_2d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(node);
    /* strides and dilations >= 1, padding >= 0 */
    if (g.s0 < 1 || g.s1 < 1 || g.p0 < 0 || g.p1 < 0 || g.d0 < 1 || g.d1 < 1) return false;
    const bool channels_ok = node->op == GGML_OP_CONV_2D_DW ? k->ne[2] == 1 && k->ne[3] == x->ne[2] : k->ne[2] == x->ne[2];
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && channels_ok && node->ne[2] == k->ne[3] && node->ne[3] == x->ne[3] && vk_shape_fits(k) &&
           vk_shape_fits(x) && vk_shape_fits(node);
}

/* The push constants of the conv_2d kernels (conv2d.comp, conv2d-cm.comp, conv2d-gemm.comp) for node. */
static struct vk_pc_conv2d conv_2d_push(const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(node);
    const struct vk_shape sk = vk_shape_of(k), sx = vk_shape_of(x), sd = vk_shape_of(node);
    return (struct vk_pc_conv2d){
        .KW = sk.ne[0],
        .KH = sk.ne[1],
        .IC = sk.ne[2],
        .OC = sk.ne[3],
        .nk1 = sk.nb[1],
        .nk2 = sk.nb[2],
        .nk3 = sk.nb[3],
        .IW = sx.ne[0],
        .IH = sx.ne[1],
        .N = sx.ne[3],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .OW = sd.ne[0],
        .OH = sd.ne[1],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .s0 = g.s0,
        .s1 = g.s1,
        .p0 = g.p0,
        .p1 = g.p1,
        .d0 = g.d0,
        .d1 = g.d1,
        .depthwise = node->op == GGML_OP_CONV_2D_DW,
        .nk0 = sk.nb[0],
        .nx0 = sx.nb[0],
    };
}

/* The bindings of both conv_2d kernels: kernel, data, result. */
static void conv_2d_bind(struct vk_dispatch *ds, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    vk_dispatch_bind(ds, k, false, (uint32_t)ggml_type_size(k->type), VK_PUSH_WORD(vk_pc_conv2d, off_k));
    vk_dispatch_bind(ds, x, false, 4, VK_PUSH_WORD(vk_pc_conv2d, off_x));
    vk_dispatch_bind(ds, node, true, 4, VK_PUSH_WORD(vk_pc_conv2d, off_d));
}

/* The implicit-GEMM shaders' name prefix for node: conv_2d or conv_transpose_2d (TRANSPOSED). */
static const char *conv_gemm_prefix(const struct ggml_tensor *node) {
    return node->op == GGML_OP_CONV_TRANSPOSE_2D ? "conv_transpose_2d" : "conv2d";
}

/* conv_2d on cooperative matrices (conv2d-cm.comp: an implicit GEMM, kernel and data rounded to
 * f16, f32 sums), for GGML_OP_CONV_2D wherever the device has VK_KHR_cooperative_matrix fragments
 * (coopmat_khr_shape).  Its specialization constants {WG, SG, FRM, FRN, FRK, KB, BM, BN, BK, WM, WN}:
 * tiles of BM output channels x BN output positions, k slices of BK, four subgroups of WM x WN;
 * 64 x 64 tiles (32 x 64 for at most 32 output channels).  $GGMLC_VK_CONV_CM=0 takes the f32
 * implicit GEMM instead (conv2d-gemm.comp, f32 products), ="BM,BN,BK,WM,WN" tries other tiles (ignored
 * where they do not fit).  A pipeline that fails leaves the convolutions to the f32 kernels. */
#define CONV_CM_NSPEC 11

/* The shared memory of conv2d-cm.comp with constants v, in bytes. */
static uint64_t conv_cm_shared(const uint32_t *v) {
    const uint64_t bm = v[6], bn = v[7], bk = v[8];
    return 16 * (bm * (bk / 8 + 1) + bk * (bn / 8 + 1)) + 4 * bm * bn;
}

/* Whether the constants v suit conv2d-cm.comp on d (the list at its top). */
static bool conv_cm_fits(const struct vk_device *d, const uint32_t *v) {
    const uint32_t frm = v[2], frn = v[3], frk = v[4], bm = v[6], bn = v[7], bk = v[8], wm = v[9], wn = v[10];
    if (!frm || !frn || !frk || !wm || !wn || wm % frm || wn % frn || wn % 8 || bk % frk || bk % 8 || !bk || bm % wm || bn % wn)
        return false;
    return v[0] == (bm / wm) * (bn / wn) * v[1] && v[0] <= d->props.limits.maxComputeWorkGroupInvocations &&
           conv_cm_shared(v) <= d->props.limits.maxComputeSharedMemorySize;
}

/* The constants of tiles t = {BM, BN, BK, WM, WN} on d into v, where they fit. */
static bool conv_cm_try(const struct vk_device *d, const uint32_t *t, uint32_t *v) {
    const uint32_t *frag = d->caps.coopmat_khr_shape, sg = d->caps.subgroup_size;
    if (!t[3] || !t[4]) return false;
    const uint32_t c[CONV_CM_NSPEC] = {(t[0] / t[3]) * (t[1] / t[4]) * sg, sg, frag[0], frag[1], frag[2], frag[2],
                                       t[0], t[1], t[2], t[3], t[4]};
    if (!conv_cm_fits(d, c)) return false;
    memcpy(v, c, sizeof c);
    return true;
}

/* The constants for node into v; false where none fit or the kernel is off. */
static bool conv_cm_consts(const struct vk_device *d, const struct ggml_tensor *node, uint32_t *v) {
    const struct vk_env_value *env = &vk_tuning()->conv_cm;
    if (!d->use_coopmat || !d->caps.coopmat_khr_frag || (env->set && env->n >= 1 && env->v[0] == 0))
        return false;
    const bool narrow = node->ne[2] <= 32; /* output channels */
    const uint32_t t[5] = {narrow ? 32 : 64, 64, 32, 32, narrow ? 16 : 32};
    return (env->set && env->n >= 5 && conv_cm_try(d, env->v, v)) || conv_cm_try(d, t, v);
}

/* Split-k.  A convolution's kernel gradient (conv_kernel_grad in core/backward-rules.c) is a
 * CONV_2D of few outputs (KW*KH*IC positions x OC channels: 9 x 32 and 288 x 64 in the CNN of
 * ggmlc-bench train-epoch) and a long k (OW*OH*N, the batch's pixels: 25088), whose few tiles
 * would each walk all of k on one workgroup.  Grids of fewer than CONV_SPLIT_BELOW tiles are
 * split along k into layers of workgroups (about 256 workgroups in all, at least 4 slices of BK
 * per layer); each layer writes its partial results to the transient scratch, contiguous, and
 * mm-split-sum.comp adds them layer by layer in a fixed order, so the sums do not depend on the
 * schedule (no atomics).  $GGMLC_VK_MM_SPLIT=S takes S layers instead where it splits (1 or 0:
 * never), as it does for the products. */
#define CONV_SPLIT_BELOW      64
#define CONV_SPLIT_WORKGROUPS 256

/* The depth k of node's implicit GEMM: the kernel's taps times the input channels. */
static uint64_t conv_gemm_depth(const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0];
    const int64_t in_channels = node->op == GGML_OP_CONV_TRANSPOSE_2D ? k->ne[3] : k->ne[2];
    return (uint64_t)k->ne[0] * (uint64_t)k->ne[1] * (uint64_t)in_channels;
}

/* The layers of node's implicit GEMM on a grid of `tiles` tiles with k slices of bk (1: unsplit). */
static uint32_t conv_splits(const struct vk_device *d, const struct ggml_tensor *node,
                            uint64_t tiles, uint32_t bk) {
    const uint64_t slices = (conv_gemm_depth(node) + bk - 1) / bk,
                   outputs = (uint64_t)ggml_nelements(node);
    const struct vk_env_value *env = &vk_tuning()->mm_split;
    if (outputs == 0 || tiles >= CONV_SPLIT_BELOW || slices / 4 < 2 || !ggml_is_contiguous(node) ||
        (env->set && env->number <= 1) || !vk_shader_present(VK_SHADER_MM_SPLIT_SUM) ||
        vk_path_disabled(d, VK_PATH_COOPMAT_SPLIT))
        return 1;
    uint64_t s = env->set ? (uint64_t)env->number : (CONV_SPLIT_WORKGROUPS + tiles - 1) / tiles;
    const uint64_t limits[4] = {slices / 4, d->props.limits.maxComputeWorkGroupCount[2],
                                UINT32_MAX / outputs, VK_SCRATCH_TRANSIENT_MAX / (4 * outputs)};
    for (int i = 0; i < 4; i++)
        if (s > limits[i]) s = limits[i];
    if (s <= 1) return 1;
    const uint64_t per = (slices + s - 1) / s; /* slices per layer: no layer left empty */
    return (uint32_t)((slices + per - 1) / per);
}

/* The bytes of the partial results of `splits` layers. */
static VkDeviceSize conv_partials(const struct ggml_tensor *node, uint32_t splits) {
    return vk_scratch_round((VkDeviceSize)splits * (VkDeviceSize)ggml_nelements(node) * 4);
}

/* Tiles of conv2d-gemm.comp: output channels x positions, and its k slice (the shader's constants). */
#define CONV_GEMM_TILE 64
#define CONV_GEMM_BK   16

/* The grid of tiles bm x bn (output channels x positions) over node. */
static uint64_t conv_tiles(const struct ggml_tensor *node, uint32_t bm, uint32_t bn) {
    const uint64_t positions =
        (uint64_t)node->ne[0] * (uint64_t)node->ne[1] * (uint64_t)node->ne[3];
    return (((uint64_t)node->ne[2] + bm - 1) / bm) * ((positions + bn - 1) / bn);
}

/* The transient scratch of a split implicit GEMM: the larger of the cooperative-matrix kernel's
 * and the f32 kernel's (the first may give way to the second when its pipeline fails). */
static void conv_gemm_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                              struct vk_scratch_need *need) {
    if (node->op == GGML_OP_CONV_2D_DW) return;
    uint32_t spec[CONV_CM_NSPEC];
    VkDeviceSize bytes = conv_partials(
        node, conv_splits(d, node, conv_tiles(node, CONV_GEMM_TILE, CONV_GEMM_TILE), CONV_GEMM_BK));
    if (conv_cm_consts(d, node, spec)) {
        const VkDeviceSize cm =
            conv_partials(node, conv_splits(d, node, conv_tiles(node, spec[6], spec[7]), spec[8]));
        if (cm > bytes) bytes = cm;
    }
    if (bytes > conv_partials(node, 1) && bytes <= VK_SCRATCH_TRANSIENT_MAX &&
        bytes > need->transient)
        need->transient = bytes;
}

/* Record ds (shader and constants chosen) for node (conv_2d or conv_transpose_2d) on a grid of gx x gy
 * tiles with k slices of bk: the implicit GEMMs' x runs over tiles of output channels, y over tiles
 * of output positions, z over the layers of a split k (then their sum after it). */
static enum ggml_status conv_2d_tiles_record(struct vk_rec *rec, const struct ggml_tensor *node,
                                             struct vk_dispatch *ds, uint64_t gx, uint64_t gy,
                                             uint32_t bk) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const bool transposed = node->op == GGML_OP_CONV_TRANSPOSE_2D;
    uint32_t splits = conv_splits(rec->d, node, gx * gy, bk);
    VkDeviceSize at = 0;
    if (splits > 1 &&
        (!vk_scratch_transient(rec, conv_partials(node, splits), &at) ||
         !vk_optional_pipeline(rec->d, VK_SHADER_MM_SPLIT_SUM, NULL, 0, VK_PATH_COOPMAT_SPLIT,
                               "the convolutions run unsplit")))
        splits = 1;
    if (transposed) {
        const struct vk_pc_conv_transpose_2d pc = conv_transpose_2d_push(node);
        vk_dispatch_push(ds, pc);
    } else {
        const struct vk_pc_conv2d pc = conv_2d_push(node);
        vk_dispatch_push(ds, pc);
    }
    vk_dispatch_bind(ds, k, false, (uint32_t)ggml_type_size(k->type),
                     transposed ? VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_k)
                                : VK_PUSH_WORD(vk_pc_conv2d, off_k));
    vk_dispatch_bind(ds, x, false, 4,
                     transposed ? VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_x)
                                : VK_PUSH_WORD(vk_pc_conv2d, off_x));
    if (splits > 1) /* the layers, contiguous from the binding's start (off_d 0) */
        vk_dispatch_bind_scratch(ds, at, conv_partials(node, splits), true);
    else
        vk_dispatch_bind(ds, node, true, 4,
                         transposed ? VK_PUSH_WORD(vk_pc_conv_transpose_2d, off_d)
                                    : VK_PUSH_WORD(vk_pc_conv2d, off_d));
    ds->groups[0] = (uint32_t)gx;
    ds->groups[1] = (uint32_t)gy;
    ds->groups[2] = splits;
    enum ggml_status st = vk_record_dispatch(rec, ds);
    if (st == GGML_STATUS_SUCCESS && splits > 1) { /* the layers added as one column of node's values */
        const uint32_t n = (uint32_t)ggml_nelements(node);
        st = vk_split_sum_record_mn(rec, node, at, splits, n, 1, n);
    }
    return st;
}

/* conv2d-cm.comp for node: x tiles of output channels, y tiles of output positions.  False
 * (nothing recorded) where it does not take node or its pipeline cannot be made. */
static bool conv_2d_cm_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    struct vk_device *d = rec->d;
    uint32_t spec[CONV_CM_NSPEC];
    const uint64_t positions = (uint64_t)node->ne[0] * (uint64_t)node->ne[1] * (uint64_t)node->ne[3];
    if (positions > UINT32_MAX || !conv_cm_consts(d, node, spec)) return false;
    const uint64_t gx = ((uint64_t)node->ne[2] + spec[6] - 1) / spec[6], gy = (positions + spec[7] - 1) / spec[7];
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    const enum vk_shader_id id = vk_shader_find("%s_cm_%s", conv_gemm_prefix(node), ggml_type_name(node->src[0]->type));
    if (gx > max[0] || gy > max[1] || !vk_shader_present(id)) return false;
    if (!vk_pipeline_get(d, id, spec, CONV_CM_NSPEC, true)) {
        static atomic_bool told;
        if (!d->lost && !atomic_exchange(&told, true))
            ggmlc_log(GGML_LOG_LEVEL_WARN, "%s; convolutions take the f32 kernels instead\n", ggmlc_last_error());
        return false;
    }
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, id);
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = CONV_CM_NSPEC;
    *st = conv_2d_tiles_record(rec, node, &ds, gx, gy, spec[8]);
    return true;
}

/* conv_2d as an implicit GEMM in f32 (conv2d-gemm.comp), for GGML_OP_CONV_2D where the
 * cooperative-matrix kernel does not run (no im2col tensor, but on lavapipe slower than im2col +
 * the tiled GEMM: docs/vulkan.md), and the f32 option ($GGMLC_VK_CONV_CM=0).  False where the grid does not fit. */
static bool conv_2d_gemm_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    const uint64_t positions = (uint64_t)node->ne[0] * (uint64_t)node->ne[1] * (uint64_t)node->ne[3];
    const uint64_t gx = ((uint64_t)node->ne[2] + CONV_GEMM_TILE - 1) / CONV_GEMM_TILE, gy = (positions + CONV_GEMM_TILE - 1) / CONV_GEMM_TILE;
    const uint32_t *max = rec->d->props.limits.maxComputeWorkGroupCount;
    if (positions > UINT32_MAX || gx > max[0] || gy > max[1]) return false;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("%s_gemm_%s", conv_gemm_prefix(node), ggml_type_name(node->src[0]->type)));
    *st = conv_2d_tiles_record(rec, node, &ds, gx, gy, CONV_GEMM_BK);
    return true;
}

/* conv_2d: the cooperative-matrix implicit GEMM, else the f32 one; depthwise convolutions (and
 * grids too large for those) one invocation per output (conv2d.comp). */
static bool conv_gemm_any_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    return conv_2d_cm_record(rec, node, st) || conv_2d_gemm_record(rec, node, st);
}

static enum ggml_status conv_2d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    enum ggml_status st;
    if (node->op == GGML_OP_CONV_2D && conv_gemm_any_record(rec, node, &st)) return st;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv2d_%s", ggml_type_name(node->src[0]->type)));
    const struct vk_pc_conv2d pc = conv_2d_push(node);
    vk_dispatch_push(&ds, pc);
    conv_2d_bind(&ds, node);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* -------------------------------------------------------- im2col_back */

/* src[0]: the kernel (its shape only), src[1]: the patch gradient (f32);
 * struct ggmlc_conv2d_params. */
static bool im2col_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *g = node->src[1];
    const struct ggmlc_conv2d_params p = ggmlc_conv2d_params_of(node);
    if (p.s0 < 1 || p.p0 < 0 || p.d0 < 1) return false;
    /* a 1-D one has no vertical parameters */
    if (p.is_2d != 0 && (p.s1 < 1 || p.p1 < 0 || p.d1 < 1)) return false;
    return g->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && vk_shape_fits(g) && vk_shape_fits(node);
}

/* Gather patch columns g back onto the image node (im2col-back.comp) with the window geometry
 * spd.  1-D: the result [IW, IC, N] and columns [K*IC, OW, N] get a height of 1. */
static enum ggml_status gather_columns(struct vk_rec *rec, const struct ggml_tensor *node,
                                       const struct ggml_tensor *g, uint32_t kw, uint32_t kh,
                                       const struct ggmlc_conv2d_params *spd, bool is_2d) {
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("im2col_back_f32"));
    const int c = is_2d ? 2 : 1,
              n = is_2d ? 3 : 2; /* the dimensions of the channels and the batch */
    const struct vk_shape sg = vk_shape_of(g), sd = vk_shape_of(node);
    /* 1-D: no vertical taps: stride and dilation 1, no padding */
    const struct vk_pc_im2col_back pc = {
        .IW = sd.ne[0],
        .IH = is_2d ? sd.ne[1] : 1,
        .IC = sd.ne[c],
        .N = sd.ne[n],
        .KW = kw,
        .KH = is_2d ? kh : 1,
        .OW = sg.ne[1],
        .OH = is_2d ? sg.ne[2] : 1,
        .ng0 = sg.nb[0],
        .ng1 = sg.nb[1],
        .ng2 = is_2d ? sg.nb[2] : 0,
        .ng3 = sg.nb[n],
        .nd0 = sd.nb[0],
        .nd1 = is_2d ? sd.nb[1] : 0,
        .nd2 = sd.nb[c],
        .nd3 = sd.nb[n],
        .s0 = spd->s0,
        .s1 = is_2d ? spd->s1 : 1,
        .p0 = spd->p0,
        .p1 = is_2d ? spd->p1 : 0,
        .d0 = spd->d0,
        .d1 = is_2d ? spd->d1 : 1,
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, g, false, 4, VK_PUSH_WORD(vk_pc_im2col_back, off_g));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_im2col_back, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

static enum ggml_status im2col_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0];
    const struct ggmlc_conv2d_params p = ggmlc_conv2d_params_of(node);
    return gather_columns(rec, node, node->src[1], (uint32_t)k->ne[0], (uint32_t)k->ne[1], &p,
                          p.is_2d != 0);
}

/* ---------------------------------------------------------- col2im_1d */

/* columns [K*OC, T, N] (f32) summed back into [L, OC, N]; ggmlc_col2im_1d_params_of.
 * The 1-D im2col_back with dilation 1. */
static bool col2im_1d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const struct ggmlc_conv1d_params p = ggmlc_col2im_1d_params_of(node);
    const int32_t oc = p.oc;
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && p.s0 > 0 && oc > 0 &&
           p.p0 >= 0 &&
           a->ne[0] % oc == 0 && node->ne[1] == oc && node->ne[2] == a->ne[2] && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status col2im_1d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const struct ggmlc_conv1d_params p = ggmlc_col2im_1d_params_of(node);
    const struct ggmlc_conv2d_params spd = {p.s0, 1, p.p0, 0, p.d0, 1, 0};
    return gather_columns(rec, node, a, (uint32_t)(a->ne[0] / p.oc), 1, &spd, false);
}

/* ------------------------------------------------------- pool_2d_back */

/* src[0]: gradient of the pooled result (f32), src[1]: the forward input (f32/f16);
 * ggmlc_pool_2d_params_of. */
static bool pool_2d_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    const struct ggmlc_pool_params p = ggmlc_pool_2d_params_of(node);
    if (!pool_window_ok(&p)) return false;
    return (p.op == GGML_OP_POOL_MAX || p.op == GGML_OP_POOL_AVG) && dy->type == GGML_TYPE_F32 &&
           (x->type == GGML_TYPE_F32 || x->type == GGML_TYPE_F16) && vk_type_ok(d, x->type) && node->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(node, x) && dy->ne[2] == x->ne[2] && dy->ne[3] == x->ne[3] && vk_shape_fits(dy) && vk_shape_fits(x) &&
           vk_shape_fits(node);
}

static enum ggml_status pool_2d_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    const size_t tx = ggml_type_size(x->type);
    const struct ggmlc_pool_params p = ggmlc_pool_2d_params_of(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("pool_back_%s", ggml_type_name(x->type)));
    const struct vk_shape sy = vk_shape_of(dy), sx = vk_shape_of(x), sd = vk_shape_of(node);
    const struct vk_pc_pool_back pc = {
        .OW = sy.ne[0],
        .OH = sy.ne[1],
        .ny0 = sy.nb[0],
        .ny1 = sy.nb[1],
        .ny2 = sy.nb[2],
        .ny3 = sy.nb[3],
        .IW = sx.ne[0],
        .IH = sx.ne[1],
        .C = sx.ne[2],
        .N = sx.ne[3],
        .nx0 = sx.nb[0],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .avg = p.op == GGML_OP_POOL_AVG,
        .k0 = p.k0,
        .k1 = p.k1,
        .s0 = p.s0,
        .s1 = p.s1,
        .p0 = p.p0,
        .p1 = p.p1,
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, dy, false, 4, VK_PUSH_WORD(vk_pc_pool_back, off_dy));
    vk_dispatch_bind(&ds, x, false, (uint32_t)tx, VK_PUSH_WORD(vk_pc_pool_back, off_x));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_pool_back, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------- conv_transpose_1d */

/* a: kernel [K, OC, IC] (f32/f16), b: data [L, IC, N] (f32); ggmlc_conv_transpose_1d_params_of. */
static bool conv_transpose_1d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const struct ggmlc_conv1d_params p = ggmlc_conv_transpose_1d_params_of(node);
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && p.s0 > 0 && p.p0 >= 0 && p.d0 > 0 &&
           k->ne[2] == x->ne[1] && node->ne[1] == k->ne[1] && node->ne[2] == x->ne[2] && k->ne[3] == 1 && x->ne[3] == 1 &&
           vk_shape_fits(k) && vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status conv_transpose_1d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const size_t tk = ggml_type_size(k->type);
    const struct ggmlc_conv1d_params p = ggmlc_conv_transpose_1d_params_of(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv_transpose_1d_%s", ggml_type_name(k->type)));
    const struct vk_shape sk = vk_shape_of(k), sx = vk_shape_of(x), sd = vk_shape_of(node);
    const struct vk_pc_conv_transpose_1d pc = {
        .K = sk.ne[0],
        .OC = sk.ne[1],
        .IC = sk.ne[2],
        .nk0 = sk.nb[0],
        .nk1 = sk.nb[1],
        .nk2 = sk.nb[2],
        .L = sx.ne[0],
        .nx0 = sx.nb[0],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .OL = sd.ne[0],
        .N = sd.ne[2],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .s0 = p.s0,
        .p0 = p.p0,
        .d0 = p.d0,
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, k, false, (uint32_t)tk, VK_PUSH_WORD(vk_pc_conv_transpose_1d, off_k));
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_conv_transpose_1d, off_x));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_conv_transpose_1d, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ ssm_conv */

/* sx [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner] -> [d_inner, n_t, n_s]; f32. */
static bool ssm_conv_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *sx = node->src[0], *c = node->src[1];
    return sx->type == GGML_TYPE_F32 && c->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && sx->ne[1] == c->ne[1] &&
           node->ne[0] == c->ne[1] && node->ne[1] == sx->ne[0] - c->ne[0] + 1 && node->ne[2] == sx->ne[2] && sx->ne[3] == 1 &&
           vk_shape_fits(sx) && vk_shape_fits(c) && vk_shape_fits(node);
}

static enum ggml_status ssm_conv_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *sx = node->src[0], *c = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("ssm_conv_f32"));
    const struct vk_shape sd = vk_shape_of(node);
    const struct vk_pc_ssm_conv pc = {
        .d_conv = (uint32_t)c->ne[0],
        .d_inner = (uint32_t)c->ne[1],
        .n_t = sd.ne[1],
        .n_s = sd.ne[2],
        .nx0 = (uint32_t)(sx->nb[0] / 4),
        .nx1 = (uint32_t)(sx->nb[1] / 4),
        .nx2 = (uint32_t)(sx->nb[2] / 4),
        .nc0 = (uint32_t)(c->nb[0] / 4),
        .nc1 = (uint32_t)(c->nb[1] / 4),
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, sx, false, 4, VK_PUSH_WORD(vk_pc_ssm_conv, off_x));
    vk_dispatch_bind(&ds, c, false, 4, VK_PUSH_WORD(vk_pc_ssm_conv, off_c));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_ssm_conv, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_conv_register(struct vk_op_kernel *t) {
    t[GGML_OP_COL2IM_1D] = (struct vk_op_kernel){col2im_1d_supports, col2im_1d_record};
    vk_ops_conv3d_register(t);
    t[GGML_OP_CONV_TRANSPOSE_1D] = (struct vk_op_kernel){conv_transpose_1d_supports, conv_transpose_1d_record};
    t[GGML_OP_SSM_CONV] = (struct vk_op_kernel){ssm_conv_supports, ssm_conv_record};
    t[GGML_OP_IM2COL_BACK] = (struct vk_op_kernel){im2col_back_supports, im2col_back_record};
    t[GGML_OP_POOL_2D_BACK] = (struct vk_op_kernel){pool_2d_back_supports, pool_2d_back_record};
    t[GGML_OP_CONV_2D] = (struct vk_op_kernel){conv_2d_supports, conv_2d_record, conv_gemm_scratch};
    t[GGML_OP_CONV_2D_DW] = (struct vk_op_kernel){conv_2d_supports, conv_2d_record};
    t[GGML_OP_CONV_TRANSPOSE_2D] = (struct vk_op_kernel){
        conv_transpose_2d_supports, conv_transpose_2d_record, conv_gemm_scratch};
    t[GGML_OP_UPSCALE] = (struct vk_op_kernel){upscale_supports, upscale_record};
    t[GGML_OP_IM2COL] = (struct vk_op_kernel){im2col_supports, im2col_record};
    t[GGML_OP_POOL_1D] = (struct vk_op_kernel){pool_supports, pool_record};
    t[GGML_OP_POOL_2D] = (struct vk_op_kernel){pool_supports, pool_record};
}
