/*
 * ops-nn.c - rotary position embeddings (rope, rope_back in every mode:
 * normal, NeoX, multi-section, interleaved multi-section, vision; YaRN scaling
 * and frequency factors), flash_attn_ext and timestep_embedding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

/* The shader's mode code (rope.comp) of a ggml rope mode, or -1. */
static int rope_mode_code(int mode) {
    switch (mode) {
    case GGML_ROPE_TYPE_NORMAL: return 0;
    case GGML_ROPE_TYPE_NEOX: return 1;
    case GGML_ROPE_TYPE_MROPE: return 2;
    case GGML_ROPE_TYPE_IMROPE: return 3;
    case GGML_ROPE_TYPE_VISION: return 4;
    default: return -1;
    }
}

/* struct ggmlc_rope_params. */
static bool rope_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *pos = node->src[1], *ff = node->src[2];
    const struct ggmlc_rope_params op = ggmlc_rope_params_of(node);
    const int n_dims = op.n_dims, code = rope_mode_code(op.mode);
    if (code < 0 || op.n_offs != 0) return false; /* offset ropes (ggml_rope_set_offset): CPU */
    if ((a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) || node->type != a->type || !vk_type_ok(d, a->type)) return false;
    if (!vk_shape_fits(a) || !vk_shape_fits(node) || !ggml_are_same_shape(a, node) || a->ne[0] % 2 != 0) return false;
    if (n_dims <= 0 || n_dims > a->ne[0] || n_dims % 2 != 0 || (code == 4 && 2 * (int64_t)n_dims != a->ne[0])) return false;
    const bool multi = code >= 2;
    if (multi) {
        int64_t total = 0;
        for (int i = 0; i < GGML_MROPE_SECTIONS; i++) {
            if (op.sections[i] < 0) return false;
            total += op.sections[i];
        }
        if (total == 0) return false;
    }
    if (!pos || pos->type != GGML_TYPE_I32 || !ggml_is_contiguous(pos) || pos->ne[0] != (multi ? 4 : 1) * a->ne[2]) return false;
    const int64_t n_pairs = code == 4 ? a->ne[0] / 2 : n_dims / 2;
    return !ff || (ff->type == GGML_TYPE_F32 && ggml_is_contiguous(ff) && ff->ne[0] >= n_pairs);
}

/* The dispatch of rope kernel `shader` for node, its push constants in *pc (not yet pushed) and
 * its operands and result bound. */
static void rope_dispatch(struct vk_rec *rec, const struct ggml_tensor *node, enum vk_shader_id shader,
                          struct vk_dispatch *ds, struct vk_pc_rope *pc) {
    const struct ggml_tensor *a = node->src[0], *pos = node->src[1], *ff = node->src[2];
    const struct ggmlc_rope_params op = ggmlc_rope_params_of(node);
    const int n_dims = op.n_dims;
    float corr[2];
    ggml_rope_yarn_corr_dims(n_dims, op.n_ctx_orig, op.freq_base, op.beta_fast, op.beta_slow, corr);

    const size_t ts = ggml_type_size(a->type);
    vk_dispatch_init(ds, shader);
    const struct vk_shape sd = vk_shape_of(node);
    _Static_assert(GGML_MROPE_SECTIONS == 4, "s0..s3 hold the sections");
    *pc = (struct vk_pc_rope){
        .nb0 = sd.nb[0],
        .nb1 = sd.nb[1],
        .nb2 = sd.nb[2],
        .nb3 = sd.nb[3],
        .n_dims = (uint32_t)n_dims,
        .mode = (uint32_t)rope_mode_code(op.mode),
        .has_ff = ff != NULL,
        .backward = node->op == GGML_OP_ROPE_BACK,
        .theta_scale = powf(op.freq_base, -2.0f / n_dims),
        .freq_scale = op.freq_scale,
        .ext_factor = op.ext_factor,
        .attn_factor = op.attn_factor,
        .corr0 = corr[0],
        .corr1 = corr[1],
        .s0 = (uint32_t)op.sections[0],
        .s1 = (uint32_t)op.sections[1],
        .s2 = (uint32_t)op.sections[2],
        .s3 = (uint32_t)op.sections[3],
    };
    VK_PUSH_SHAPE(*pc, 0, a);
    vk_dispatch_bind(ds, a, false, ts, VK_PUSH_WORD(vk_pc_rope, off_a));
    vk_dispatch_bind(ds, pos, false, 4, VK_PUSH_WORD(vk_pc_rope, off_p));
    vk_dispatch_bind(ds, ff ? ff : pos, false, 4, VK_PUSH_WORD(vk_pc_rope, off_f));
    vk_dispatch_bind(ds, node, true, ts, VK_PUSH_WORD(vk_pc_rope, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(a) / 2, 256, ds->groups);
}

static enum ggml_status rope_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    struct vk_dispatch ds;
    struct vk_pc_rope pc;
    rope_dispatch(rec, node, vk_shader_find("rope_%s", ggml_type_name(node->src[0]->type)), &ds, &pc);
    vk_dispatch_push(&ds, pc);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------- a rope and the set_rows of its result (vk-fuse.c) */

/* The fused kernel of rope and set_rows, or VK_SHADER_COUNT. */
static enum vk_shader_id rope_set_rows_shader(const struct ggml_tensor *set_rows) {
    const struct ggml_tensor *idx = set_rows->src[1];
    return vk_shader_find("rope_f32_set_rows_%s_%s", ggml_type_name(set_rows->type), ggml_type_name(idx->type));
}

bool vk_rope_set_rows_fits(const struct vk_device *d, const struct ggml_tensor *rope, const struct ggml_tensor *set_rows) {
    (void)d;
    if (rope->op != GGML_OP_ROPE || set_rows->op != GGML_OP_SET_ROWS || rope->type != GGML_TYPE_F32) return false;
    const int code = rope_mode_code(ggmlc_rope_params_of(rope).mode);
    const struct ggml_tensor *b = set_rows->src[0], *idx = set_rows->src[1];
    /* b: the rope's result as rows of all heads of a token (itself, or a reshape of it) */
    const bool rows_of_rope = (b == rope || (b->view_src == rope && b->view_offs == 0)) && ggml_is_contiguous(b) &&
                              ggml_is_contiguous(rope) && rope->ne[3] == 1 &&
                              b->ne[0] == rope->ne[0] * rope->ne[1] && b->ne[1] == rope->ne[2] && b->ne[2] == 1 &&
                              b->ne[3] == 1;
    const size_t tc = ggml_type_size(set_rows->type);
    return (code == 0 || code == 1) && rows_of_rope && ggml_is_contiguous(idx) && idx->ne[0] == b->ne[1] &&
           set_rows->ne[0] == b->ne[0] && set_rows->ne[2] == 1 && set_rows->ne[3] == 1 && set_rows->nb[0] == tc &&
           set_rows->nb[1] % tc == 0 && set_rows->nb[1] / tc <= UINT32_MAX && set_rows->ne[1] <= UINT32_MAX &&
           vk_shader_present(rope_set_rows_shader(set_rows));
}

bool vk_rope_set_rows_record(struct vk_rec *rec, const struct ggml_tensor *rope, const struct ggml_tensor *set_rows,
                             enum ggml_status *st) {
    const struct ggml_tensor *idx = set_rows->src[1];
    struct vk_dispatch ds;
    struct vk_pc_rope pc;
    rope_dispatch(rec, rope, rope_set_rows_shader(set_rows), &ds, &pc);
    if (!vk_optional_pipeline(rec->d, ds.shader, NULL, 0, VK_PATH_FUSE, "unfused nodes")) return false;
    const size_t tc = ggml_type_size(set_rows->type);
    pc.s2 = (uint32_t)(set_rows->nb[1] / tc); /* s0, s1: the offsets of idx and the cache, bound below */
    pc.s3 = (uint32_t)set_rows->ne[1];
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, idx, false, (uint32_t)ggml_type_size(idx->type), VK_PUSH_WORD(vk_pc_rope, s0));
    vk_dispatch_bind(&ds, set_rows, true, (uint32_t)tc, VK_PUSH_WORD(vk_pc_rope, s1));
    *st = vk_dispatch_bind_check(rec, &ds, set_rows) < 0 ? GGML_STATUS_FAILED : vk_record_dispatch(rec, &ds);
    return true;
}

/* ---------------------------------------------------------- flash_attn_ext */

#define ATTN_DK_MAX 576 /* q rows held in shared memory */
#define ATTN_DV_MAX 512 /* a workgroup of 128 covers four values per thread */
#define ATTN_WG 128     /* keys per chunk: one per thread */
#define ATTN_SPLIT_MAX 64 /* fattn-combine.comp's shared weights */

/* K and V share one type: f32, f16, bf16, or q8_0 / q4_0 blocks dequantized while read. */
static bool attn_kv_quant(enum ggml_type type) { return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0; }

static bool attn_kv_ok(const struct vk_device *d, const struct ggml_tensor *t, enum ggml_type type) {
    if (t->type != type || t->nb[0] != ggml_type_size(type)) return false;
    if (attn_kv_quant(type)) return vk_quant_readable(d, t);
    return vk_float_code(type) >= 0 && vk_type_ok(d, type) && vk_shape_fits(t);
}

/* struct ggmlc_flash_attn_params; src: q, k, v, mask, sinks. */
static bool flash_attn_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *m = node->src[3], *sinks = node->src[4];
    if (q->type != GGML_TYPE_F32 || q->nb[0] != 4 || node->type != GGML_TYPE_F32 || !ggml_is_contiguous(node)) return false;
    if (!attn_kv_ok(d, k, k->type) || !attn_kv_ok(d, v, k->type) || q->ne[0] > ATTN_DK_MAX || v->ne[0] > ATTN_DV_MAX) return false;
    if (k->ne[0] != q->ne[0] || v->ne[1] != k->ne[1] || k->ne[2] == 0 || k->ne[3] == 0 || q->ne[2] % k->ne[2] ||
        q->ne[3] % k->ne[3] || v->ne[2] != k->ne[2] || v->ne[3] != k->ne[3])
        return false;
    if (m && (!(m->type == GGML_TYPE_F16 || m->type == GGML_TYPE_F32) || !vk_type_ok(d, m->type) || !ggml_is_contiguous(m) ||
              m->ne[0] < k->ne[1] || m->ne[1] < q->ne[1] || q->ne[2] % m->ne[2] || q->ne[3] % m->ne[3]))
        return false;
    if (sinks && (sinks->type != GGML_TYPE_F32 || !ggml_is_contiguous(sinks) || ggml_nelements(sinks) < q->ne[2])) return false;
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    return q->ne[1] <= max[0] && q->ne[2] <= max[1] && q->ne[3] <= max[2] && vk_shape_fits(q) && vk_shape_fits(node);
}

/* Split keys (flash decoding): with few (query, head, batch) rows to fill the GPU and many keys,
 * each row's keys are shared among NS workgroups, whose partial results fattn-combine.comp adds
 * up.  On GPUs, for at most 64 rows, as many splits as make about 256 workgroups while each keeps
 * at least 4 chunks (512 keys); never on CPU-type devices (lavapipe gains nothing), nor once the
 * combine's pipeline failed.  Not timed on a GPU yet.  $GGMLC_VK_FA_SPLIT=N forces N splits (1:
 * none; more than the chunks leaves some empty, which the combine handles). */
static uint32_t attn_splits(const struct vk_device *d, const struct ggml_tensor *q, const struct ggml_tensor *k) {
    if (vk_path_disabled(d, VK_PATH_ATTN_SPLIT)) return 1;
    const uint64_t rows = (uint64_t)q->ne[1] * q->ne[2] * q->ne[3], chunks = ((uint64_t)k->ne[1] + ATTN_WG - 1) / ATTN_WG;
    const struct vk_env_value *env = &vk_tuning()->fa_split;
    uint64_t ns = 1;
    if (env->set) ns = (uint64_t)env->number;
    else if (d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU && rows <= 64)
        ns = ((256 + rows - 1) / rows < chunks / 4) ? (256 + rows - 1) / rows : chunks / 4;
    if (ns > ATTN_SPLIT_MAX) ns = ATTN_SPLIT_MAX;
    if (ns * (uint64_t)q->ne[1] > d->props.limits.maxComputeWorkGroupCount[0]) ns = 1;
    return ns > 1 ? (uint32_t)ns : 1u;
}

/* The partial results of split keys: per row and split, DV sums, a maximum and a normaliser. */
static VkDeviceSize attn_partials_bytes(const struct ggml_tensor *node, uint32_t ns) {
    const struct ggml_tensor *q = node->src[0], *v = node->src[2];
    return (VkDeviceSize)q->ne[1] * q->ne[2] * q->ne[3] * ns * (v->ne[0] + 2) * sizeof(float);
}

/* The tiled kernel (flash-attn-tile.comp) for many query rows: a workgroup per 16 rows of a K/V
 * head group, K and V tiles shared by them.  Its limits: heads up to 256 (ATTN_TILE_DMAX), its
 * shared memory (ATTN_TILE_SHARED bytes).  Chosen from ATTN_TILE_MIN_QUERIES queries; fewer
 * (decoding) take the row kernel with its split keys; devices with cooperative matrices take
 * flash-attn-cm.comp ahead of it where that fits.  $GGMLC_VK_FA_TILE=0 never takes it (nor the
 * cooperative-matrix kernel), =1 whenever the shapes allow (never the cooperative-matrix kernel); a
 * failed pipeline falls back to the row kernel for good. */
#define ATTN_TILE_ROWS 16
#define ATTN_TILE_DMAX 256
#define ATTN_TILE_SHARED 31108
#define ATTN_TILE_MIN_QUERIES 8
static bool attn_tile_fits(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2];
    const uint64_t tiles = ((uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]) + ATTN_TILE_ROWS - 1) / ATTN_TILE_ROWS;
    const struct vk_env_value *env = &vk_tuning()->fa_tile;
    if (vk_path_disabled(d, VK_PATH_ATTN_TILE) || (env->set && env->number == 0)) return false;
    if (q->ne[0] > ATTN_TILE_DMAX || v->ne[0] > ATTN_TILE_DMAX || d->props.limits.maxComputeSharedMemorySize < ATTN_TILE_SHARED)
        return false;
    if (tiles > d->props.limits.maxComputeWorkGroupCount[0] || k->ne[2] > d->props.limits.maxComputeWorkGroupCount[1]) return false;
    return (env->set && env->number == 1) || q->ne[1] >= ATTN_TILE_MIN_QUERIES;
}

/* fattn-combine.comp over the partials at scratch offset at */
static enum ggml_status attn_combine_record(struct vk_rec *rec, const struct ggml_tensor *node, uint32_t ns, VkDeviceSize at,
                                            VkDeviceSize bytes) {
    const struct ggml_tensor *q = node->src[0], *v = node->src[2], *sinks = node->src[4];
    const uint64_t rows = (uint64_t)q->ne[1] * q->ne[2] * q->ne[3];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, VK_SHADER_FATTN_COMBINE);
    const struct vk_pc_fattn_combine pc = {
        .DV = (uint32_t)v->ne[0],
        .H = (uint32_t)q->ne[2],
        .NS = ns,
        .rows = (uint32_t)rows,
        .sinks = sinks != NULL,
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind_scratch(&ds, at, bytes, false);
    vk_dispatch_bind(&ds, sinks ? sinks : q, false, 4, VK_PUSH_WORD(vk_pc_fattn_combine, off_s));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_fattn_combine, off_d));
    vk_groups_1d(rec->d, rows, 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* The push constants of node's flash attention; split: the flags' split word (flash-attn.comp:
 * chunks of keys per split, flash-attn-vec.comp: keys per split; 0: unsplit). */
static struct vk_pc_flash_attn attn_push(const struct ggml_tensor *node, uint32_t split) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *m = node->src[3], *sinks = node->src[4];
    const size_t tk = vk_addr_unit(k->type);
    const struct ggmlc_flash_attn_params fa = ggmlc_flash_attn_params_of(node);
    const float max_bias = fa.max_bias;
    const uint32_t n_head = (uint32_t)q->ne[2];
    const uint32_t n_head_log2 = 1u << (uint32_t)floor(log2((double)n_head));
    return (struct vk_pc_flash_attn){
        .DK = (uint32_t)q->ne[0],
        .DV = (uint32_t)v->ne[0],
        .NQ = (uint32_t)q->ne[1],
        .NKV = (uint32_t)k->ne[1],
        .H = (uint32_t)q->ne[2],
        .nbq1 = (uint32_t)(q->nb[1] / 4),
        .nbk1 = (uint32_t)(k->nb[1] / tk),
        .nbk2 = (uint32_t)(k->nb[2] / tk),
        .nbk3 = (uint32_t)(k->nb[3] / tk),
        .nbv1 = (uint32_t)(v->nb[1] / tk),
        .nbv2 = (uint32_t)(v->nb[2] / tk),
        .nbv3 = (uint32_t)(v->nb[3] / tk),
        .mne0 = m ? (uint32_t)m->ne[0] : 1,
        .mne1 = m ? (uint32_t)m->ne[1] : 1,
        .mne2 = m ? (uint32_t)m->ne[2] : 1,
        .mne3 = m ? (uint32_t)m->ne[3] : 1,
        .rk2 = (uint32_t)(q->ne[2] / k->ne[2]),
        .rk3 = (uint32_t)(q->ne[3] / k->ne[3]),
        .scale = fa.scale,
        .softcap = fa.logit_softcap,
        .m0 = powf(2.0f, -max_bias / (float)n_head_log2),
        .m1 = powf(2.0f, -max_bias / 2.0f / (float)n_head_log2),
        .n_head_log2 = n_head_log2,
        .flags = (m ? 1u : 0u) | (sinks ? 2u : 0u) | (max_bias > 0.0f ? 4u : 0u) | split << 8,
        .nbq2 = (uint32_t)(q->nb[2] / 4),
        .nbq3 = (uint32_t)(q->nb[3] / 4),
    };
}

/* The dispatch of kernel name_fmt (filled with the K and mask types) with node's push constants
 * and its q, k, v, mask, sinks and destination bindings. */
static void attn_dispatch_init(struct vk_dispatch *ds, const char *name_fmt, const struct ggml_tensor *node, uint32_t split) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *m = node->src[3], *sinks = node->src[4];
    const size_t tk = vk_addr_unit(k->type);
    vk_dispatch_init(ds, vk_shader_find(name_fmt, ggml_type_name(k->type), m ? ggml_type_name(m->type) : "f32"));
    const struct vk_pc_flash_attn pc = attn_push(node, split);
    vk_dispatch_push(ds, pc);
    vk_dispatch_bind(ds, q, false, 4, VK_PUSH_WORD(vk_pc_flash_attn, off_q));
    vk_dispatch_bind(ds, k, false, (uint32_t)tk, VK_PUSH_WORD(vk_pc_flash_attn, off_k));
    vk_dispatch_bind(ds, v, false, (uint32_t)tk, VK_PUSH_WORD(vk_pc_flash_attn, off_v));
    vk_dispatch_bind(ds, m ? m : q, false, m ? ggml_type_size(m->type) : 4, VK_PUSH_WORD(vk_pc_flash_attn, off_m));
    vk_dispatch_bind(ds, sinks ? sinks : q, false, 4, VK_PUSH_WORD(vk_pc_flash_attn, off_s));
    vk_dispatch_bind(ds, node, true, 4, VK_PUSH_WORD(vk_pc_flash_attn, off_d));
}

/* flash-attn-tile.comp: x tiles of rows, y K/V heads, z batches.  Returns false (nothing
 * recorded) when its pipeline cannot be made. */
static bool attn_tile_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    struct vk_dispatch ds;
    attn_dispatch_init(&ds, "fattn_tile_%s_%s", node, 0);
    if (!vk_optional_pipeline(rec->d, ds.shader, NULL, 0, VK_PATH_ATTN_TILE, "flash attention takes one workgroup per query row"))
        return false;
    ds.groups[0] = (uint32_t)(((uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]) + ATTN_TILE_ROWS - 1) / ATTN_TILE_ROWS);
    ds.groups[1] = (uint32_t)k->ne[2];
    ds.groups[2] = (uint32_t)q->ne[3];
    *st = vk_record_dispatch(rec, &ds);
    return true;
}

/* The cooperative-matrix kernel (flash-attn-cm.comp) for many query rows, where the device has
 * VK_KHR_cooperative_matrix fragments (coopmat_khr_shape) and subgroup shuffles: a workgroup of
 * ATTN_CM_SUBGROUPS subgroups per tile of rows (FRM rows each), keys ATTN_CM_KEYS at a time (fewer
 * where shared memory is short), f16, f32 or bf16 K/V converted to f16 as they are staged, heads up
 * to ATTN_CM_DMAX.  Chosen wherever it fits for the queries the tiled kernel takes, ahead of it;
 * $GGMLC_VK_FA_TILE=1 takes the tiled kernel instead, =0 neither; a failed pipeline falls back to
 * the tiled kernel for good.  Its specialization constants:
 * {WG, SG, FRM, FRN, FRK, KB, BC, DKP, DVP, STAGES, STORE_IN_BRANCH}.
 * On an H200 (2026-12-03, GPU time per dispatch), causal prompts of 512 tokens, f16 K/V: 16 query
 * heads on 4 of 64, 72 us against the tiled kernel's 383 (4, 8 subgroups: 72 us; 2: 137; 4 with 32
 * keys: 70); 32 heads on 8 of 128 (32 keys: shared memory), 175 us against 1302; f32 K/V 76 us.
 * 32 keys a tile rather than 64 since session 22 (H200, GPU time per dispatch): 32 query heads on 4
 * of 64, 512 causal queries over 512 keys 104 -> 70 us, 64 queries over 256 keys 37.0 -> 35.8 us;
 * in llama.cpp's prompts (two rounds) a 1.1B model's pp512 30.4-32.0k -> 35.0-35.4k tokens/s,
 * pp64 +4%, the 100M model's (12 heads on 4) pp64 +2-6%, pp512 -0.5%/+5%.  Re-measured with the
 * mask read 16 bytes a lane (H100, 2026-12-06): 64 keys a tile 51.2 us against 32's 46.1 (12 heads
 * on 4 of 64, 512 over 512), 83.3 against 52.8 (32 on 4), 889 against 501 (2048 over 2048, 32 on
 * 4); 16 keys 46.1, 52.2, 500.6: no better than 32. */
#define ATTN_CM_SUBGROUPS 4
#define ATTN_CM_KEYS 32
#define ATTN_CM_DMAX 256
#define ATTN_CM_NSPEC 11

/* x rounded up to a multiple of m */
static uint32_t round_up_u32(uint32_t x, uint32_t m) { return (x + m - 1) / m * m; }

/* The shared memory of the kernel's constants v, as flash-attn-cm.comp lays it out. */
static uint64_t attn_cm_shared(const uint32_t *v) {
    const uint64_t br = (uint64_t)(v[0] / v[1]) * v[2], bc = v[6];
    const uint64_t kv = v[9] * bc * (v[7] / 8 + 1 + v[8] / 8 + 1) * 16;
    return kv + br * (bc + 4) * 4 + br * (bc / 2 + 4) * 4 + br * 4 + 8; /* ss, sp (rows padded by 16 bytes), rowf, live */
}

/* Whether the constants v suit the kernel on d (see flash-attn-cm.comp's list). */
static bool attn_cm_consts_fit(const struct vk_device *d, const uint32_t *v) {
    const uint32_t sg = v[1], frm = v[2], frn = v[3], frk = v[4], bc = v[6], dkp = v[7], dvp = v[8];
    if (!sg || !frm || sg % frm || (frm * frn) % sg || frn % 8 || frk % 8 || !bc || v[9] < 1 || v[9] > 2 || v[10] > 1) return false;
    const uint32_t lpr = sg / frm, br = (v[0] / sg) * frm;
    if (lpr & (lpr - 1) || bc % frn || bc % frk || bc % (8 * lpr) || dkp % 8 || dkp % frk || dvp % 8 || dvp % frn) return false;
    if ((uint64_t)br * (dkp / 8 + 1) > (uint64_t)bc * (dkp / 8 + 1 + dvp / 8 + 1)) return false; /* the query rows' staging */
    return attn_cm_shared(v) <= d->props.limits.maxComputeSharedMemorySize && v[0] <= d->props.limits.maxComputeWorkGroupInvocations;
}

/* The kernel's constants for node into v (false where none fit): ATTN_CM_SUBGROUPS subgroups,
 * ATTN_CM_KEYS keys per tile or the most of its halves (down to 16) that fit, one shared K/V slot,
 * fragments stored under a branch except on CPU devices (lavapipe gets those wrong:
 * flash-attn-cm.comp, step 5); $GGMLC_VK_FA_CM="NSG[,BC[,STAGES[,BRANCH]]]" tries NSG subgroups,
 * BC keys, STAGES slots and BRANCH (0/1) instead (the defaults where they do not fit).  Two slots
 * (one barrier a tile less) were slower on an H100 (2026-12-06, 512 causal queries over 512 keys,
 * heads of 64): 32 query heads on 4, 58.8 us with one slot against 89.2 (the larger shared memory
 * halves the workgroups an SM holds), 12 heads on 4 54.3 against 53.1. */
static bool attn_cm_consts(const struct vk_device *d, const struct ggml_tensor *node, uint32_t *v) {
    const uint32_t *frag = d->caps.coopmat_khr_shape, sg = d->caps.subgroup_size;
    const uint32_t pad_k = frag[2] > 8 ? frag[2] : 8, pad_v = frag[1] > 8 ? frag[1] : 8;
    const uint32_t dkp = round_up_u32((uint32_t)node->src[0]->ne[0], pad_k), dvp = round_up_u32((uint32_t)node->src[2]->ne[0], pad_v);
    const uint32_t in_branch = d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    const struct vk_env_value *env = &vk_tuning()->fa_cm;
    const bool asked = env->set && env->n >= 1 && env->v[0] >= 1 && env->v[0] <= 64;
    for (int i = asked ? -1 : 0; i < 0 || (ATTN_CM_KEYS >> i) >= 16; i++) { /* i = -1: the override */
        const uint32_t nsg = i < 0 ? env->v[0] : ATTN_CM_SUBGROUPS, bc = i < 0 ? (env->n >= 2 ? env->v[1] : ATTN_CM_KEYS) : ATTN_CM_KEYS >> i;
        const uint32_t stages = i < 0 && env->n >= 3 ? env->v[2] : 1, store = i < 0 && env->n >= 4 ? env->v[3] : in_branch;
        const uint32_t c[ATTN_CM_NSPEC] = {nsg * sg, sg, frag[0], frag[1], frag[2], frag[2], bc, dkp, dvp, stages, store};
        if (attn_cm_consts_fit(d, c)) {
            memcpy(v, c, sizeof c);
            return true;
        }
    }
    return false;
}

static bool attn_cm_fits(const struct vk_device *d, const struct ggml_tensor *node, uint32_t *v) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v_ = node->src[2], *m = node->src[3];
    const struct vk_env_value *env = &vk_tuning()->fa_tile;
    if (!d->use_coopmat || !d->caps.coopmat_khr_frag || !d->caps.subgroup_shuffle || !d->caps.subgroup_arith || vk_path_disabled(d, VK_PATH_ATTN_CM) ||
        env->set || q->ne[1] < ATTN_TILE_MIN_QUERIES)
        return false;
    if (k->type != GGML_TYPE_F16 && k->type != GGML_TYPE_F32 && k->type != GGML_TYPE_BF16) return false; /* blocks: the tiled kernel */
    if (q->ne[0] > ATTN_CM_DMAX || v_->ne[0] > ATTN_CM_DMAX || !attn_cm_consts(d, node, v)) return false;
    const uint64_t br = (uint64_t)(v[0] / v[1]) * v[2];
    const uint64_t tiles = ((uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]) + br - 1) / br;
    if (tiles > d->props.limits.maxComputeWorkGroupCount[0] || k->ne[2] > d->props.limits.maxComputeWorkGroupCount[1]) return false;
    return vk_shader_present(vk_shader_find("fattn_cm_%s_%s", ggml_type_name(k->type), m ? ggml_type_name(m->type) : "f32"));
}

/* The partials of ns key splits (ns > 1) in the transient scratch: their offset *at and size *bytes,
 * with the combine's pipeline; 1 (unsplit) where either cannot be had. */
static uint32_t attn_split_prepare(struct vk_rec *rec, const struct ggml_tensor *node, uint32_t ns, VkDeviceSize *at,
                                   VkDeviceSize *bytes) {
    *at = 0;
    *bytes = ns > 1 ? attn_partials_bytes(node, ns) : 0;
    if (ns > 1 &&
        (!vk_scratch_transient(rec, *bytes, at) ||
         !vk_optional_pipeline(rec->d, VK_SHADER_FATTN_COMBINE, NULL, 0, VK_PATH_ATTN_SPLIT,
                               "flash attention takes the unsplit kernel")))
        return 1;
    return ns;
}

/* Dispatch ds (its groups set for ns splits) with its partials' binding, then the combine of split keys. */
static enum ggml_status attn_split_dispatch(struct vk_rec *rec, const struct ggml_tensor *node, struct vk_dispatch *ds, uint32_t ns,
                                            VkDeviceSize at, VkDeviceSize bytes) {
    if (ns > 1) vk_dispatch_bind_scratch(ds, at, bytes, true);
    else vk_dispatch_bind(ds, node, true, 4, -1); /* the partials' binding, unused */
    const enum ggml_status st = vk_record_dispatch(rec, ds);
    return st == GGML_STATUS_SUCCESS && ns > 1 ? attn_combine_record(rec, node, ns, at, bytes) : st;
}

/* Split keys of the cooperative-matrix kernel (constants spec): each tile of rows shares its keys
 * among ns workgroups, whose parts fattn-combine.comp adds up; *keys: keys per split (a multiple of
 * the kernel's tile).  Where the workgroups are fewer than the GPU's units (SMs), as many splits as
 * fill them, at most ATTN_CM_SPLIT_MAX, each of ATTN_CM_SPLIT_TILES tiles or more; elsewhere, and on
 * devices that do not tell their units, unsplit; $GGMLC_VK_FA_SPLIT=N forces N (1: unsplit).  H100
 * (132 SMs, 2026-12-06, GPU us, 512 causal queries over 512 keys, 12 heads on 4 of 64: 96
 * workgroups, the last walking all 16 tiles): unsplit 46.1; 2 splits 33.2 + the combine's 8.8, 3:
 * 36.0 + 9.0, 4: 34.1 + 9.0.  With enough workgroups splits cost more than they save (32 heads on
 * 4, 256 workgroups: 52.8 against 56.9 + 17.8 for 2; 2048 over 2048, 12 on 4, 384 workgroups:
 * 246.1 against 231.9 + 25.6).  (On an H200 in 2026-12-04, before the 16-byte mask loads, 4 splits
 * left the 100M llama's pp512 attention at 60-73 us a layer against 63-75 unsplit.) */
#define ATTN_CM_SPLIT_MAX 4
#define ATTN_CM_SPLIT_TILES 4
static uint32_t attn_cm_splits(const struct vk_device *d, const struct ggml_tensor *node, const uint32_t *spec, uint32_t *keys) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    const struct vk_env_value *env = &vk_tuning()->fa_split;
    const uint64_t br = (uint64_t)(spec[0] / spec[1]) * spec[2], bc = spec[6];
    const uint64_t blocks = ((uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]) + br - 1) / br, tiles = ((uint64_t)k->ne[1] + bc - 1) / bc;
    const uint64_t groups = blocks * (uint64_t)k->ne[2] * (uint64_t)q->ne[3], units = d->caps.compute_units;
    uint64_t ns = env->set && env->number > 1 ? (uint64_t)env->number : 1;
    if (!env->set && d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU && groups < units) {
        ns = (units + groups - 1) / groups;
        if (ns > ATTN_CM_SPLIT_MAX) ns = ATTN_CM_SPLIT_MAX;
        if (ns > tiles / ATTN_CM_SPLIT_TILES) ns = tiles / ATTN_CM_SPLIT_TILES;
    }
    *keys = 0;
    if (vk_path_disabled(d, VK_PATH_ATTN_SPLIT) || tiles == 0) return 1;
    if (ns > tiles) ns = tiles;
    if (ns > ATTN_SPLIT_MAX) ns = ATTN_SPLIT_MAX;
    if (ns <= 1 || ns * blocks > d->props.limits.maxComputeWorkGroupCount[0]) return 1;
    const uint64_t per = (tiles + ns - 1) / ns; /* tiles per split: no split left empty */
    if (per * bc > 0xffffff) return 1;
    *keys = (uint32_t)(per * bc);
    return (uint32_t)((tiles + per - 1) / per);
}

/* flash-attn-cm.comp: x tiles of rows (times the key splits), y K/V heads, z batches.  Returns
 * false (nothing recorded) when its pipeline cannot be made. */
static bool attn_cm_record(struct vk_rec *rec, const struct ggml_tensor *node, const uint32_t *spec, enum ggml_status *st) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    const enum vk_shader_id shader = vk_shader_find("fattn_cm_%s_%s", ggml_type_name(k->type), node->src[3] ? ggml_type_name(node->src[3]->type) : "f32");
    if (!vk_optional_pipeline(rec->d, shader, spec, ATTN_CM_NSPEC, VK_PATH_ATTN_CM, "flash attention takes the tiled kernel"))
        return false;
    uint32_t keys;
    VkDeviceSize at, bytes;
    const uint32_t ns = attn_split_prepare(rec, node, attn_cm_splits(rec->d, node, spec, &keys), &at, &bytes);
    struct vk_dispatch ds;
    attn_dispatch_init(&ds, "fattn_cm_%s_%s", node, ns > 1 ? keys : 0);
    memcpy(ds.spec, spec, ATTN_CM_NSPEC * sizeof spec[0]);
    ds.n_spec = ATTN_CM_NSPEC;
    const uint64_t br = (uint64_t)(spec[0] / spec[1]) * spec[2];
    ds.groups[0] = (uint32_t)(((uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]) + br - 1) / br) * ns;
    ds.groups[1] = (uint32_t)k->ne[2];
    ds.groups[2] = (uint32_t)q->ne[3];
    *st = attn_split_dispatch(rec, node, &ds, ns, at, bytes);
    return true;
}

/* The vector kernel (flash-attn-vec.comp) for the few query rows of decoding: a workgroup per R
 * rows of a K/V head group, ATTN_VEC_WG / 8 groups of 8 lanes taking a share of the keys each
 * without barriers, their states added in shared memory at the end.  Heads up to ATTN_VEC_DMAX;
 * lane groups of 8 need subgroups of 8 lanes or more and shuffles.  Chosen where neither the
 * cooperative-matrix nor the tiled kernel is, ahead of the row kernel; a failed pipeline falls back
 * to the row kernel for good.  Its specialization constants: {WG, R, CK, CV, B}: R rows, CK and CV
 * chunks of 8 values per lane of K and V rows, B keys per lane group and step.
 * The shape, measured on an H200 (docs/vulkan.md; one query of 12 heads on 4 K/V heads of 64,
 * ggmlc-bench flash_attn_ext): 512 threads, 1 row, 4 keys a step (B = 4 / chunks) took 27 / 35 / 34
 * us for 256 / 1024 / 4096 keys where 256 threads, the 3 rows of a K/V head's group and 8 keys a step
 * took 34 / 47 / 48; in llama.cpp's decoding 13.1 against 21.6 us a layer.  A workgroup's time grows
 * with its rows times keys per lane group far beyond what their loads and arithmetic explain, so
 * more workgroups (one per row) and more lane groups win over sharing each K/V read among the rows.
 * $GGMLC_VK_FA_VEC=0 never takes the kernel, =WG,R,B tries another shape (where it fits).
 * Split keys: on GPUs, one split per ATTN_VEC_SPLIT_KEYS keys while the workgroups stay under
 * ATTN_VEC_SPLIT_GROUPS; $GGMLC_VK_FA_SPLIT=N forces N as for the row kernel. */
#define ATTN_VEC_WG 512
#define ATTN_VEC_ROWS 1
#define ATTN_VEC_KEYS 4
#define ATTN_VEC_DMAX 256
#define ATTN_VEC_NSPEC 5
#define ATTN_VEC_SPLIT_KEYS 512
#define ATTN_VEC_SPLIT_GROUPS 1024

struct attn_vec_plan {
    uint32_t spec[ATTN_VEC_NSPEC];
    uint32_t blocks, ns; /* workgroups of rows per K/V head and batch; key splits */
};

/* The shared memory of flash-attn-vec.comp with wg threads, r rows and cv chunks of V per lane. */
static uint64_t attn_vec_shared(uint32_t wg, uint32_t r, uint32_t cv) { return (uint64_t)(wg / 8) * r * (64 * cv + 2) * 4; }

/* The key splits of the vector kernel for plan's workgroups. */
static uint32_t attn_vec_splits(const struct vk_device *d, const struct ggml_tensor *node, const struct attn_vec_plan *plan) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    const struct vk_env_value *env = &vk_tuning()->fa_split;
    const uint64_t nkv = (uint64_t)k->ne[1], wgs = (uint64_t)plan->blocks * k->ne[2] * q->ne[3];
    if (vk_path_disabled(d, VK_PATH_ATTN_SPLIT) || nkv == 0) return 1;
    uint64_t ns = 1;
    if (env->set) ns = env->number > 1 ? (uint64_t)env->number : 1;
    else if (d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) {
        ns = (nkv + ATTN_VEC_SPLIT_KEYS - 1) / ATTN_VEC_SPLIT_KEYS;
        const uint64_t room = ATTN_VEC_SPLIT_GROUPS / wgs;
        if (ns > room) ns = room > 1 ? room : 1;
    }
    if (ns > ATTN_SPLIT_MAX) ns = ATTN_SPLIT_MAX;
    if (ns * plan->blocks > d->props.limits.maxComputeWorkGroupCount[0] || (nkv + ns - 1) / ns > 0xffffff) ns = 1;
    return (uint32_t)ns;
}

/* Whether the vector kernel takes node on d, with its constants and splits in plan. */
static bool attn_vec_fits(const struct vk_device *d, const struct ggml_tensor *node, struct attn_vec_plan *plan) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *m = node->src[3];
    const struct vk_env_value *env = &vk_tuning()->fa_vec;
    const uint32_t *max = d->props.limits.maxComputeWorkGroupCount;
    if ((env->set && env->number == 0) || vk_path_disabled(d, VK_PATH_ATTN_VEC) || !d->caps.subgroup_shuffle ||
        d->caps.subgroup_size < 8 || d->caps.subgroup_size % 8 || q->ne[0] > ATTN_VEC_DMAX || v->ne[0] > ATTN_VEC_DMAX)
        return false;
    const uint32_t ck = (uint32_t)(q->ne[0] + 63) / 64, cv = (uint32_t)(v->ne[0] + 63) / 64, c = ck > cv ? ck : cv;
    const uint64_t rows = (uint64_t)q->ne[1] * (q->ne[2] / k->ne[2]);
    uint32_t r = ATTN_VEC_ROWS, wg = ATTN_VEC_WG, b = ATTN_VEC_KEYS / c > 0 ? ATTN_VEC_KEYS / c : 1;
    if (env->n >= 3 && env->v[0] % 8 == 0 && env->v[0] >= 8 && env->v[1] >= 1 && env->v[1] * c <= 4 &&
        env->v[2] >= 1 && env->v[2] * c <= 16) {
        wg = env->v[0];
        r = env->v[1];
        b = env->v[2];
    }
    while (wg > 64 && (attn_vec_shared(wg, r, cv) > d->props.limits.maxComputeSharedMemorySize ||
                       wg > d->props.limits.maxComputeWorkGroupInvocations))
        wg /= 2;
    if (attn_vec_shared(wg, r, cv) > d->props.limits.maxComputeSharedMemorySize || wg > d->props.limits.maxComputeWorkGroupInvocations)
        return false;
    plan->blocks = (uint32_t)((rows + r - 1) / r);
    if (plan->blocks > max[0] || k->ne[2] > max[1] || q->ne[3] > max[2]) return false;
    const uint32_t spec[ATTN_VEC_NSPEC] = {wg, r, ck, cv, b};
    memcpy(plan->spec, spec, sizeof spec);
    plan->ns = attn_vec_splits(d, node, plan);
    return vk_shader_present(vk_shader_find("fattn_vec_%s_%s", ggml_type_name(k->type), m ? ggml_type_name(m->type) : "f32"));
}

/* Whether the unsplit vector kernel also quantizes node's result for the products that read it
 * (fattn_vec_*_q8: a decode layer's output projection; ops-matmul-dot.c), its scratch in *q. */
static bool attn_vec_q8(struct vk_rec *rec, const struct ggml_tensor *node, const struct attn_vec_plan *plan,
                        struct vk_q8_result *q) {
    const struct ggml_tensor *k = node->src[1], *v = node->src[2], *m = node->src[3];
    const enum vk_shader_id shader =
        vk_shader_find("fattn_vec_%s_%s_q8", ggml_type_name(k->type), m ? ggml_type_name(m->type) : "f32");
    return plan->ns == 1 && v->ne[0] % 32 == 0 && vk_shader_present(shader) && vk_q8_result_plan(rec, node, q) &&
           vk_optional_pipeline(rec->d, shader, plan->spec, ATTN_VEC_NSPEC, VK_PATH_Q8_RESULT,
                                "the products quantize their activations");
}

/* The vector kernel's dispatch (kernel name_fmt) of node with plan's constants over ns key splits. */
static void attn_vec_dispatch(struct vk_dispatch *ds, const char *name_fmt, const struct ggml_tensor *node,
                              const struct attn_vec_plan *plan, uint32_t ns) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    attn_dispatch_init(ds, name_fmt, node, ns > 1 ? (uint32_t)((k->ne[1] + ns - 1) / ns) : 0);
    memcpy(ds->spec, plan->spec, sizeof plan->spec);
    ds->n_spec = ATTN_VEC_NSPEC;
    ds->groups[0] = plan->blocks * ns;
    ds->groups[1] = (uint32_t)k->ne[2];
    ds->groups[2] = (uint32_t)q->ne[3];
}

/* flash-attn-vec.comp: x blocks of rows times splits, y K/V heads, z batches.  Returns false
 * (nothing recorded) when its pipeline cannot be made. */
static bool attn_vec_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct attn_vec_plan *plan, enum ggml_status *st) {
    const struct ggml_tensor *k = node->src[1], *m = node->src[3];
    const enum vk_shader_id shader = vk_shader_find("fattn_vec_%s_%s", ggml_type_name(k->type), m ? ggml_type_name(m->type) : "f32");
    if (!vk_optional_pipeline(rec->d, shader, plan->spec, ATTN_VEC_NSPEC, VK_PATH_ATTN_VEC, "flash attention takes one workgroup per query row"))
        return false;
    struct vk_dispatch ds;
    struct vk_q8_result q8;
    if (attn_vec_q8(rec, node, plan, &q8)) {
        attn_vec_dispatch(&ds, "fattn_vec_%s_%s_q8", node, plan, 1);
        vk_dispatch_bind(&ds, node, true, 4, -1); /* the partials' binding, unused */
        vk_dispatch_bind_scratch(&ds, q8.at, q8.scales_at, true);
        vk_dispatch_bind_scratch(&ds, q8.at + q8.scales_at, q8.bytes - q8.scales_at, true);
        *st = vk_record_dispatch(rec, &ds);
        if (*st == GGML_STATUS_SUCCESS) vk_q8_result_note(rec, &q8);
        return true;
    }
    VkDeviceSize at, bytes;
    const uint32_t ns = attn_split_prepare(rec, node, plan->ns, &at, &bytes);
    attn_vec_dispatch(&ds, "fattn_vec_%s_%s", node, plan, ns);
    *st = attn_split_dispatch(rec, node, &ds, ns, at, bytes);
    return true;
}

/* The scratch memory of flash_attn_ext node: the transient partial results of split keys. */
static void flash_attn_scratch(const struct vk_device *d, const struct ggml_tensor *node,
                               struct vk_scratch_need *need) {
    uint32_t spec[ATTN_CM_NSPEC];
    struct attn_vec_plan vec;
    uint32_t ns = 1;
    uint32_t keys;
    if (attn_cm_fits(d, node, spec)) ns = attn_cm_splits(d, node, spec, &keys);
    else if (attn_tile_fits(d, node)) ns = 1;
    else if (attn_vec_fits(d, node, &vec)) ns = vec.ns;
    else ns = attn_splits(d, node->src[0], node->src[1]);
    const VkDeviceSize bytes = ns > 1 ? attn_partials_bytes(node, ns) : 0;
    if (bytes > need->transient && bytes <= VK_SCRATCH_TRANSIENT_MAX) need->transient = bytes;
}

static enum ggml_status flash_attn_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1];
    enum ggml_status st;
    uint32_t spec[ATTN_CM_NSPEC];
    struct attn_vec_plan vec;
    if (attn_cm_fits(rec->d, node, spec) && attn_cm_record(rec, node, spec, &st)) return st;
    if (attn_tile_fits(rec->d, node) && attn_tile_record(rec, node, &st)) return st;
    if (attn_vec_fits(rec->d, node, &vec) && attn_vec_record(rec, node, &vec, &st)) return st;
    VkDeviceSize at, bytes;
    const uint32_t ns = attn_split_prepare(rec, node, attn_splits(rec->d, q, k), &at, &bytes);
    const uint32_t chunks = ns > 1 ? (uint32_t)((k->ne[1] + ATTN_WG - 1) / ATTN_WG + ns - 1) / ns : 0;
    struct vk_dispatch ds;
    attn_dispatch_init(&ds, "fattn_%s_%s", node, chunks);
    ds.groups[0] = (uint32_t)q->ne[1] * ns;
    ds.groups[1] = (uint32_t)q->ne[2];
    ds.groups[2] = (uint32_t)q->ne[3];
    return attn_split_dispatch(rec, node, &ds, ns, at, bytes);
}

/* ------------------------------------------------- timestep_embedding */

/* timesteps [N] (f32) -> [dim, N]; struct ggmlc_timestep_params. */
static bool timestep_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *t = node->src[0];
    const struct ggmlc_timestep_params p = ggmlc_timestep_params_of(node);
    return t->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && p.max_period > 0 &&
           node->ne[0] == p.dim && node->ne[1] == t->ne[0] && vk_shape_fits(t) &&
           vk_shape_fits(node);
}

static enum ggml_status timestep_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *t = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("timestep_f32"));
    const struct vk_pc_timestep pc = {
        .dim = (uint32_t)node->ne[0],
        .n = (uint32_t)node->ne[1],
        .nt0 = (uint32_t)(t->nb[0] / 4),
        .nd0 = (uint32_t)(node->nb[0] / 4),
        .nd1 = (uint32_t)(node->nb[1] / 4),
        .log_max_period = logf((float)ggmlc_timestep_params_of(node).max_period),
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, t, false, 4, VK_PUSH_WORD(vk_pc_timestep, off_t));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_timestep, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_nn_register(struct vk_op_kernel *t) {
    vk_ops_seq_register(t);
    t[GGML_OP_TIMESTEP_EMBEDDING] = (struct vk_op_kernel){timestep_supports, timestep_record};
    t[GGML_OP_FLASH_ATTN_EXT] =
        (struct vk_op_kernel){flash_attn_supports, flash_attn_record, flash_attn_scratch};
    t[GGML_OP_ROPE] = (struct vk_op_kernel){rope_supports, rope_record};
    t[GGML_OP_ROPE_BACK] = (struct vk_op_kernel){rope_supports, rope_record};
}
