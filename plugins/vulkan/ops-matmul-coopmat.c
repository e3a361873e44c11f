/*
 * ops-matmul-coopmat.c - the tensor-core GEMM (mm-coopmat-nv.comp): f16 weights (or block-format
 * ones dequantized into f16 first, or, those of prompt-sized Q8_0 and Q4_0 products, read as blocks
 * by the kernel itself) times f16 or f32 activations (packed into f16 first for large
 * products) on cooperative matrices, with f32 accumulators.  Three variants, each with the next
 * behind it should its pipeline fail: FLEX (VK_NV_cooperative_matrix2's flexible sizes, whole tiles),
 * KHR fragments (VK_KHR_cooperative_matrix), NV fragments (VK_NV_cooperative_matrix); then the
 * tiled GEMM (ops-matmul.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops-matmul.h"

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

static uint32_t coopmat_splits(const struct ggml_tensor *a, const struct ggml_tensor *b, const uint32_t tiles[7]);
static uint32_t coopmat_k_split(const struct ggml_tensor *a, const uint32_t tiles[7], uint32_t s);

/* The 64x64 tiles (mid) into t, with k slices of 128 rather than 64 where the grid is at most
 * COOPMAT_DEEP_MAX workgroups (one wave on an H200's 132 SMs) and the product is not split along k
 * anyway: such workgroups walk their slices one after the other, each costing about a memory
 * latency, so half as many slices paid on an H200 (session 19, 512 columns, GPU us per product):
 * q8_0 read as blocks 768 x 768 14.4 against 16.5, 279 x 768 16.5 against 18.8; q8_0 dequantized
 * 768 x 2048 29.3 against 31.1 (both dispatches); but 2048 x 768 (256 workgroups) 28.4 against 23.2,
 * and 256 x 768 14.2 unsplit against 12.9 split in 3. */
#define COOPMAT_DEEP_MAX 128
static void mid_tiles(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, const uint32_t mid[7],
                      uint32_t t[7]) {
    const uint64_t groups = (uint64_t)((a->ne[1] + mid[1] - 1) / mid[1]) * (uint64_t)((b->ne[1] + mid[2] - 1) / mid[2]) *
                            (uint64_t)(b->ne[2] * b->ne[3]);
    uint32_t deep[7];
    memcpy(deep, mid, sizeof deep);
    deep[3] = 128;
    const bool use_deep = groups <= COOPMAT_DEEP_MAX && coopmat_splits(a, b, mid) == 1 && coopmat_tiles_fit(d, deep);
    memcpy(t, use_deep ? deep : mid, sizeof deep);
}

/* The defaults, the fastest of those tried on an H200 (BENCHMARKS.md): eight 64x64 subgroup tiles
 * in 256x128 tiles, k slices of 32, for products of at least COOPMAT_BIG_TILES such tiles (4096^3:
 * 242 / 221 TFLOPS against 233 / 201, f16 / f32 activations); below that, for more workgroups,
 * eight 64x32 ones in 128x128 tiles, k slices of 64 (32 where shared memory is short: lavapipe's
 * 32 KB); and products of fewer than COOPMAT_MID_BELOW such tiles (a prompt of 512 tokens through
 * weights of 256 ... 2048 rows: 8 ... 64 of them, half the H200's 132 SMs at most) four 32x32 ones
 * in 64x64 tiles, four times as many workgroups, which then need no split along k (but the smallest),
 * k slices of 64 or 128 (mid_tiles).
 * On an H200 (session 19, 512 columns, GPU us per product): f16 768 x 768 11.5 against 15.7 (split
 * in 3), 2048 x 768 17.0 against 20.5; q8_0 read as blocks 279 x 768 18.0 against 32.9, 2048 x 768
 * 23.2 against 30.5; dequantized 2048 x 2048 36.5 against 47.1; but 4096 x 4096 (128 such tiles)
 * 115 against 78.  $GGMLC_VK_COOPMAT_MID=T takes the 64x64 tiles below T 128x128 tiles instead (0:
 * never); $GGMLC_VK_COOPMAT_TILE="WG,BM,BN,BK,WM,WN[,STAGES]" tries other tiles for every product
 * (ignored, with a warning, unless they fit); two stages (double-buffered slices) were slower on the
 * H200. */
#define COOPMAT_BIG_TILES 256
#define COOPMAT_MID_BELOW 96
static void coopmat_tiles(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, uint32_t t[7]) {
    const uint32_t sg = d->caps.subgroup_size, big[7] = {8 * sg, 256, 128, 32, 64, 64, 1}, small[7] = {8 * sg, 128, 128, 64, 64, 32, 1},
                   mid[7] = {4 * sg, 64, 64, 64, 32, 32, 1};
    const uint64_t batches = (uint64_t)(b->ne[2] * b->ne[3]);
    const uint64_t big_tiles = (uint64_t)((a->ne[1] + 255) / 256) * (uint64_t)((b->ne[1] + 127) / 128) * batches;
    const uint64_t small_tiles = (uint64_t)((a->ne[1] + 127) / 128) * (uint64_t)((b->ne[1] + 127) / 128) * batches;
    const struct vk_env_value *mid_env = &vk_tuning()->coopmat_mid;
    const uint64_t mid_below = mid_env->set ? (uint64_t)(mid_env->number > 0 ? mid_env->number : 0) : COOPMAT_MID_BELOW;
    if (big_tiles >= COOPMAT_BIG_TILES && coopmat_tiles_fit(d, big))
        memcpy(t, big, sizeof big);
    else if (small_tiles < mid_below && coopmat_tiles_fit(d, mid))
        mid_tiles(d, a, b, mid, t);
    else
        memcpy(t, small, sizeof small);
    if (!coopmat_tiles_fit(d, t)) t[3] = 32;
    const struct vk_env_value *env = &vk_tuning()->coopmat_tile;
    uint32_t v[7] = {0, 0, 0, 0, 0, 0, 1};
    if (!env->set) return;
    memcpy(v, env->v, (size_t)(env->n >= 7 ? 7 : 6) * sizeof v[0]);
    if (env->n >= 6 && coopmat_tiles_fit(d, v)) {
        memcpy(t, v, sizeof v);
        return;
    }
    static atomic_bool told; /* a sweep must not time the default unawares (session 4's did) */
    if (!atomic_exchange(&told, true))
        ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan %s: GGMLC_VK_COOPMAT_TILE=%s ignored: it does not fit (WG = (BM/WM)(BN/WN) %u, "
                                       "%u bytes of shared memory at most); the default tiles are used\n",
                  d->name, env->text, d->caps.subgroup_size, d->props.limits.maxComputeSharedMemorySize);
}

/* The fragments through VK_KHR_cooperative_matrix rather than the NV extension (16x16x16 ones, or the
 * device's 8x8x8 or mixed shape, coopmat_khr_shape) wherever the device has such a shape: on an H200,
 * 232 / 198 TFLOPS against 200 / 166 with the NV instructions, same kernel, f16 / f32 activations
 * (BENCHMARKS.md).  $GGMLC_VK_COOPMAT_KHR=0 takes the NV ones. */
static bool use_coopmat_khr(const struct vk_device *d) {
    const bool khr_off = d->caps.coopmat_nv && vk_tuning()->coopmat_khr_off;
    return d->caps.coopmat_khr_frag && !vk_path_disabled(d, VK_PATH_COOPMAT_KHR) && !khr_off &&
           vk_shader_present(vk_shader_find("mm_coopmat_khr_f16_f32"));
}

/* How the kernel reads the weights: f16 ones 16 bytes at a time; block-format ones dequantized into
 * f16 scratch first (read like f16 ones), or the blocks themselves in 16-bit words. */
enum coopmat_a { COOPMAT_A_F16, COOPMAT_A_DEQUANT, COOPMAT_A_BLOCKS };

/* Whether a's strides and offset are whole units of `unit` bytes */
static bool strides_in_units(const struct vk_buffer *ba, const struct ggml_tensor *a, size_t unit) {
    return a->nb[1] % unit == 0 && a->nb[2] % unit == 0 && a->nb[3] % unit == 0 && vk_tensor_offset(ba, a) % unit == 0;
}

/* The tensor-core path (its tiles into `tiles`): f16 weights (or block-format ones read as `how`
 * says), f32 or f16 activations read 16 bytes at a time, and a grid of tiles within the device's
 * limits (otherwise the tiled GEMM, which supports_op checked). */
static bool use_coopmat(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, enum coopmat_a how,
                        uint32_t tiles[7]) {
    coopmat_tiles(d, a, b, tiles);
    const bool nv = d->caps.coopmat_nv && !vk_path_disabled(d, VK_PATH_COOPMAT_NV);
    if (!d->use_coopmat || !coopmat_tiles_fit(d, tiles) || !(nv || use_coopmat_khr(d)) ||
        (a->type != GGML_TYPE_F16 && how == COOPMAT_A_F16) || (b->type != GGML_TYPE_F32 && b->type != GGML_TYPE_F16))
        return false;
    const struct vk_buffer *ba = vk_tensor_buffer(d, a), *bb = vk_tensor_buffer(d, b);
    if (!ba || !bb || a->ne[0] % 8 != 0 || d->props.limits.minStorageBufferOffsetAlignment > 16) return false;
    if ((how == COOPMAT_A_F16 && !strides_in_units(ba, a, 16)) || (how == COOPMAT_A_BLOCKS && !strides_in_units(ba, a, 2)))
        return false;
    for (int i = 1; i < 4; i++)
        if (b->nb[i] % 16 != 0) return false;
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    if ((uint64_t)(a->ne[1] + tiles[1] - 1) / tiles[1] > max[0] || (uint64_t)(b->ne[1] + tiles[2] - 1) / tiles[2] > max[1]) return false;
    return vk_tensor_offset(bb, b) % 16 == 0;
}

/* Whether block-format weights go to the cooperative-matrix kernel rather than the tiled GEMM, which
 * reads the blocks itself but is 5-8 times slower at every size: for products with more columns
 * than the matrix-vector kernels take; $GGMLC_VK_COOPMAT_DEQUANT=N from N columns on instead, =0
 * never. */
static bool coopmat_takes_blocks(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const struct vk_env_value *env = &vk_tuning()->coopmat_dequant;
    const long long min_cols = env->set ? env->number : MV_MAX_N + 1;
    return vk_is_block_quant(a->type) && min_cols > 0 && b->ne[1] >= min_cols && a->ne[0] % 8 == 0;
}

/* The k that each workgroup of a product walks: all of it, or a layer's part where the product is
 * split along k. */
static uint64_t coopmat_walk_k(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    uint32_t tiles[7];
    coopmat_tiles(d, a, b, tiles);
    const uint32_t splits = coopmat_splits(a, b, tiles);
    return splits > 1 ? coopmat_k_split(a, tiles, splits) : (uint64_t)a->ne[0];
}

/* Q8_0 and Q4_0 weights whose workgroups walk at most COOPMAT_BLOCKS_MAX_K values of k (rows that
 * short, or a split product's layers), COOPMAT_BLOCKS_MAX values in all (a prompt-sized product's),
 * are read by the kernel itself (mm_coopmat_*_q8_0_*: each workgroup decodes its tiles of blocks into
 * shared memory), with neither the dequantization's dispatch (4-6 us on an H200, mostly the
 * dispatch's floor) nor its f16 copy of the weights.  On an H200 (session 19, 512 columns, q8_0 /
 * q4_0, GPU us per product with the dequantization): 256 x 768 12.9 / 12.7 against 15.7 / 15.1, 279 x
 * 768 18.0 against 18.2, 768 x 768 and 2048 x 768 even; but longer walks, each slice slower by its
 * decoding, lost: 768 x 2048 40.8 / 38.1 against 31.1 / 31.0, 2048 x 2048 53.3 against 44.4, and at
 * 4096 x 4096 (session 17) 153 against 117.  A split product's layers are short: at 64 columns
 * (session 21) q8_0 768 x 2048, in 16 layers of 128 values of k, took 12.4 us read as blocks (the
 * sum included) against 15.9 dequantized first (4.8 + 7.1 + the sum's 4.0).
 * $GGMLC_VK_COOPMAT_BLOCKS=1 reads Q8_0 and Q4_0 blocks at every size,
 * =2 Q4_1, Q5_0, Q4_K and Q6_K ones too (decoded value by value as they are fetched, quant.glsl's dq:
 * q4_K 466 us against 193, q6_K 321 against 138 at 4096 x 4096), =0 never.  Where the pipeline
 * fails, the weights are dequantized first (coopmat_dequants_a). */
#define COOPMAT_BLOCKS_MAX_K 1024
#define COOPMAT_BLOCKS_MAX (2048ull * 1024ull)
static bool coopmat_reads_blocks(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const struct vk_env_value *env = &vk_tuning()->coopmat_blocks;
    const bool q8_0_or_q4_0 = a->type == GGML_TYPE_Q8_0 || a->type == GGML_TYPE_Q4_0;
    const char *type = ggml_type_name(a->type);
    if (env->set ? env->number < 1 || (env->number == 1 && !q8_0_or_q4_0)
                 : !q8_0_or_q4_0 || (uint64_t)a->ne[0] * (uint64_t)a->ne[1] > COOPMAT_BLOCKS_MAX ||
                       coopmat_walk_k(d, a, b) > COOPMAT_BLOCKS_MAX_K)
        return false;
    return coopmat_takes_blocks(a, b) && !vk_path_disabled(d, VK_PATH_COOPMAT_BLOCKS) &&
           (vk_shader_present(vk_shader_find("mm_coopmat_khr_%s_f32", type)) ||
            vk_shader_present(vk_shader_find("mm_coopmat_nv_%s_f32", type)));
}

/* Other block-format weights of such products are dequantized into f16 in the segment's transient
 * scratch first (vk_dequant_f16_record): on an H200, 4096 x N x 4096 took 100-150 us that way for
 * N = 9 ... 64 (q4_0, q8_0, q4_K, q6_K) against 690-840 us tiled (BENCHMARKS.md, session 7). */
static bool coopmat_dequants_a(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return coopmat_takes_blocks(a, b) && !vk_path_disabled(d, VK_PATH_DEQUANT_F16) &&
           vk_f16_bytes(a) <= VK_SCRATCH_TRANSIENT_MAX &&
           vk_f16_bytes(a) <= d->props.limits.maxStorageBufferRange &&
           ggml_nelements(a) <= UINT32_MAX &&
           vk_shader_present(vk_shader_find("dequant_%s_f16", ggml_type_name(a->type)));
}

static enum coopmat_a coopmat_a_read(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (coopmat_reads_blocks(d, a, b)) return COOPMAT_A_BLOCKS;
    return coopmat_dequants_a(d, a, b) ? COOPMAT_A_DEQUANT : COOPMAT_A_F16;
}

/* The coopmat kernel's FLEX variant (one WM x WN accumulator per subgroup, products of k = FK):
 * where the device has flexible sizes of the right granularity, whole tiles, 16-byte aligned d and
 * no failure so far.  FK is 16; $GGMLC_VK_COOPMAT_FLEX=FK tries another, =0 turns the variant off. */
static bool use_coopmat_flex(const struct vk_device *d, const struct ggml_tensor *node, const char *a_type, const uint32_t tiles[7],
                             uint32_t *fk) {
    const struct vk_caps *c = &d->caps;
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const struct vk_buffer *bd = vk_tensor_buffer(d, node);
    const struct vk_env_value *env = &vk_tuning()->coopmat_flex;
    *fk = env->set ? (uint32_t)env->number : 16;
    if (!c->coopmat_flex || vk_path_disabled(d, VK_PATH_COOPMAT_FLEX) || !*fk || !bd ||
        !vk_shader_present(vk_shader_find("mm_coopmat_flex_%s_%s", a_type, ggml_type_name(b->type))))
        return false;
    if (tiles[4] % c->coopmat_flex_gran[0] || tiles[5] % c->coopmat_flex_gran[1] || *fk % c->coopmat_flex_gran[2] || tiles[3] % *fk ||
        tiles[4] > c->coopmat_flex_max_dim || tiles[5] > c->coopmat_flex_max_dim || *fk > c->coopmat_flex_max_dim)
        return false;
    if (a->ne[1] % tiles[1] || b->ne[1] % tiles[2] || node->nb[1] % 16 || vk_tensor_offset(bd, node) % 16) return false;
    for (int i = 2; i < 4; i++)
        if (node->nb[i] % 16) return false;
    return true;
}

/* f32 activations of a large cooperative-matrix product are packed into f16 in scratch memory first
 * (pack-f16.comp), so that each of the product's M / BM rows of tiles reads half the bytes of b; from
 * 4096 weight rows on, where that paid on an H200 (4096^3: 599 us against 620; 14336 x 512 x 4096: 305
 * against 350; at 2048 and 1024 rows it cost 0.5-0.8 us).  $GGMLC_VK_COOPMAT_PACK=M packs from M rows
 * on instead, =0 never. */
static bool coopmat_packs_b(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const struct vk_env_value *env = &vk_tuning()->coopmat_pack;
    const long long min_rows = env->set ? env->number : 4096;
    return b->type == GGML_TYPE_F32 && min_rows > 0 && a->ne[1] >= min_rows && b->ne[0] % 4 == 0 && vk_shader_present(VK_SHADER_PACK_F16) &&
           ggml_nelements(b) / 4 <= UINT32_MAX;
}

/* b packed into f16 at scratch offset *at, made earlier in this segment or now (its dispatch's
 * status in *st); false when the reserve's optional part does not hold it or pack-f16.comp's pipeline
 * failed (the product then reads b). */
static bool pack_b_f16(struct vk_rec *rec, const struct ggml_tensor *b, VkDeviceSize *at, enum ggml_status *st) {
    *st = GGML_STATUS_SUCCESS;
    if (vk_derived_find(rec, b, VK_SHADER_PACK_F16, at)) return true;
    if (!vk_optional_pipeline(rec->d, VK_SHADER_PACK_F16, NULL, 0, VK_PATH_PACK_F16,
                              "the products read f32 activations"))
        return false;
    const VkDeviceSize bytes = vk_scratch_round(vk_f16_bytes(b));
    if (bytes > rec->optional_left || !vk_scratch_take(rec, vk_f16_bytes(b), at)) return false;
    rec->optional_left -= bytes;
    struct vk_dispatch q;
    vk_dispatch_init(&q, VK_SHADER_PACK_F16);
    const struct vk_pc_pack_f16 pc = {
        .ne0 = (uint32_t)(b->ne[0] / 4),
        .ne1 = (uint32_t)b->ne[1],
        .ne2 = (uint32_t)b->ne[2],
        .ne3 = (uint32_t)b->ne[3],
        .nb1 = (uint32_t)(b->nb[1] / 16),
        .nb2 = (uint32_t)(b->nb[2] / 16),
        .nb3 = (uint32_t)(b->nb[3] / 16),
    };
    vk_dispatch_push(&q, pc);
    vk_dispatch_bind(&q, b, false, 16, VK_PUSH_WORD(vk_pc_pack_f16, off_b));
    vk_dispatch_bind_scratch(&q, *at, vk_f16_bytes(b), true);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(b) / 4, 256, q.groups);
    *st = vk_record_dispatch(rec, &q);
    if (*st == GGML_STATUS_SUCCESS) vk_derived_note(rec, b, VK_SHADER_PACK_F16, *at);
    return true;
}

/* An operand of the coopmat kernel made into contiguous f16 at scratch offset at (a dequantized, b
 * packed): bound in its place; its strides (stored into *nb1, *nb2, *nb3) in 16-byte units, its
 * offset (*off) 0: the binding starts there. */
static void bind_f16_scratch(struct vk_dispatch *ds, const struct ggml_tensor *t, VkDeviceSize at,
                             uint32_t *nb1, uint32_t *nb2, uint32_t *nb3, uint32_t *off) {
    *nb1 = (uint32_t)(t->ne[0] / 8);
    *nb2 = (uint32_t)(t->ne[0] * t->ne[1] / 8);
    *nb3 = (uint32_t)(t->ne[0] * t->ne[1] * t->ne[2] / 8);
    *off = 0;
    vk_dispatch_bind_scratch(ds, at, vk_f16_bytes(t), false);
}

/* Products of fewer than COOPMAT_SPLIT_BELOW tiles leave most of the GPU idle, each workgroup
 * walking all of k: unbatched ones are split along k into layers of workgroups (at least
 * COOPMAT_SPLIT_MIN_SLICES slices each, about 256 workgroups in all) whose partial results
 * mm-split-sum.comp adds up, in the transient scratch after the dequantized weights.  On an H200
 * (BENCHMARKS.md, session 7), f16 4096 x N x 4096 for N = 9 ... 128 (32 tiles, 8 layers) took 38-45
 * us against 78-82 unsplit, and 4096 x 16 x 14336 85 against 239; 14336 x 16 x 4096 (112 tiles, 3
 * layers) lost, 97 against 80.  A workgroup pays about a memory latency per slice it walks (1.2-2 us
 * on an H200 at 64 columns), so layers of 2 slices rather than 4 (session 21, 64 columns, GPU us
 * with the sum's 4: q8_0 768 x 768 in 6 layers 10.7 against 12.7 in 3, 2048 x 768 11.8 against 13.0,
 * f16 768 x 768 9.5 against 10.8; 256 x 768 at 512 columns 11.8 against 13.1).
 * The number of layers (1: none); $GGMLC_VK_COOPMAT_SPLIT=S takes S instead where it can (1 or 0:
 * never split). */
#define COOPMAT_SPLIT_BELOW 64
#define COOPMAT_SPLIT_MIN_SLICES 2
static uint32_t coopmat_splits(const struct ggml_tensor *a, const struct ggml_tensor *b, const uint32_t tiles[7]) {
    const uint64_t n_tiles = (uint64_t)((a->ne[1] + tiles[1] - 1) / tiles[1]) * (uint64_t)((b->ne[1] + tiles[2] - 1) / tiles[2]);
    const uint64_t most = (uint64_t)a->ne[0] / ((uint64_t)COOPMAT_SPLIT_MIN_SLICES * tiles[3]);
    if (b->ne[2] * b->ne[3] != 1 || a->ne[1] % 4 || most < 2 || !vk_shader_present(VK_SHADER_MM_SPLIT_SUM)) return 1;
    const struct vk_env_value *env = &vk_tuning()->coopmat_split;
    uint64_t s = env->set ? (uint64_t)env->number : n_tiles < COOPMAT_SPLIT_BELOW ? (256 + n_tiles - 1) / n_tiles : 1;
    if (s > most) s = most;
    return s > 1 ? (uint32_t)s : 1;
}

/* k per layer of a product split into s (a whole number of slices of BK) */
static uint32_t coopmat_k_split(const struct ggml_tensor *a, const uint32_t tiles[7], uint32_t s) {
    const uint64_t slices = ((uint64_t)a->ne[0] + tiles[3] - 1) / tiles[3];
    return (uint32_t)((slices + s - 1) / s * tiles[3]);
}

/* The transient scratch bytes of a product: its weights dequantized, then its partial results (from
 * *partials_at on). */
static VkDeviceSize coopmat_transient(const struct ggml_tensor *a, const struct ggml_tensor *b, bool dequant, uint32_t splits,
                                      VkDeviceSize *partials_at) {
    *partials_at = dequant ? vk_scratch_round(vk_f16_bytes(a)) : 0;
    const VkDeviceSize partials = splits > 1 ? (VkDeviceSize)splits * (VkDeviceSize)a->ne[1] * (VkDeviceSize)b->ne[1] * 4 : 0;
    return *partials_at + vk_scratch_round(partials);
}

bool vk_coopmat_takes(const struct vk_device *d, const struct ggml_tensor *a,
                      const struct ggml_tensor *b) {
    uint32_t tiles[7];
    return use_coopmat(d, a, b, coopmat_a_read(d, a, b), tiles);
}

void vk_coopmat_scratch(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                        struct vk_scratch_need *need) {
    uint32_t tiles[7];
    VkDeviceSize partials_at;
    const enum coopmat_a how = coopmat_a_read(d, a, b);
    const bool dequant = how == COOPMAT_A_DEQUANT;
    if (!use_coopmat(d, a, b, how, tiles)) return;
    VkDeviceSize transient = coopmat_transient(a, b, dequant, coopmat_splits(a, b, tiles), &partials_at);
    if (transient > VK_SCRATCH_TRANSIENT_MAX) transient = partials_at; /* the weights alone: the product then runs unsplit */
    if (transient > need->transient) need->transient = transient;
    if (coopmat_packs_b(a, b)) need->optional += vk_scratch_round(vk_f16_bytes(b)); /* the product reads f32 b without it */
}

void vk_split_bind_partials(struct vk_dispatch *ds, struct vk_pc_mm *pc,
                            const struct ggml_tensor *node, VkDeviceSize at, uint32_t splits,
                            uint32_t k_split) {
    const VkDeviceSize mn = (VkDeviceSize)node->ne[0] * (VkDeviceSize)node->ne[1];
    pc->nb1 = (uint32_t)node->ne[0];
    pc->nb3 = (uint32_t)mn; /* from one layer's partial to the next */
    pc->off_d = 0;          /* the binding starts there */
    pc->k_split = k_split;
    vk_dispatch_bind_scratch(ds, at, (VkDeviceSize)splits * mn * 4, true);
}

enum ggml_status vk_split_sum_record_mn(struct vk_rec *rec, const struct ggml_tensor *node,
                                        VkDeviceSize at, uint32_t splits, uint32_t m, uint32_t n,
                                        uint32_t nb1) {
    const uint64_t mn = (uint64_t)m * n;
    struct vk_dispatch s;
    vk_dispatch_init(&s, VK_SHADER_MM_SPLIT_SUM);
    const struct vk_pc_split_sum pc = {.M = m, .N = n, .splits = splits, .nb1 = nb1};
    vk_dispatch_push(&s, pc);
    vk_dispatch_bind_scratch(&s, at, (VkDeviceSize)splits * mn * 4, false);
    vk_dispatch_bind(&s, node, true, 4, VK_PUSH_WORD(vk_pc_split_sum, off_d));
    vk_groups_1d(rec->d, mn, 256, s.groups);
    return vk_record_dispatch(rec, &s);
}

enum ggml_status vk_split_sum_record(struct vk_rec *rec, const struct ggml_tensor *node,
                                     VkDeviceSize at, uint32_t splits) {
    return vk_split_sum_record_mn(rec, node, at, splits, (uint32_t)node->ne[0], (uint32_t)node->ne[1],
                                  (uint32_t)(node->nb[1] / 4));
}

/* The variant a failed pipeline leaves the products to, for its warning */
static const char *next_kernel(const struct vk_device *d, bool blocks, bool flex, bool khr) {
    if (blocks) return "weights dequantized into f16 first";
    if (flex) return "cooperative-matrix fragments";
    return khr && d->caps.coopmat_nv && !vk_path_disabled(d, VK_PATH_COOPMAT_NV)
               ? "the NV cooperative matrices"
               : "the tiled kernel";
}

/* One try at recording node on the variant the device has now; false with *retry set when that
 * variant's pipeline failed (it is set aside: try again), false alone when the kernel does not
 * take the product. */
static bool coopmat_try(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st, bool *retry) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct vk_device *d = rec->d;
    uint32_t tiles[7], fk;
    VkDeviceSize transient_at = 0, packed_at = 0, partials_at = 0; /* the dequantized a starts the transient region */
    const enum coopmat_a how = coopmat_a_read(d, a, b);
    const bool dequant = how == COOPMAT_A_DEQUANT, blocks = how == COOPMAT_A_BLOCKS;
    *retry = false;
    if (!use_coopmat(d, a, b, how, tiles) || (dequant && !vk_scratch_transient(rec, vk_f16_bytes(a), &transient_at))) return false;
    if (dequant &&
        !vk_optional_pipeline(d, vk_shader_find("dequant_%s_f16", ggml_type_name(a->type)), NULL, 0,
                              VK_PATH_DEQUANT_F16, "block-format weights take the tiled GEMM"))
        return false;
    uint32_t splits = coopmat_splits(a, b, tiles);
    if (splits > 1 &&
        (!vk_scratch_transient(rec, coopmat_transient(a, b, dequant, splits, &partials_at),
                               &transient_at) ||
         !vk_optional_pipeline(d, VK_SHADER_MM_SPLIT_SUM, NULL, 0, VK_PATH_COOPMAT_SPLIT,
                               "the products run unsplit")))
        splits = 1; /* no room for the partial results, or no kernel to add them: unsplit */
    *st = GGML_STATUS_SUCCESS;
    if (dequant && (*st = vk_dequant_f16_record(rec, a, transient_at)) != GGML_STATUS_SUCCESS) return true;
    const bool packed = coopmat_packs_b(a, b) && pack_b_f16(rec, b, &packed_at, st);
    if (*st != GGML_STATUS_SUCCESS) return true;
    const char *a_type = blocks ? ggml_type_name(a->type) : "f16";
    const bool flex = use_coopmat_flex(d, node, a_type, tiles, &fk), khr = !flex && use_coopmat_khr(d);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find(flex ? "mm_coopmat_flex_%s_%s" : khr ? "mm_coopmat_khr_%s_%s" : "mm_coopmat_nv_%s_%s", a_type,
                                         packed ? "f16" : ggml_type_name(b->type)));
    const uint32_t *frag = d->caps.coopmat_khr_shape; /* the KHR variant's fragments: M, N, K */
    const uint32_t spec[12] = {tiles[0], tiles[1], tiles[2], tiles[3], tiles[4], tiles[5], /* the ids a variant lacks are ignored */
                               flex ? fk : 16, frag[2], tiles[6], frag[0], frag[1], frag[2]};
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = 12;
    ds.groups[0] = (uint32_t)((a->ne[1] + tiles[1] - 1) / tiles[1]);
    ds.groups[1] = (uint32_t)((b->ne[1] + tiles[2] - 1) / tiles[2]);
    ds.groups[2] = splits > 1 ? splits : (uint32_t)(b->ne[2] * b->ne[3]);
    struct vk_pc_mm pc = vk_pc_matmul(node, blocks ? 2 : 16, 16); /* 16 bytes at a time; blocks in 16-bit words */
    if (dequant)
        bind_f16_scratch(&ds, a, transient_at, &pc.nb01, &pc.nb02, &pc.nb03, &pc.off_a);
    else
        vk_dispatch_bind(&ds, a, false, blocks ? 2 : 16, VK_PUSH_WORD(vk_pc_mm, off_a));
    if (packed)
        bind_f16_scratch(&ds, b, packed_at, &pc.nb11, &pc.nb12, &pc.nb13, &pc.off_b);
    else
        vk_dispatch_bind(&ds, b, false, 16, VK_PUSH_WORD(vk_pc_mm, off_b));
    if (splits > 1)
        vk_split_bind_partials(&ds, &pc, node, transient_at + partials_at, splits,
                               coopmat_k_split(a, tiles, splits));
    else
        vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm, off_d));
    vk_dispatch_push(&ds, pc);
    ds.has_fallback = true; /* another variant, or the tiled GEMM */
    *st = vk_record_dispatch(rec, &ds);
    if (*st == GGML_STATUS_SUCCESS && splits > 1)
        *st = vk_split_sum_record(rec, node, transient_at + partials_at, splits);
    if (*st == GGML_STATUS_SUCCESS || !rec->pipeline_failed) return true;
    ggmlc_log(GGML_LOG_LEVEL_WARN, "%s; the products take %s instead\n", ggmlc_last_error(), next_kernel(d, blocks, flex, khr));
    if (blocks)
        vk_path_disable(d, VK_PATH_COOPMAT_BLOCKS);
    else if (flex)
        vk_path_disable(d, VK_PATH_COOPMAT_FLEX);
    else if (khr)
        vk_path_disable(d, VK_PATH_COOPMAT_KHR);
    else
        vk_path_disable(d, VK_PATH_COOPMAT_NV);
    rec->pipeline_failed = false;
    *retry = true;
    return false;
}

bool vk_coopmat_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    bool retry = true;
    while (retry)
        if (coopmat_try(rec, node, st, &retry)) return true;
    return false;
}
