/*
 * ops-matmul.c - mul_mat: d = a^T b per batch (a: [K, M], b: [K, N], d: [M, N]),
 * a broadcast over b's batch dims, and the choice of its kernel: for N <= 8 the
 * integer-dot matrix-vector kernels (ops-matmul-dot.c) or the float ones (a few
 * rows of d per workgroup, see mv_dispatch); beyond, the tensor-core GEMM
 * (ops-matmul-coopmat.c) or the tiled shared-memory GEMM.  Weights F32, F16,
 * BF16 or quantized (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS, MXFP4,
 * dequantized while loading).  out_prod runs on the same tiled GEMM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops-matmul.h"

struct mm_tiles {
    uint32_t wg, bm, bn, bk, tm, tn;
};

/* Tile sizes (specialization constants): large tiles where shared memory and
 * registers are plentiful (GPUs), smaller ones on CPU-type devices. */
static struct mm_tiles mm_tiles_for(const struct vk_device *d) {
    struct mm_tiles t = {256, 64, 64, 16, 4, 4};
    if (d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU && d->props.limits.maxComputeSharedMemorySize >= 32768)
        t = (struct mm_tiles){256, 128, 128, 16, 8, 8}; /* the fastest of those tried on an H200 (BENCHMARKS.md) */
    /* $GGMLC_VK_MM_TILE="WG,BM,BN,BK,TM,TN" tries other tiles (ignored unless consistent) */
    const struct vk_env_value *env = &vk_tuning()->mm_tile;
    const struct mm_tiles v = {env->v[0], env->v[1], env->v[2], env->v[3], env->v[4], env->v[5]};
    if (env->n >= 6 && v.tm && v.tn && v.tm % 4 == 0 &&
        v.tn % 4 == 0 && v.bm % v.tm == 0 && v.bn % v.tn == 0 && v.wg == (v.bm / v.tm) * (v.bn / v.tn) &&
        (v.bm * v.bk) % v.wg == 0 && (v.bn * v.bk) % v.wg == 0 &&
        v.wg <= d->props.limits.maxComputeWorkGroupInvocations && 4ull * v.bk * (v.bm + v.bn + 8) <= d->props.limits.maxComputeSharedMemorySize)
        t = v;
    return t;
}

/* The tiles of an m x n product: the device's, except that on a device whose default is the
 * 128 x 128 tile a product with a side of at most 64 (which would leave such tiles at least half
 * empty: the CNN's convolutions, 32 or 64 channels) takes 64 x 64 tiles, twice as many
 * workgroups; GGMLC_VK_MM_TILE, when it fits, is taken for every product. */
static struct mm_tiles mm_tiles_for_shape(const struct vk_device *d, int64_t m, int64_t n) {
    const struct mm_tiles t = mm_tiles_for(d), small = {256, 64, 64, 16, 4, 4};
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    const bool small_fits = (uint64_t)(m + small.bm - 1) / small.bm <= max[0] &&
                            (uint64_t)(n + small.bn - 1) / small.bn <= max[1];
    if (vk_tuning()->mm_tile.set || t.bm <= small.bm || !small_fits) return t;
    return m <= small.bm || n <= small.bn ? small : t;
}

/* Tiled products of fewer than TILED_SPLIT_BELOW tiles leave most of the GPU idle, each workgroup
 * walking all of k: the gradients of a convolution's weights (9 x 32 with k = 25088, the batch's
 * pixels, in the CNN of ggmlc-bench train-epoch) ran on one workgroup.  Unbatched ones are split
 * along k into layers of workgroups (at least 4 slices of BK each, about 256 workgroups in all),
 * whose partial results mm-split-sum.comp adds up in the transient scratch, as the cooperative-
 * matrix kernel does.  The number of layers (1: none; its k per layer in *k_split);
 * $GGMLC_VK_MM_SPLIT=S takes S instead where it can (1 or 0: never split). */
#define TILED_SPLIT_BELOW 64
static uint32_t tiled_splits(const struct vk_device *d, int64_t m, int64_t n, int64_t k,
                             int64_t batches, const struct mm_tiles *t, uint32_t *k_split) {
    const uint64_t n_tiles =
        (uint64_t)((m + t->bm - 1) / t->bm) * (uint64_t)((n + t->bn - 1) / t->bn);
    const uint64_t slices = ((uint64_t)k + t->bk - 1) / t->bk, most = slices / 4;
    *k_split = 0;
    if (batches != 1 || most < 2 || !vk_shader_present(VK_SHADER_MM_SPLIT_SUM) ||
        vk_path_disabled(d, VK_PATH_COOPMAT_SPLIT))
        return 1;
    const struct vk_env_value *env = &vk_tuning()->mm_split;
    uint64_t s = n_tiles < TILED_SPLIT_BELOW ? (256 + n_tiles - 1) / n_tiles : 1;
    if (env->set) s = env->number > 0 ? (uint64_t)env->number : 1;
    if (s > most) s = most;
    if (s > d->props.limits.maxComputeWorkGroupCount[2])
        s = d->props.limits.maxComputeWorkGroupCount[2];
    if (s <= 1) return 1;
    const uint64_t per = (slices + s - 1) / s; /* slices per layer; no layer left empty */
    *k_split = (uint32_t)(per * t->bk);
    return (uint32_t)((slices + per - 1) / per);
}

/* The bytes of a split product's partial results (0 unsplit). */
static VkDeviceSize tiled_partials(uint32_t splits, int64_t m, int64_t n) {
    return splits > 1
               ? vk_scratch_round((VkDeviceSize)splits * (VkDeviceSize)m * (VkDeviceSize)n * 4)
               : 0;
}

static void tiled_scratch(const struct vk_device *d, int64_t m, int64_t n, int64_t k,
                          int64_t batches, struct vk_scratch_need *need) {
    const struct mm_tiles t = mm_tiles_for_shape(d, m, n);
    uint32_t k_split;
    VkDeviceSize bytes = tiled_partials(tiled_splits(d, m, n, k, batches, &t, &k_split), m, n);
    if (bytes <= VK_SCRATCH_TRANSIENT_MAX && bytes > need->transient) need->transient = bytes;
}

/* Records the tiled GEMM of node (m x n x k; ds: its shader, tiles and operands bound; pc: its
 * push constants; the unsplit grid in ds->groups[0..1]), split along k where tiled_splits says
 * and the transient scratch holds the partial results, else over the batches. */
static enum ggml_status tiled_record(struct vk_rec *rec, const struct ggml_tensor *node,
                                     struct vk_dispatch *ds, struct vk_pc_mm *pc,
                                     const struct mm_tiles *t, int64_t batches) {
    uint32_t k_split;
    uint32_t splits = tiled_splits(rec->d, pc->M, pc->N, pc->K, batches, t, &k_split);
    VkDeviceSize at = 0;
    if (splits > 1 && (!vk_scratch_transient(rec, tiled_partials(splits, pc->M, pc->N), &at) ||
                       !vk_optional_pipeline(rec->d, VK_SHADER_MM_SPLIT_SUM, NULL, 0,
                                             VK_PATH_COOPMAT_SPLIT, "the products run unsplit")))
        splits = 1;
    if (splits > 1)
        vk_split_bind_partials(ds, pc, node, at, splits, k_split);
    else
        vk_dispatch_bind(ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm, off_d));
    ds->groups[2] = splits > 1 ? splits : (uint32_t)batches;
    vk_dispatch_push(ds, *pc);
    enum ggml_status st = vk_record_dispatch(rec, ds);
    if (st == GGML_STATUS_SUCCESS && splits > 1) st = vk_split_sum_record(rec, node, at, splits);
    return st;
}

/* Whether the matrix-vector kernels (N <= MV_MAX_N) take the pair; the tiled GEMM takes the others of
 * pair_has_kernel at every N (quantized or f32 weights with f16 activations: rare, and correct there). */
static bool pair_has_mv_kernel(enum ggml_type a, enum ggml_type b) {
    return b == GGML_TYPE_F32 || (a == GGML_TYPE_F16 && b == GGML_TYPE_F16);
}

static bool pair_has_kernel(enum ggml_type a, enum ggml_type b) {
    return (vk_is_block_quant(a) && (b == GGML_TYPE_F32 || b == GGML_TYPE_F16)) ||
           (b == GGML_TYPE_F32 && (a == GGML_TYPE_F32 || a == GGML_TYPE_F16 || a == GGML_TYPE_BF16)) ||
           (b == GGML_TYPE_F16 && (a == GGML_TYPE_F32 || a == GGML_TYPE_F16));
}

static bool mul_mat_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!pair_has_kernel(a->type, b->type) || !d->caps.storage16 || !d->caps.subgroup_arith || !vk_type_ok(d, b->type))
        return false;
    if (node->type != GGML_TYPE_F32 || node->nb[0] != 4 || b->nb[0] != ggml_type_size(b->type)) return false;
    if (!vk_shape_fits(b) || !vk_shape_fits(node)) return false;
    if (vk_is_block_quant(a->type)) {
        if (!vk_quant_readable(d, a)) return false;
    } else if (a->nb[0] != ggml_type_size(a->type) || !vk_shape_fits(a)) {
        return false;
    }
    if (a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    const uint64_t batches = (uint64_t)b->ne[2] * b->ne[3];
    const struct mm_tiles t = mm_tiles_for_shape(d, a->ne[1], b->ne[1]);
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    return batches <= max[2] && (uint64_t)(a->ne[1] + t.bm - 1) / t.bm <= max[0] && (uint64_t)(b->ne[1] + t.bn - 1) / t.bn <= max[1];
}

/* Matrix-vector kernels (N <= 8): threads per workgroup, rows of d per workgroup and, for
 * the staged quantized kernel, the most workgroups (each loops over row groups, so b is
 * staged into shared memory once per workgroup) and how it turns quants into floats
 * (0 bit tricks, 1 int-to-float instructions); for mv.comp (float weights) `groups` is its
 * STEPS, the steps along k a thread loads together (1-8).  $GGMLC_VK_MV="WG,ROWS[,STEPS]" and
 * $GGMLC_VK_MVQ="WG,ROWS,GROUPS,CONVERT" try others (ignored unless they fit the device). */
struct mv_tune {
    uint32_t wg, rows, groups, convert;
};

/* Halfwords per block of the 32-value quantized types (mvq-staged.comp's QWORDS). */
static uint32_t quant_halfwords(enum ggml_type t) {
    return (uint32_t)ggml_type_size(t) / 2;
}

/* Whether the tuning fits: reductions need at most 32 subgroups, the staged kernel an even
 * workgroup size and its shared memory (a rows, padded b, partial sums). */
static bool mv_tune_fits(const struct vk_device *d, const struct mv_tune *t, enum ggml_type a, uint32_t n) {
    if (!t->wg || !t->rows || t->rows * n > 64 || t->wg > d->props.limits.maxComputeWorkGroupInvocations ||
        t->wg > 32 * d->caps.subgroup_size)
        return false;
    uint64_t shared = 4ull * 32 * t->rows * n;
    if (vk_is_block_quant(a))
        shared += 4ull * t->rows * (t->wg * quant_halfwords(a) / 2 + 2);
    return (!vk_is_block_quant(a) || (t->wg % 2 == 0 && t->groups)) && shared <= d->props.limits.maxComputeSharedMemorySize;
}

/* mv.comp's threads, rows per workgroup and steps per iteration for float weights by the length k
 * of their rows.  One entry so far, measured on an H200 at k = 4096 (BENCHMARKS.md); shorter rows
 * (a 1.2B GPT's k = 2048 products read 680 GB/s) likely have too few loads in flight per thread
 * there, but other entries wait for their measurement (GGMLC_VK_MV="WG,ROWS,STEPS" tries them). */
static const struct {
    uint32_t k_max, wg, rows, steps;
} mv_float_by_k[] = {
    {UINT32_MAX, 128, 2, 1},
};

static struct mv_tune mv_float_tune(uint32_t k) {
    size_t i = 0;
    while (k > mv_float_by_k[i].k_max) i++;
    return (struct mv_tune){mv_float_by_k[i].wg, mv_float_by_k[i].rows, mv_float_by_k[i].steps, 0};
}

static struct mv_tune mv_tune_for(const struct vk_device *d, enum ggml_type a, uint32_t n, uint32_t k, bool lanes) {
    const bool quant = vk_is_block_quant(a) && !lanes;
    /* measured on an H200 (BENCHMARKS.md): q8_0 2 rows per workgroup, q4_0 4; the staged kernel
     * 2 rows and 1056 workgroups, q8_0's longer rows 1 */
    const uint32_t rows = lanes ? (a == GGML_TYPE_Q4_0 ? 4 : 2) : quant && a == GGML_TYPE_Q8_0 ? 1 : 2;
    struct mv_tune t = {128, rows, 1056, lanes ? 1 : 0}, v = {0, 0, 1, 0}; /* lanes: int-to-float, 2-5% faster there */
    if (!quant && !lanes) t = mv_float_tune(k);
    const struct vk_tuning *tune = vk_tuning();
    const struct vk_env_value *env = lanes ? &tune->mvql : quant ? &tune->mvq : &tune->mv;
    if (env->n >= 2) /* WG,ROWS[,GROUPS[,CONVERT]] */
        v = (struct mv_tune){env->v[0], env->v[1], env->n >= 3 ? env->v[2] : 1, env->n >= 4 ? env->v[3] : 0};
    const bool steps_ok = quant || lanes || (v.groups >= 1 && v.groups <= 8); /* mv.comp's STEPS */
    if (env->n >= 2 && v.convert <= 1 && v.wg % 8 == 0 && steps_ok && mv_tune_fits(d, &v, quant ? a : GGML_TYPE_F32, n)) return v;
    while (t.rows > 1 && !mv_tune_fits(d, &t, quant ? a : GGML_TYPE_F32, n)) t.rows /= 2;
    while (t.wg > 8 && !mv_tune_fits(d, &t, quant ? a : GGML_TYPE_F32, n)) t.wg /= 2;
    return t;
}

/* The grouped quantized mat-vec (mvq-group.comp): threads per workgroup, rows per
 * workgroup (a divisor of the threads), quants to floats as in mv_tune, and in `groups`
 * how many groups of blocks a thread loads at once.  Measured on an H200 (BENCHMARKS.md)
 * for one column; $GGMLC_VK_MVQG="WG,ROWS,CONVERT[,LOADS]" tries others (ignored unless
 * they fit) and also selects the kernel for 2-8 columns, where it was not faster. */
static bool mvq_group_fits(const struct vk_device *d, const struct mv_tune *t, uint32_t n) {
    return t->wg && t->rows && t->groups && t->groups <= 4 && t->wg % t->rows == 0 && t->rows * n <= t->wg && t->convert <= 1 &&
           t->wg <= d->props.limits.maxComputeWorkGroupInvocations && 4ull * t->wg * n <= d->props.limits.maxComputeSharedMemorySize;
}

static struct mv_tune mvq_group_tune(const struct vk_device *d, uint32_t n) {
    struct mv_tune t = {128, 16, 1, 1}, v = {0, 0, 1, 0};
    const struct vk_env_value *env = &vk_tuning()->mvqg; /* WG,ROWS[,CONVERT[,GROUPS]] */
    if (env->n >= 2)
        v = (struct mv_tune){env->v[0], env->v[1], env->n >= 4 ? env->v[3] : 1, env->n >= 3 ? env->v[2] : 0};
    if (env->n >= 2 && mvq_group_fits(d, &v, n)) return v;
    while (t.wg > 8 && !mvq_group_fits(d, &t, n)) t.wg /= 2, t.rows = t.rows > 1 ? t.rows / 2 : 1;
    return t;
}

/* Whether a's rows can be read as groups of 8 blocks, 16 bytes at a time: whole groups per
 * row, rows, strides and offset 16-byte aligned. */
static bool mvq_groupable(const struct vk_device *d, const struct ggml_tensor *a) {
    const struct vk_buffer *buf = vk_tensor_buffer(d, a);
    return buf && a->ne[0] % 256 == 0 && a->nb[1] % 16 == 0 && a->nb[2] % 16 == 0 && a->nb[3] % 16 == 0 &&
           vk_tensor_offset(buf, a) % 16 == 0 && d->props.limits.minStorageBufferOffsetAlignment <= 16;
}

/* The float-activation matrix-vector dispatch: mvq-group.comp for one column of b and q4_0 or q8_0 rows that allow it (unless
 * $GGMLC_VK_MVQ_KERNEL names another kernel than "group"), mvq-lanes.comp (lanes along k, like mv.comp) for q4_0 and
 * q8_0 otherwise unless $GGMLC_VK_MVQ_KERNEL=staged, mvq-staged.comp for the other 32-value quantized
 * types, mvq.comp (one block per thread) for the rest, mv.comp for float weights (16-byte
 * loads when both operands allow them). */
static void mv_dispatch(struct vk_rec *rec, struct vk_dispatch *ds, const struct ggml_tensor *a, const struct ggml_tensor *b,
                        size_t *a_unit, size_t *b_unit) {
    const struct vk_tuning *tune = vk_tuning();
    const bool quant = vk_is_block_quant(a->type);
    const bool lanes_ok = quant && tune->mvq_kernel != VK_MVQ_STAGED;
    enum vk_shader_id lanes = lanes_ok ? vk_shader_find("mvql_%s", ggml_type_name(a->type)) : VK_SHADER_COUNT;
    const struct mv_tune t = mv_tune_for(rec->d, a->type, (uint32_t)b->ne[1], (uint32_t)a->ne[0], lanes != VK_SHADER_COUNT);
    const uint32_t bvec = vk_vectorizable(rec->d, b);
    const bool grouped = tune->mvq_kernel == VK_MVQ_AUTO || tune->mvq_kernel == VK_MVQ_GROUP;
    const enum vk_shader_id group = quant && grouped ? vk_shader_find("mvqg_%s", ggml_type_name(a->type)) : VK_SHADER_COUNT;
    if (group != VK_SHADER_COUNT && (b->ne[1] == 1 || tune->mvqg.set) && mvq_groupable(rec->d, a)) {
        const struct mv_tune g = mvq_group_tune(rec->d, (uint32_t)b->ne[1]);
        *a_unit = 16;
        vk_dispatch_init(ds, group);
        const uint32_t spec[6] = {g.wg, g.rows, (uint32_t)b->ne[1], bvec, g.convert, g.groups};
        memcpy(ds->spec, spec, sizeof spec);
        ds->n_spec = 6;
        vk_groups_1d(rec->d, (uint64_t)a->ne[1], g.rows, ds->groups);
        return;
    }
    if (!quant) {
        const bool vec = b->type == GGML_TYPE_F32 && vk_vectorizable(rec->d, a) && bvec;
        if (vec) *a_unit = *b_unit = 16;
        vk_dispatch_init(ds, vk_shader_find("mv_%s%s_%s", vec ? "vec_" : "", ggml_type_name(a->type), ggml_type_name(b->type)));
        const uint32_t spec[4] = {t.wg, t.rows, (uint32_t)b->ne[1], t.groups}; /* groups: mv.comp's STEPS */
        memcpy(ds->spec, spec, sizeof spec);
        ds->n_spec = 4;
        vk_groups_1d(rec->d, (uint64_t)a->ne[1], t.rows, ds->groups);
        return;
    }
    if (lanes != VK_SHADER_COUNT) {
        vk_dispatch_init(ds, lanes);
        const uint32_t spec[5] = {t.wg, t.rows, (uint32_t)b->ne[1], bvec, t.convert};
        memcpy(ds->spec, spec, sizeof spec);
        ds->n_spec = 5;
        vk_groups_1d(rec->d, (uint64_t)a->ne[1], t.rows, ds->groups);
        return;
    }
    const enum vk_shader_id staged = vk_shader_find("mvqs_%s", ggml_type_name(a->type));
    if (staged != VK_SHADER_COUNT) {
        vk_dispatch_init(ds, staged);
        const uint32_t spec[5] = {t.wg, t.rows, (uint32_t)b->ne[1], t.convert, bvec};
        memcpy(ds->spec, spec, sizeof spec);
        ds->n_spec = 5;
        vk_groups_1d(rec->d, ((uint64_t)a->ne[1] + t.rows - 1) / t.rows, 1, ds->groups);
        if (ds->groups[0] > t.groups) ds->groups[0] = t.groups, ds->groups[1] = 1;
        return;
    }
    vk_dispatch_init(ds, vk_shader_find("mvq_%s", ggml_type_name(a->type)));
    ds->spec[0] = 128;
    ds->spec[1] = rec->d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 4; /* rows: 3x faster on an H200 */
    ds->n_spec = 2;
    vk_groups_1d(rec->d, (uint64_t)a->ne[1], ds->spec[1], ds->groups);
}

/* The float kernel family of a x b: the matrix-vector kernels for few columns of a pair they
 * have, else a GEMM (the tensor-core one where it takes the product, else the tiled one). */
static enum vk_mm_kernel mm_float_kernel(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return b->ne[1] <= MV_MAX_N && pair_has_mv_kernel(a->type, b->type) ? VK_MM_MAT_VEC
                                                                          : VK_MM_GEMM;
}

/* The one place that chooses the kernel of a x b (ops-matmul.h); *dot_scratch: the bytes of b
 * quantized when the integer-dot kernel is chosen. */
static enum vk_mm_kernel mm_kernel_for(const struct vk_device *d, const struct ggml_tensor *a,
                                       const struct ggml_tensor *b, VkDeviceSize *dot_scratch) {
    if (vk_mvq_dot_takes(d, a, b, dot_scratch)) return VK_MM_INT_DOT;
    return mm_float_kernel(a, b);
}

/* The scratch memory of mul_mat node: b quantized for the integer-dot kernel, or the tensor-core
 * GEMM's f16 forms and split partials. */
static void mul_mat_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                            struct vk_scratch_need *need) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    VkDeviceSize bytes;
    if (!a || !b) return;
    switch (mm_kernel_for(d, a, b, &bytes)) {
    case VK_MM_INT_DOT: need->needed += vk_scratch_round(bytes); break;
    case VK_MM_GEMM:
        if (vk_coopmat_takes(d, a, b))
            vk_coopmat_scratch(d, a, b, need);
        else
            tiled_scratch(d, a->ne[1], b->ne[1], a->ne[0], b->ne[2] * b->ne[3], need);
        break;
    case VK_MM_MAT_VEC: break;
    }
}

/* Record the mat-vec dispatch ds (chosen by mv_dispatch) of node; with add (a FUSE_ADD kernel)
 * its sum of the product and e too. */
static enum ggml_status mv_record(struct vk_rec *rec, struct vk_dispatch *ds, const struct ggml_tensor *node,
                                  const struct ggml_tensor *e, const struct ggml_tensor *add, size_t a_unit,
                                  size_t b_unit) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    ds->groups[2] = (uint32_t)(b->ne[2] * b->ne[3]);
    const struct vk_pc_mm pc = vk_pc_matmul(node, a_unit, b_unit);
    vk_dispatch_push(ds, pc);
    vk_dispatch_bind(ds, a, false, (uint32_t)a_unit, VK_PUSH_WORD(vk_pc_mm, off_a));
    vk_dispatch_bind(ds, b, false, (uint32_t)b_unit, VK_PUSH_WORD(vk_pc_mm, off_b));
    vk_dispatch_bind(ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm, off_d));
    if (add) {
        vk_dispatch_bind(ds, e, false, 4, VK_PUSH_WORD(vk_pc_mm, off_e));
        vk_dispatch_bind(ds, add, true, 4, VK_PUSH_WORD(vk_pc_mm, off_o));
    }
    return vk_record_dispatch(rec, ds);
}

/* The kernel mm_kernel_for chooses; one that does not take the product after all (the integer-dot
 * kernel when the scratch memory does not hold b quantized, the tensor-core GEMM when its pipeline
 * fails) gives way to the next: the float family, the tiled GEMM. */
static enum ggml_status mul_mat_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    enum ggml_status st;
    VkDeviceSize bytes;
    enum vk_mm_kernel kernel = mm_kernel_for(rec->d, a, b, &bytes);
    if (kernel == VK_MM_INT_DOT) {
        if (vk_mvq_dot_record(rec, node, NULL, NULL, &st)) return st;
        kernel = mm_float_kernel(a, b);
    }
    const bool mat_vec = kernel == VK_MM_MAT_VEC;
    if (!mat_vec && vk_coopmat_record(rec, node, &st)) return st;
    struct vk_dispatch ds;
    size_t a_unit = vk_addr_unit(a->type), b_unit = ggml_type_size(b->type);
    const int64_t batches = b->ne[2] * b->ne[3];
    if (!mat_vec) {
        const struct mm_tiles t = mm_tiles_for_shape(rec->d, a->ne[1], b->ne[1]);
        vk_dispatch_init(&ds, vk_shader_find("mm_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
        const uint32_t spec[6] = {t.wg, t.bm, t.bn, t.bk, t.tm, t.tn};
        memcpy(ds.spec, spec, sizeof spec);
        ds.n_spec = 6;
        ds.groups[0] = (uint32_t)((a->ne[1] + t.bm - 1) / t.bm);
        ds.groups[1] = (uint32_t)((b->ne[1] + t.bn - 1) / t.bn);
        struct vk_pc_mm pc = vk_pc_matmul(node, a_unit, b_unit);
        vk_dispatch_bind(&ds, a, false, (uint32_t)a_unit, VK_PUSH_WORD(vk_pc_mm, off_a));
        vk_dispatch_bind(&ds, b, false, (uint32_t)b_unit, VK_PUSH_WORD(vk_pc_mm, off_b));
        return tiled_record(rec, node, &ds, &pc, &t, batches);
    }
    mv_dispatch(rec, &ds, a, b, &a_unit, &b_unit);
    return mv_record(rec, &ds, node, NULL, NULL, a_unit, b_unit);
}

/* ------------------------------------------------- a mat-vec and its add (vk-fuse.c) */

/* The float mat-vec kernel (mv.comp) with FUSE_ADD of node's product, or VK_SHADER_COUNT. */
static enum vk_shader_id mv_add_shader(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    VkDeviceSize bytes;
    if (vk_is_block_quant(a->type) || mm_kernel_for(d, a, b, &bytes) != VK_MM_MAT_VEC) return VK_SHADER_COUNT;
    const bool vec = b->type == GGML_TYPE_F32 && vk_vectorizable(d, a) && vk_vectorizable(d, b);
    return vk_shader_find("mv_%s%s_%s_add", vec ? "vec_" : "", ggml_type_name(a->type), ggml_type_name(b->type));
}

/* The other operand of add, which adds node's product, or NULL. */
static const struct ggml_tensor *addend_of(const struct ggml_tensor *node, const struct ggml_tensor *add) {
    if (add->op != GGML_OP_ADD || add->type != GGML_TYPE_F32) return NULL;
    if (add->src[0] == node) return add->src[1];
    return add->src[1] == node ? add->src[0] : NULL;
}

bool vk_mul_mat_add_fits(const struct vk_device *d, const struct ggml_tensor *node, const struct ggml_tensor *add) {
    if (node->op != GGML_OP_MUL_MAT) return false;
    const struct ggml_tensor *e = addend_of(node, add);
    VkDeviceSize bytes;
    /* e and the sum are read and written with the product's strides */
    return e && e != node && e->type == GGML_TYPE_F32 && ggml_are_same_shape(e, node) &&
           memcmp(e->nb, node->nb, sizeof e->nb) == 0 && memcmp(add->nb, node->nb, sizeof add->nb) == 0 &&
           (vk_shader_present(mv_add_shader(d, node)) ||
            (mm_kernel_for(d, node->src[0], node->src[1], &bytes) == VK_MM_INT_DOT && vk_mvq_dot_add_takes(node, add)));
}

bool vk_mul_mat_add_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct ggml_tensor *add,
                           enum ggml_status *st) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    VkDeviceSize bytes;
    if (mm_kernel_for(rec->d, a, b, &bytes) == VK_MM_INT_DOT) return vk_mvq_dot_record(rec, node, addend_of(node, add), add, st);
    struct vk_dispatch ds;
    size_t a_unit = vk_addr_unit(a->type), b_unit = ggml_type_size(b->type);
    mv_dispatch(rec, &ds, a, b, &a_unit, &b_unit); /* the unfused kernel's choices, then its FUSE_ADD variant */
    ds.shader = mv_add_shader(rec->d, node);
    if (!vk_optional_pipeline(rec->d, ds.shader, ds.spec, ds.n_spec, VK_PATH_FUSE, "unfused nodes")) return false;
    *st = mv_record(rec, &ds, node, addend_of(node, add), add, a_unit, b_unit);
    return true;
}

/* ------------------------------------------------------------ out_prod */

/* d[i0, i1] = sum_k a[i0, k] * b[i1, k] (per batch, a broadcast): the tiled GEMM with
 * k running along dimension 1 of both operands.  A block-format a has its
 * blocks along i0 (f32 or f16 b): mm.comp's ALONG_M variants, strides in 16-bit words. */
static bool out_prod_types_ok(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (vk_is_block_quant(a->type)) return (b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16) && vk_quant_readable(d, a);
    const bool pair = pair_has_kernel(a->type, b->type);
    return pair && vk_type_ok(d, a->type) && vk_type_ok(d, b->type) && vk_shape_fits(a);
}

static bool out_prod_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!out_prod_types_ok(d, a, b)) return false;
    if (node->type != GGML_TYPE_F32 || node->nb[0] != 4 || !vk_shape_fits(b) || !vk_shape_fits(node)) return false;
    if (a->ne[1] != b->ne[1] || a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] || b->ne[3] % a->ne[3]) return false;
    const struct mm_tiles t = mm_tiles_for_shape(d, a->ne[0], b->ne[0]);
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    return (uint64_t)b->ne[2] * b->ne[3] <= max[2] && (uint64_t)(a->ne[0] + t.bm - 1) / t.bm <= max[0] &&
           (uint64_t)(b->ne[0] + t.bn - 1) / t.bn <= max[1];
}

static enum ggml_status out_prod_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const bool quant = vk_is_block_quant(a->type);
    const size_t ta = vk_addr_unit(a->type), tb = ggml_type_size(b->type);
    const struct mm_tiles t = mm_tiles_for_shape(rec->d, a->ne[0], b->ne[0]);
    struct vk_dispatch ds;
    if (quant)
        vk_dispatch_init(&ds, vk_shader_find("mm_along_m_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
    else
        vk_dispatch_init(&ds, vk_shader_find("mm_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
    const uint32_t spec[6] = {t.wg, t.bm, t.bn, t.bk, t.tm, t.tn};
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = 6;
    struct vk_pc_mm pc = {
        /* m runs along dimension 0 of a and b, k along dimension 1 */
        .M = (uint32_t)a->ne[0],
        .N = (uint32_t)b->ne[0],
        .K = (uint32_t)a->ne[1],
        .nb01 = (uint32_t)(a->nb[0] / ta),
        .nb02 = (uint32_t)(a->nb[2] / ta),
        .nb03 = (uint32_t)(a->nb[3] / ta),
        .nb11 = (uint32_t)(b->nb[0] / tb),
        .nb12 = (uint32_t)(b->nb[2] / tb),
        .nb13 = (uint32_t)(b->nb[3] / tb),
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
        .nb3 = (uint32_t)(node->nb[3] / 4),
        .ne12 = (uint32_t)b->ne[2],
        .r2 = (uint32_t)(b->ne[2] / a->ne[2]),
        .r3 = (uint32_t)(b->ne[3] / a->ne[3]),
        .ka = (uint32_t)(a->nb[1] / ta),
        .kb = (uint32_t)(b->nb[1] / tb),
    };
    vk_dispatch_bind(&ds, a, false, (uint32_t)ta, VK_PUSH_WORD(vk_pc_mm, off_a));
    vk_dispatch_bind(&ds, b, false, (uint32_t)tb, VK_PUSH_WORD(vk_pc_mm, off_b));
    ds.groups[0] = (uint32_t)((a->ne[0] + t.bm - 1) / t.bm);
    ds.groups[1] = (uint32_t)((b->ne[0] + t.bn - 1) / t.bn);
    return tiled_record(rec, node, &ds, &pc, &t, b->ne[2] * b->ne[3]);
}

static void out_prod_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                             struct vk_scratch_need *need) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (a && b) tiled_scratch(d, a->ne[0], b->ne[0], a->ne[1], b->ne[2] * b->ne[3], need);
}

void vk_ops_matmul_register(struct vk_op_kernel *t) {
    t[GGML_OP_OUT_PROD] =
        (struct vk_op_kernel){out_prod_supports, out_prod_record, out_prod_scratch};
    t[GGML_OP_MUL_MAT] = (struct vk_op_kernel){mul_mat_supports, mul_mat_record, mul_mat_scratch};
}
