/*
 * ops-matmul.c - mul_mat: d = a^T b per batch (a: [K, M], b: [K, N], d: [M, N]),
 * a broadcast over b's batch dims.  A tiled shared-memory GEMM (tensor cores for
 * f16 weights where available) for N > 8, matrix-vector kernels (a few rows of d
 * per workgroup, see mv_dispatch) for N <= 8.  Weights
 * F32, F16, BF16 or quantized (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K,
 * dequantized while loading).  out_prod runs on the same tiled GEMM.
 */
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "vk-impl.h"

#define MV_MAX_N 8

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
    const char *env = getenv("GGMLC_VK_MM_TILE");
    struct mm_tiles v;
    if (env && sscanf(env, "%u,%u,%u,%u,%u,%u", &v.wg, &v.bm, &v.bn, &v.bk, &v.tm, &v.tn) == 6 && v.tm && v.tn && v.tm % 4 == 0 &&
        v.tn % 4 == 0 && v.bm % v.tm == 0 && v.bn % v.tn == 0 && v.wg == (v.bm / v.tm) * (v.bn / v.tn) &&
        (v.bm * v.bk) % v.wg == 0 && (v.bn * v.bk) % v.wg == 0 &&
        v.wg <= d->props.limits.maxComputeWorkGroupInvocations && 4ull * v.bk * (v.bm + v.bn + 8) <= d->props.limits.maxComputeSharedMemorySize)
        t = v;
    return t;
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
    if (vk_is_block_quant(a->type)) { /* whole blocks, addressed in 16-bit words */
        if (a->ne[0] % ggml_blck_size(a->type) != 0 || a->nb[0] != ggml_type_size(a->type) || a->nb[1] % 2 || a->nb[2] % 2 || a->nb[3] % 2) return false;
    } else if (a->nb[0] != ggml_type_size(a->type) || !vk_shape_fits(a)) {
        return false;
    }
    if (a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    const uint64_t batches = (uint64_t)b->ne[2] * b->ne[3];
    const struct mm_tiles t = mm_tiles_for(d);
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    return batches <= max[2] && (uint64_t)(a->ne[1] + t.bm - 1) / t.bm <= max[0] && (uint64_t)(b->ne[1] + t.bn - 1) / t.bn <= max[1];
}

static void push_matmul(struct vk_dispatch *ds, const struct ggml_tensor *node, size_t a_unit, size_t tb) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    ds->push[0] = (uint32_t)a->ne[1];
    ds->push[1] = (uint32_t)b->ne[1];
    ds->push[2] = (uint32_t)a->ne[0];
    for (int i = 1; i < 4; i++) {
        ds->push[2 + i] = (uint32_t)(a->nb[i] / a_unit);
        ds->push[5 + i] = (uint32_t)(b->nb[i] / tb);
        ds->push[8 + i] = (uint32_t)(node->nb[i] / 4);
    }
    ds->push[12] = (uint32_t)b->ne[2];
    ds->push[13] = (uint32_t)(b->ne[2] / a->ne[2]);
    ds->push[14] = (uint32_t)(b->ne[3] / a->ne[3]);
    ds->push[18] = ds->push[19] = 1; /* unit k strides */
}

/* Matrix-vector kernels (N <= 8): threads per workgroup, rows of d per workgroup and, for
 * the staged quantized kernel, the most workgroups (each loops over row groups, so b is
 * staged into shared memory once per workgroup) and how it turns quants into floats
 * (0 bit tricks, 1 int-to-float instructions).  $GGMLC_VK_MV="WG,ROWS" and
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

static struct mv_tune mv_tune_for(const struct vk_device *d, enum ggml_type a, uint32_t n, bool lanes) {
    const bool quant = vk_is_block_quant(a) && !lanes;
    /* measured on an H200 (BENCHMARKS.md): float weights and q8_0 2 rows per workgroup, q4_0 4;
     * the staged kernel 2 rows and 1056 workgroups, q8_0's longer rows 1 */
    const uint32_t rows = lanes ? (a == GGML_TYPE_Q4_0 ? 4 : 2) : quant && a == GGML_TYPE_Q8_0 ? 1 : 2;
    struct mv_tune t = {128, rows, 1056, lanes ? 1 : 0}, v = {0, 0, 1, 0}; /* lanes: int-to-float, 2-5% faster there */
    const char *env = getenv(lanes ? "GGMLC_VK_MVQL" : quant ? "GGMLC_VK_MVQ" : "GGMLC_VK_MV");
    if (env && sscanf(env, "%u,%u,%u,%u", &v.wg, &v.rows, &v.groups, &v.convert) >= 2 && v.convert <= 1 && v.wg % 8 == 0 &&
        mv_tune_fits(d, &v, quant ? a : GGML_TYPE_F32, n))
        return v;
    while (t.rows > 1 && !mv_tune_fits(d, &t, quant ? a : GGML_TYPE_F32, n)) t.rows /= 2;
    while (t.wg > 8 && !mv_tune_fits(d, &t, quant ? a : GGML_TYPE_F32, n)) t.wg /= 2;
    return t;
}

/* Whether a can be read 16 bytes at a time: rows, row strides and offset 16-byte aligned. */
static bool vectorizable(const struct vk_device *d, const struct ggml_tensor *t) {
    const struct vk_buffer *buf = vk_tensor_buffer(d, t);
    if (!buf) return false;
    const size_t per = 16 / ggml_type_size(t->type);
    return t->ne[0] % per == 0 && t->nb[1] % 16 == 0 && t->nb[2] % 16 == 0 && t->nb[3] % 16 == 0 &&
           vk_tensor_offset(buf, t) % 16 == 0 && d->props.limits.minStorageBufferOffsetAlignment <= 16;
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
    const char *env = getenv("GGMLC_VK_MVQG");
    if (env && sscanf(env, "%u,%u,%u,%u", &v.wg, &v.rows, &v.convert, &v.groups) >= 2 && mvq_group_fits(d, &v, n)) return v;
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
    const char *kernel = getenv("GGMLC_VK_MVQ_KERNEL");
    const bool quant = vk_is_block_quant(a->type);
    enum vk_shader_id lanes = quant && !(kernel && strcmp(kernel, "staged") == 0) ? vk_shader_find("mvql_%s", ggml_type_name(a->type))
                                                                                  : VK_SHADER_COUNT;
    const struct mv_tune t = mv_tune_for(rec->d, a->type, (uint32_t)b->ne[1], lanes != VK_SHADER_COUNT);
    const uint32_t bvec = vectorizable(rec->d, b);
    const bool grouped = !kernel || strcmp(kernel, "group") == 0;
    const enum vk_shader_id group = quant && grouped ? vk_shader_find("mvqg_%s", ggml_type_name(a->type)) : VK_SHADER_COUNT;
    if (group != VK_SHADER_COUNT && (b->ne[1] == 1 || getenv("GGMLC_VK_MVQG")) && mvq_groupable(rec->d, a)) {
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
        const bool vec = b->type == GGML_TYPE_F32 && vectorizable(rec->d, a) && bvec;
        if (vec) *a_unit = *b_unit = 16;
        vk_dispatch_init(ds, vk_shader_find("mv_%s%s_%s", vec ? "vec_" : "", ggml_type_name(a->type), ggml_type_name(b->type)));
        const uint32_t spec[3] = {t.wg, t.rows, (uint32_t)b->ne[1]};
        memcpy(ds->spec, spec, sizeof spec);
        ds->n_spec = 3;
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

/* Tiles of the cooperative-matrix kernel: {WG, BM, BN, BK, WM, WN, STAGES}, whether they fit: subgroup
 * tiles of whole 16x16 fragments covering the tile with WG / S subgroups (S the device's subgroup
 * size), whole 8-value chunks of a slice per thread, 1 or 2 shared slices (rows padded by one chunk),
 * whose part for a also stages an f32 fragment per subgroup at the edges. */
static bool coopmat_tiles_fit(const struct vk_device *d, const uint32_t *v) {
    if (!v[4] || !v[5] || v[4] % 16 || v[5] % 16 || v[1] % v[4] || v[2] % v[5] || v[3] % 16 ||
        v[0] != (v[1] / v[4]) * (v[2] / v[5]) * d->caps.subgroup_size || (v[1] * v[3] / 8) % v[0] || (v[2] * v[3] / 8) % v[0] ||
        v[6] < 1 || v[6] > 2)
        return false;
    const uint64_t row = 16ull * (v[3] / 8 + 1); /* bytes */
    const uint32_t *frag = d->caps.coopmat_khr_shape; /* an edge fragment: 16x16 with the NV fragments */
    const uint64_t edge = d->caps.coopmat_nv || !d->caps.coopmat_khr_frag ? 1024 : 4ull * frag[0] * frag[1];
    return row * v[1] >= edge * (v[0] / d->caps.subgroup_size) &&
           v[6] * row * (v[1] + v[2]) <= d->props.limits.maxComputeSharedMemorySize && v[0] <= d->props.limits.maxComputeWorkGroupInvocations;
}

/* The defaults, the fastest of those tried on an H200 (BENCHMARKS.md): eight 64x64 subgroup tiles
 * in 256x128 tiles, k slices of 32, for products of at least COOPMAT_BIG_TILES such tiles (4096^3:
 * 242 / 221 TFLOPS against 233 / 201, f16 / f32 activations); below that, for more workgroups,
 * eight 64x32 ones in 128x128 tiles, k slices of 64 (32 where shared memory is short: lavapipe's
 * 32 KB).  $GGMLC_VK_COOPMAT_TILE="WG,BM,BN,BK,WM,WN[,STAGES]" tries others (ignored, with a warning,
 * unless they fit); two stages (double-buffered slices) were slower on the H200. */
#define COOPMAT_BIG_TILES 256
static void coopmat_tiles(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, uint32_t t[7]) {
    const uint32_t sg = d->caps.subgroup_size, big[7] = {8 * sg, 256, 128, 32, 64, 64, 1}, small[7] = {8 * sg, 128, 128, 64, 64, 32, 1};
    const uint64_t big_tiles = (uint64_t)((a->ne[1] + 255) / 256) * (uint64_t)((b->ne[1] + 127) / 128) * (uint64_t)(b->ne[2] * b->ne[3]);
    memcpy(t, big_tiles >= COOPMAT_BIG_TILES && coopmat_tiles_fit(d, big) ? big : small, sizeof big);
    if (!coopmat_tiles_fit(d, t)) t[3] = 32;
    const char *env = getenv("GGMLC_VK_COOPMAT_TILE");
    uint32_t v[7] = {0, 0, 0, 0, 0, 0, 1};
    if (!env) return;
    const int n = sscanf(env, "%u,%u,%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
    if ((n == 6 || n == 7) && coopmat_tiles_fit(d, v)) {
        memcpy(t, v, sizeof v);
        return;
    }
    static atomic_bool told; /* a sweep must not time the default unawares (session 4's did) */
    if (!atomic_exchange(&told, true))
        ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan %s: GGMLC_VK_COOPMAT_TILE=%s ignored: it does not fit (WG = (BM/WM)(BN/WN) %u, "
                                       "%u bytes of shared memory at most); the default tiles are used\n",
                  d->name, env, d->caps.subgroup_size, d->props.limits.maxComputeSharedMemorySize);
}

/* The fragments through VK_KHR_cooperative_matrix rather than the NV extension (16x16x16 ones, or the
 * device's 8x8x8 or mixed shape, coopmat_khr_shape) wherever the device has such a shape: on an H200,
 * 232 / 198 TFLOPS against 200 / 166 with the NV instructions, same kernel, f16 / f32 activations
 * (BENCHMARKS.md).  $GGMLC_VK_COOPMAT_KHR=0 takes the NV ones. */
static bool use_coopmat_khr(const struct vk_device *d) {
    const char *env = getenv("GGMLC_VK_COOPMAT_KHR");
    return d->caps.coopmat_khr_frag && !d->coopmat_khr_failed && (!d->caps.coopmat_nv || !env || strcmp(env, "0") != 0) &&
           vk_shader_present(vk_shader_find("mm_coopmat_khr_f16_f32"));
}

/* The tensor-core path (its tiles into `tiles`): f16 weights, f32 or f16 activations read 16 bytes at
 * a time, and a grid of tiles within the device's limits (otherwise the tiled GEMM, which supports_op
 * checked). */
static bool use_coopmat(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, bool a_dequantized,
                        uint32_t tiles[7]) {
    coopmat_tiles(d, a, b, tiles);
    const bool nv = d->caps.coopmat_nv && !d->coopmat_nv_failed;
    if (!d->use_coopmat || !coopmat_tiles_fit(d, tiles) || !(nv || use_coopmat_khr(d)) ||
        (a->type != GGML_TYPE_F16 && !a_dequantized) || (b->type != GGML_TYPE_F32 && b->type != GGML_TYPE_F16))
        return false;
    const struct vk_buffer *ba = vk_tensor_buffer(d, a), *bb = vk_tensor_buffer(d, b);
    if (!ba || !bb || a->ne[0] % 8 != 0 || d->props.limits.minStorageBufferOffsetAlignment > 16) return false;
    for (int i = 1; i < 4; i++)
        if ((!a_dequantized && a->nb[i] % 16 != 0) || b->nb[i] % 16 != 0) return false;
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    if ((uint64_t)(a->ne[1] + tiles[1] - 1) / tiles[1] > max[0] || (uint64_t)(b->ne[1] + tiles[2] - 1) / tiles[2] > max[1]) return false;
    return (a_dequantized || vk_tensor_offset(ba, a) % 16 == 0) && vk_tensor_offset(bb, b) % 16 == 0;
}

/* Block-format weights of a product of at least 64 columns are dequantized into f16 in the segment's
 * transient scratch first (cpy-dequant.comp, dequant_<type>_f16), so that the product runs on the
 * cooperative-matrix kernel instead of the tiled GEMM; below 64 columns the tiled kernel, which reads
 * the blocks themselves (a quarter to a half of the bytes), is left the product.
 * $GGMLC_VK_COOPMAT_DEQUANT=N dequantizes from N columns on instead, =0 never. */
static VkDeviceSize dequant_a_bytes(const struct ggml_tensor *a) {
    return (VkDeviceSize)ggml_nelements(a) * 2;
}

static bool coopmat_dequants_a(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const char *env = getenv("GGMLC_VK_COOPMAT_DEQUANT");
    const long min_cols = env ? atol(env) : 64;
    return vk_is_block_quant(a->type) && min_cols > 0 && b->ne[1] >= min_cols && a->ne[0] % 8 == 0 &&
           dequant_a_bytes(a) <= VK_SCRATCH_TRANSIENT_MAX && dequant_a_bytes(a) <= d->props.limits.maxStorageBufferRange &&
           ggml_nelements(a) <= UINT32_MAX &&
           vk_shader_present(vk_shader_find("dequant_%s_f16", ggml_type_name(a->type)));
}

/* a dequantized into contiguous f16 at the transient scratch offset *at; false when the region does
 * not hold it (the product then takes the tiled kernel).  The dispatch's status in *st. */
static bool dequant_a_f16(struct vk_rec *rec, const struct ggml_tensor *a, VkDeviceSize *at, enum ggml_status *st) {
    *st = GGML_STATUS_SUCCESS;
    if (!vk_scratch_transient(rec, dequant_a_bytes(a), at)) return false;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("dequant_%s_f16", ggml_type_name(a->type)));
    for (int i = 0; i < 4; i++) {
        ds.push[i] = (uint32_t)a->ne[i];
        ds.push[7 + i] = (uint32_t)a->ne[i];
    }
    for (int i = 1; i < 4; i++) ds.push[3 + i] = (uint32_t)(a->nb[i] / 2);
    ds.push[11] = 1; /* d: contiguous f16 */
    ds.push[12] = (uint32_t)a->ne[0];
    ds.push[13] = (uint32_t)(a->ne[0] * a->ne[1]);
    ds.push[14] = (uint32_t)(a->ne[0] * a->ne[1] * a->ne[2]);
    vk_dispatch_bind(&ds, a, false, 2, 15);
    vk_dispatch_bind_scratch(&ds, *at, dequant_a_bytes(a), true);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(a), 256, ds.groups);
    *st = vk_record_dispatch(rec, &ds);
    return true;
}

/* The coopmat kernel's FLEX variant (one WM x WN accumulator per subgroup, products of k = FK):
 * where the device has flexible sizes of the right granularity, whole tiles, 16-byte aligned d and
 * no failure so far.  FK is 16; $GGMLC_VK_COOPMAT_FLEX=FK tries another, =0 turns the variant off. */
static bool use_coopmat_flex(const struct vk_device *d, const struct ggml_tensor *node, const uint32_t tiles[7], uint32_t *fk) {
    const struct vk_caps *c = &d->caps;
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const struct vk_buffer *bd = vk_tensor_buffer(d, node);
    const char *env = getenv("GGMLC_VK_COOPMAT_FLEX");
    *fk = env ? (uint32_t)atoi(env) : 16;
    if (!c->coopmat_flex || d->coopmat_flex_failed || !*fk || !bd || !vk_shader_present(vk_shader_find("mm_coopmat_flex_f16_%s", ggml_type_name(b->type))))
        return false;
    if (tiles[4] % c->coopmat_flex_gran[0] || tiles[5] % c->coopmat_flex_gran[1] || *fk % c->coopmat_flex_gran[2] || tiles[3] % *fk ||
        tiles[4] > c->coopmat_flex_max_dim || tiles[5] > c->coopmat_flex_max_dim || *fk > c->coopmat_flex_max_dim)
        return false;
    if (a->ne[1] % tiles[1] || b->ne[1] % tiles[2] || node->nb[1] % 16 || vk_tensor_offset(bd, node) % 16) return false;
    for (int i = 2; i < 4; i++)
        if (node->nb[i] % 16) return false;
    return true;
}

/* The integer-dot quantized mat-vec: b quantized into scratch memory by quantize-q8.comp,
 * then mvq-dot.comp with threads per workgroup, rows of d per workgroup and at most so many
 * workgroups (0: one per group of rows) as tuned here.  $GGMLC_VK_MVQD="WG,ROWS[,GROUPS]"
 * tries others (ignored unless they fit the device). */
struct mvq_dot_tune {
    uint32_t wg, rows, groups;
};

static bool mvq_dot_fits(const struct vk_device *d, const struct mvq_dot_tune *t, uint32_t n) {
    const uint32_t sg = d->caps.subgroup_size;
    return t->wg && t->wg % 8 == 0 && sg >= 8 && t->wg % sg == 0 && t->rows && t->rows <= 16 &&
           t->wg <= d->props.limits.maxComputeWorkGroupInvocations &&
           4ull * (t->wg / 8) * t->rows * n <= d->props.limits.maxComputeSharedMemorySize;
}

/* Weights the integer-dot kernels read: the 32-value block formats (mvq-dot.comp) and the K-quants
 * (mvq-dot-k.comp; q4_K and q5_K as 16-byte words, so 16-byte aligned). */
static bool mvq_dot_weights_ok(const struct vk_device *d, const struct ggml_tensor *a) {
    switch (a->type) {
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q6_K: return true;
    case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: {
        const struct vk_buffer *ba = vk_tensor_buffer(d, a);
        if (!ba || vk_tensor_offset(ba, a) % 16 != 0) return false;
        for (int i = 1; i < 4; i++)
            if (a->nb[i] % 16 != 0) return false;
        return true;
    }
    default: return false;
    }
}

/* Whether the integer-dot kernels take this product (tuning in *t): q4_0 or q8_0 weights, at
 * most MV_MAX_N columns, the device's integer dot products and subgroup shuffles; by default
 * only where 4x8-bit dot products have dedicated instructions, wherever the feature exists with
 * $GGMLC_VK_MVQ_KERNEL=dot (another value of that variable turns them off). */
static bool mvq_dot_choose(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                           struct mvq_dot_tune *t) {
    const char *kernel = getenv("GGMLC_VK_MVQ_KERNEL");
    const uint32_t n = (uint32_t)b->ne[1];
    if (!mvq_dot_weights_ok(d, a) || b->type != GGML_TYPE_F32 || n > MV_MAX_N) return false;
    if (!vk_shader_present(vk_shader_find("mvqd_%s", ggml_type_name(a->type))) || !vk_shader_present(VK_SHADER_QUANTIZE_Q8)) return false;
    if (!d->caps.int_dot || !d->caps.subgroup_shuffle || !(kernel ? strcmp(kernel, "dot") == 0 : d->caps.int_dot_fast)) return false;
    /* measured on an H200 (BENCHMARKS.md): one subgroup of 32 and 2 rows for one column (16.1 / 25.0 us
     * for q4_0 / q8_0 14336x4096, against 17.8-21.1 / 24.1-29.9 for 64-256 threads and 1-4 rows) */
    *t = (struct mvq_dot_tune){n == 1 ? 32 : 128, n >= 4 ? 1 : 2, 0};
    if (t->wg < d->caps.subgroup_size) t->wg = d->caps.subgroup_size;
    struct mvq_dot_tune v = {0};
    const char *env = getenv("GGMLC_VK_MVQD");
    if (env && sscanf(env, "%u,%u,%u", &v.wg, &v.rows, &v.groups) >= 2 && mvq_dot_fits(d, &v, n)) *t = v;
    while (t->wg > 8 && !mvq_dot_fits(d, t, n)) t->wg /= 2;
    return mvq_dot_fits(d, t, n);
}

/* Scratch bytes of b quantized: per column K quant bytes, then per block a (scale, sum) pair. */
static VkDeviceSize mvq_dot_scratch(const struct ggml_tensor *b, VkDeviceSize *scales_at) {
    const VkDeviceSize cols = (VkDeviceSize)(b->ne[1] * b->ne[2] * b->ne[3]), k = (VkDeviceSize)b->ne[0];
    *scales_at = vk_scratch_round(cols * k);
    return *scales_at + cols * (k / 32) * 8;
}

/* f32 activations of a large cooperative-matrix product are packed into f16 in scratch memory first
 * (pack-f16.comp), so that each of the product's M / BM rows of tiles reads half the bytes of b; from
 * 4096 weight rows on, where that paid on an H200 (4096^3: 599 us against 620; 14336 x 512 x 4096: 305
 * against 350; at 2048 and 1024 rows it cost 0.5-0.8 us).  $GGMLC_VK_COOPMAT_PACK=M packs from M rows
 * on instead, =0 never. */
static bool coopmat_packs_b(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const char *env = getenv("GGMLC_VK_COOPMAT_PACK");
    const long min_rows = env ? atol(env) : 4096;
    return b->type == GGML_TYPE_F32 && min_rows > 0 && a->ne[1] >= min_rows && b->ne[0] % 4 == 0 && vk_shader_present(VK_SHADER_PACK_F16) &&
           ggml_nelements(b) / 4 <= UINT32_MAX;
}

static VkDeviceSize packed_b_bytes(const struct ggml_tensor *b) {
    return (VkDeviceSize)ggml_nelements(b) * 2;
}

/* b packed into f16 at scratch offset *at, made earlier in this segment or now (its dispatch's
 * status in *st); false when the reserve's optional part does not hold it (the product then reads b). */
static bool pack_b_f16(struct vk_rec *rec, const struct ggml_tensor *b, VkDeviceSize *at, enum ggml_status *st) {
    *st = GGML_STATUS_SUCCESS;
    if (vk_derived_find(rec, b, VK_SHADER_PACK_F16, at)) return true;
    const VkDeviceSize bytes = vk_scratch_round(packed_b_bytes(b));
    if (bytes > rec->optional_left || !vk_scratch_take(rec, packed_b_bytes(b), at)) return false;
    rec->optional_left -= bytes;
    struct vk_dispatch q;
    vk_dispatch_init(&q, VK_SHADER_PACK_F16);
    q.push[0] = (uint32_t)(b->ne[0] / 4);
    for (int i = 1; i < 4; i++) {
        q.push[i] = (uint32_t)b->ne[i];
        q.push[3 + i] = (uint32_t)(b->nb[i] / 16);
    }
    vk_dispatch_bind(&q, b, false, 16, 7);
    vk_dispatch_bind_scratch(&q, *at, packed_b_bytes(b), true);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(b) / 4, 256, q.groups);
    *st = vk_record_dispatch(rec, &q);
    if (*st == GGML_STATUS_SUCCESS) vk_derived_note(rec, b, VK_SHADER_PACK_F16, *at);
    return true;
}

void vk_node_scratch(const struct vk_device *d, const struct ggml_tensor *node, struct vk_scratch_need *need) {
    struct mvq_dot_tune t;
    VkDeviceSize scales_at;
    uint32_t tiles[7];
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (node->op != GGML_OP_MUL_MAT || !a || !b) return;
    if (mvq_dot_choose(d, a, b, &t)) {
        need->needed += vk_scratch_round(mvq_dot_scratch(b, &scales_at));
        return;
    }
    if (b->ne[1] <= MV_MAX_N && pair_has_mv_kernel(a->type, b->type)) return; /* a mat-vec kernel */
    const bool dequant = coopmat_dequants_a(d, a, b);
    if (!use_coopmat(d, a, b, dequant, tiles)) return;
    if (dequant && dequant_a_bytes(a) > need->transient) need->transient = vk_scratch_round(dequant_a_bytes(a));
    if (coopmat_packs_b(a, b)) need->optional += vk_scratch_round(packed_b_bytes(b)); /* the product reads f32 b without it */
}

/* b into Q8_0 at scratch offset at (quants, then the (scale, sum) pairs at scales_at). */
static enum ggml_status quantize_q8_record(struct vk_rec *rec, const struct ggml_tensor *b, VkDeviceSize at, VkDeviceSize bytes,
                                           VkDeviceSize scales_at) {
    const uint32_t cols = (uint32_t)(b->ne[1] * b->ne[2] * b->ne[3]);
    struct vk_dispatch q;
    vk_dispatch_init(&q, VK_SHADER_QUANTIZE_Q8);
    const uint32_t push[11] = {(uint32_t)b->ne[0], (uint32_t)b->ne[1], cols, (uint32_t)(b->nb[1] / 4), (uint32_t)(b->nb[2] / 4),
                               (uint32_t)(b->nb[3] / 4), (uint32_t)b->ne[2], 0, vectorizable(rec->d, b), 0, (uint32_t)(scales_at / 8)};
    memcpy(q.push, push, sizeof push);
    vk_dispatch_bind(&q, b, false, 4, 7);
    vk_dispatch_bind_scratch(&q, at, bytes, true);
    vk_groups_1d(rec->d, (uint64_t)cols * (uint64_t)b->ne[0] / 4, 128, q.groups);
    enum ggml_status s = vk_record_dispatch(rec, &q);
    if (s == GGML_STATUS_SUCCESS) vk_derived_note(rec, b, VK_SHADER_QUANTIZE_Q8, at);
    return s;
}

/* The product, from b quantized at scratch offset at (by quantize_q8_record). */
static enum ggml_status mvq_dot_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct mvq_dot_tune *t,
                                       VkDeviceSize at, VkDeviceSize bytes, VkDeviceSize scales_at) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("mvqd_%s", ggml_type_name(a->type)));
    const uint32_t spec[3] = {t->wg, t->rows, (uint32_t)b->ne[1]};
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = 3;
    vk_groups_1d(rec->d, (uint64_t)a->ne[1], t->rows, ds.groups);
    if (t->groups && (uint64_t)ds.groups[0] * ds.groups[1] > t->groups) /* the shader strides over the rest */
        vk_groups_1d(rec->d, t->groups, 1, ds.groups);
    ds.groups[2] = (uint32_t)(b->ne[2] * b->ne[3]);
    push_matmul(&ds, node, 2, 4);
    ds.push[16] = 0;                             /* off_b: the quants start the binding (uvec4 units) */
    ds.push[20] = (uint32_t)(scales_at / 8);     /* MM_PUSH_EXTRA off_s, in (scale, sum) pairs */
    vk_dispatch_bind(&ds, a, false, 2, 15);
    vk_dispatch_bind_scratch(&ds, at, bytes, false);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    return vk_record_dispatch(rec, &ds);
}

/* An operand of the coopmat kernel made into contiguous f16 at scratch offset at (a dequantized, b
 * packed): bound in its place, its strides (push words stride_word .. + 2) in 16-byte units, its
 * offset word 0 (the binding starts there). */
static void bind_f16_scratch(struct vk_dispatch *ds, const struct ggml_tensor *t, VkDeviceSize at, int stride_word, int offset_word) {
    ds->push[stride_word] = (uint32_t)(t->ne[0] / 8);
    ds->push[stride_word + 1] = (uint32_t)(t->ne[0] * t->ne[1] / 8);
    ds->push[stride_word + 2] = (uint32_t)(t->ne[0] * t->ne[1] * t->ne[2] / 8);
    ds->push[offset_word] = 0;
    vk_dispatch_bind_scratch(ds, at, (VkDeviceSize)ggml_nelements(t) * 2, false);
}

static enum ggml_status mul_mat_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const bool quant = vk_is_block_quant(a->type);
    const char *ta = ggml_type_name(a->type), *tb = ggml_type_name(b->type);
    const uint32_t batches = (uint32_t)(b->ne[2] * b->ne[3]);
    struct vk_dispatch ds;
    uint32_t tiles[7];
    size_t a_unit = quant ? 2 : ggml_type_size(a->type), b_unit = ggml_type_size(b->type);
    struct mvq_dot_tune dot;
    VkDeviceSize scratch_at, scales_at, scratch_bytes = mvq_dot_scratch(b, &scales_at);
    if (mvq_dot_choose(rec->d, a, b, &dot)) {
        if (vk_derived_find(rec, b, VK_SHADER_QUANTIZE_Q8, &scratch_at)) /* quantized for an earlier product */
            return mvq_dot_record(rec, node, &dot, scratch_at, scratch_bytes, scales_at);
        if (vk_scratch_take(rec, scratch_bytes, &scratch_at)) {
            enum ggml_status s = quantize_q8_record(rec, b, scratch_at, scratch_bytes, scales_at);
            return s == GGML_STATUS_SUCCESS ? mvq_dot_record(rec, node, &dot, scratch_at, scratch_bytes, scales_at) : s;
        }
    }
    bool flex = false, khr = false, nv = false; /* the coopmat kernels, each with another one behind it */
    bool packed = false, dequantized = false;   /* b packed into f16 at packed_at, a dequantized at dequant_at */
    VkDeviceSize packed_at = 0, dequant_at = 0;
    const bool mat_vec = b->ne[1] <= MV_MAX_N && pair_has_mv_kernel(a->type, b->type);
    const bool dequant = !mat_vec && coopmat_dequants_a(rec->d, a, b);
    if (mat_vec) {
        mv_dispatch(rec, &ds, a, b, &a_unit, &b_unit);
    } else if (use_coopmat(rec->d, a, b, dequant, tiles) && (!dequant || vk_scratch_transient(rec, dequant_a_bytes(a), &dequant_at))) {
        a_unit = b_unit = 16; /* both read 16 bytes at a time */
        enum ggml_status s;
        dequantized = dequant && dequant_a_f16(rec, a, &dequant_at, &s);
        if (dequantized && s != GGML_STATUS_SUCCESS) return s;
        packed = coopmat_packs_b(a, b) && pack_b_f16(rec, b, &packed_at, &s);
        if (packed && s != GGML_STATUS_SUCCESS) return s;
        if (packed) tb = "f16";
        uint32_t fk;
        flex = use_coopmat_flex(rec->d, node, tiles, &fk);
        khr = !flex && use_coopmat_khr(rec->d);
        nv = !flex && !khr;
        vk_dispatch_init(&ds, vk_shader_find(flex ? "mm_coopmat_flex_f16_%s" : khr ? "mm_coopmat_khr_f16_%s" : "mm_coopmat_nv_f16_%s", tb));
        const uint32_t *frag = rec->d->caps.coopmat_khr_shape; /* the KHR variant's fragments: M, N, K */
        const uint32_t spec[12] = {tiles[0], tiles[1], tiles[2], tiles[3], tiles[4], tiles[5], /* the ids a variant lacks are ignored */
                                   flex ? fk : 16, frag[2], tiles[6], frag[0], frag[1], frag[2]};
        memcpy(ds.spec, spec, sizeof spec);
        ds.n_spec = 12;
        ds.groups[0] = (uint32_t)((a->ne[1] + tiles[1] - 1) / tiles[1]);
        ds.groups[1] = (uint32_t)((b->ne[1] + tiles[2] - 1) / tiles[2]);
    } else {
        const struct mm_tiles t = mm_tiles_for(rec->d);
        vk_dispatch_init(&ds, vk_shader_find("mm_%s_%s", ta, tb));
        const uint32_t spec[6] = {t.wg, t.bm, t.bn, t.bk, t.tm, t.tn};
        memcpy(ds.spec, spec, sizeof spec);
        ds.n_spec = 6;
        ds.groups[0] = (uint32_t)((a->ne[1] + t.bm - 1) / t.bm);
        ds.groups[1] = (uint32_t)((b->ne[1] + t.bn - 1) / t.bn);
    }
    ds.groups[2] = batches;
    push_matmul(&ds, node, a_unit, b_unit);
    if (dequantized) bind_f16_scratch(&ds, a, dequant_at, 3, 15);
    else vk_dispatch_bind(&ds, a, false, (uint32_t)a_unit, 15);
    if (packed) bind_f16_scratch(&ds, b, packed_at, 6, 16);
    else vk_dispatch_bind(&ds, b, false, (uint32_t)b_unit, 16);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    ds.has_fallback = flex || khr || nv;
    enum ggml_status s = vk_record_dispatch(rec, &ds);
    if (s != GGML_STATUS_SUCCESS && ds.has_fallback && rec->pipeline_failed) { /* again, with the next kernel */
        struct vk_device *d = rec->d;
        const bool nv_next = khr && d->caps.coopmat_nv && !d->coopmat_nv_failed;
        ggmlc_log(GGML_LOG_LEVEL_WARN, "%s; the products take %s instead\n", ggmlc_last_error(),
                  flex ? "cooperative-matrix fragments" : nv_next ? "the NV cooperative matrices" : "the tiled kernel");
        if (flex) d->coopmat_flex_failed = true;
        else if (khr) d->coopmat_khr_failed = true;
        else d->coopmat_nv_failed = true;
        rec->pipeline_failed = false;
        return mul_mat_record(rec, node);
    }
    return s;
}

/* ------------------------------------------------------------ out_prod */

/* d[i0, i1] = sum_k a[i0, k] * b[i1, k] (per batch, a broadcast): the tiled GEMM with
 * k running along dimension 1 of both operands.  A block-format a has its
 * blocks along i0 (f32 or f16 b): mm.comp's ALONG_M variants, strides in 16-bit words. */
static bool out_prod_types_ok(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (vk_is_block_quant(a->type)) {
        if ((b->type != GGML_TYPE_F32 && b->type != GGML_TYPE_F16) || !d->caps.storage16 || a->ne[0] % ggml_blck_size(a->type) != 0 ||
            a->nb[0] != ggml_type_size(a->type))
            return false;
        for (int i = 1; i < 4; i++)
            if (a->nb[i] % 2 != 0 || a->nb[i] / 2 > UINT32_MAX) return false;
        return true;
    }
    const bool pair = pair_has_kernel(a->type, b->type);
    return pair && vk_type_ok(d, a->type) && vk_type_ok(d, b->type) && vk_shape_fits(a);
}

static bool out_prod_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!out_prod_types_ok(d, a, b)) return false;
    if (node->type != GGML_TYPE_F32 || node->nb[0] != 4 || !vk_shape_fits(b) || !vk_shape_fits(node)) return false;
    if (a->ne[1] != b->ne[1] || a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] || b->ne[3] % a->ne[3]) return false;
    const struct mm_tiles t = mm_tiles_for(d);
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    return (uint64_t)b->ne[2] * b->ne[3] <= max[2] && (uint64_t)(a->ne[0] + t.bm - 1) / t.bm <= max[0] &&
           (uint64_t)(b->ne[0] + t.bn - 1) / t.bn <= max[1];
}

static enum ggml_status out_prod_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const bool quant = vk_is_block_quant(a->type);
    const size_t ta = quant ? 2 : ggml_type_size(a->type), tb = ggml_type_size(b->type);
    const struct mm_tiles t = mm_tiles_for(rec->d);
    struct vk_dispatch ds;
    if (quant)
        vk_dispatch_init(&ds, vk_shader_find("mm_along_m_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
    else
        vk_dispatch_init(&ds, vk_shader_find("mm_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
    const uint32_t spec[6] = {t.wg, t.bm, t.bn, t.bk, t.tm, t.tn};
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = 6;
    const uint32_t push[18] = {
        (uint32_t)a->ne[0], (uint32_t)b->ne[0], (uint32_t)a->ne[1],
        (uint32_t)(a->nb[0] / ta), (uint32_t)(a->nb[2] / ta), (uint32_t)(a->nb[3] / ta),
        (uint32_t)(b->nb[0] / tb), (uint32_t)(b->nb[2] / tb), (uint32_t)(b->nb[3] / tb),
        (uint32_t)(node->nb[1] / 4), (uint32_t)(node->nb[2] / 4), (uint32_t)(node->nb[3] / 4),
        (uint32_t)b->ne[2], (uint32_t)(b->ne[2] / a->ne[2]), (uint32_t)(b->ne[3] / a->ne[3]), 0, 0, 0,
    };
    memcpy(ds.push, push, sizeof push);
    ds.push[18] = (uint32_t)(a->nb[1] / ta);
    ds.push[19] = (uint32_t)(b->nb[1] / tb);
    vk_dispatch_bind(&ds, a, false, (uint32_t)ta, 15);
    vk_dispatch_bind(&ds, b, false, (uint32_t)tb, 16);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    ds.groups[0] = (uint32_t)((a->ne[0] + t.bm - 1) / t.bm);
    ds.groups[1] = (uint32_t)((b->ne[0] + t.bn - 1) / t.bn);
    ds.groups[2] = (uint32_t)(b->ne[2] * b->ne[3]);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_matmul_register(struct vk_op_kernel *t) {
    t[GGML_OP_OUT_PROD] = (struct vk_op_kernel){out_prod_supports, out_prod_record};
    t[GGML_OP_MUL_MAT] = (struct vk_op_kernel){mul_mat_supports, mul_mat_record};
}
