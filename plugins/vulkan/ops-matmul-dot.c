/*
 * ops-matmul-dot.c - matrix-vector products (up to MV_MAX_N columns, and mul_mat_id's
 * per-pair products) with block-format weights on 8-bit integer dot products
 * (mvq-dot.comp, mvq-dot-mxfp4.comp, mvq-dot-k.comp): b quantized to 8 bits per 32-value block into scratch
 * memory first (quantize-q8.comp, once per segment for all the products that read it),
 * as the CPU backend quantizes it, or by the product's own workgroups (small products, below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops-matmul.h"

/* The integer-dot quantized mat-vec: b quantized into scratch memory by quantize-q8.comp,
 * then mvq-dot.comp / mvq-dot-k.comp with threads per workgroup, rows of d per workgroup and at most so many
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

/* Weights the integer-dot kernels read: the 32-value block formats and IQ4_NL (mvq-dot.comp), MXFP4
 * (mvq-dot-mxfp4.comp), the K-quants and IQ4_XS (mvq-dot-k.comp; q4_K and q5_K as 16-byte words, so
 * 16-byte aligned). */
static bool mvq_dot_weights_ok(const struct vk_device *d, const struct ggml_tensor *a) {
    switch (a->type) {
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q6_K: case GGML_TYPE_IQ4_NL: case GGML_TYPE_IQ4_XS:
    case GGML_TYPE_MXFP4: return true;
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

/* Whether the integer-dot kernel `kernel` (mvqd_<type> or mvqd_id_<type>) takes weights a with f32
 * activations b: the weights' format, the device's integer dot products and subgroup shuffles; by
 * default only where 4x8-bit dot products have dedicated instructions, wherever the feature exists
 * with $GGMLC_VK_MVQ_KERNEL=dot (another value of that variable turns them off). */
static bool mvq_dot_allowed(const struct vk_device *d, const char *kernel, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const enum vk_mvq_kernel choice = vk_tuning()->mvq_kernel;
    return mvq_dot_weights_ok(d, a) && b->type == GGML_TYPE_F32 &&
           vk_shader_present(vk_shader_find("%s_%s", kernel, ggml_type_name(a->type))) &&
           vk_shader_present(VK_SHADER_QUANTIZE_Q8) && !vk_path_disabled(d, VK_PATH_QUANTIZE_Q8) &&
           !vk_path_disabled(d, VK_PATH_MVQ_DOT) && d->caps.int_dot && d->caps.subgroup_shuffle &&
           (choice == VK_MVQ_AUTO ? d->caps.int_dot_fast : choice == VK_MVQ_DOT);
}

/* mul_mat's: at most MV_MAX_N columns; the tuning in *t */
static bool mvq_dot_choose(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                           struct mvq_dot_tune *t) {
    const uint32_t n = (uint32_t)b->ne[1];
    if (n > MV_MAX_N || !mvq_dot_allowed(d, "mvqd", a, b)) return false;
    /* measured on an H200 (BENCHMARKS.md): one subgroup of 32 and 2 rows for one column (16.1 / 25.0 us
     * for q4_0 / q8_0 14336x4096, against 17.8-21.1 / 24.1-29.9 for 64-256 threads and 1-4 rows) */
    *t = (struct mvq_dot_tune){n == 1 ? 32 : 128, n >= 4 ? 1 : 2, 0};
    if (t->wg < d->caps.subgroup_size) t->wg = d->caps.subgroup_size;
    const struct vk_env_value *env = &vk_tuning()->mvqd;
    const struct mvq_dot_tune v = {env->v[0], env->v[1], env->n >= 3 ? env->v[2] : 0};
    if (env->n >= 2 && mvq_dot_fits(d, &v, n)) *t = v;
    while (t->wg > 8 && !mvq_dot_fits(d, t, n)) t->wg /= 2;
    return mvq_dot_fits(d, t, n);
}

/* Scratch bytes of b quantized: per column K quant bytes, then per block a (scale, sum) pair. */
static VkDeviceSize mvq_dot_scratch(const struct ggml_tensor *b, VkDeviceSize *scales_at) {
    const VkDeviceSize cols = (VkDeviceSize)(b->ne[1] * b->ne[2] * b->ne[3]), k = (VkDeviceSize)b->ne[0];
    *scales_at = vk_scratch_round(cols * k);
    return *scales_at + cols * (k / 32) * 8;
}

/* b into Q8_0 at scratch offset at (quants, then the (scale, sum) pairs at scales_at). */
static enum ggml_status quantize_q8_record(struct vk_rec *rec, const struct ggml_tensor *b, VkDeviceSize at, VkDeviceSize bytes,
                                           VkDeviceSize scales_at) {
    const uint32_t cols = (uint32_t)(b->ne[1] * b->ne[2] * b->ne[3]);
    struct vk_dispatch q;
    vk_dispatch_init(&q, VK_SHADER_QUANTIZE_Q8);
    const struct vk_pc_quantize_q8 pc = {
        .K = (uint32_t)b->ne[0],
        .N = (uint32_t)b->ne[1],
        .cols = cols,
        .nb11 = (uint32_t)(b->nb[1] / 4),
        .nb12 = (uint32_t)(b->nb[2] / 4),
        .nb13 = (uint32_t)(b->nb[3] / 4),
        .ne12 = (uint32_t)b->ne[2],
        .bvec = vk_vectorizable(rec->d, b),
        .off_q = 0,
        .off_s = (uint32_t)(scales_at / 8),
    };
    vk_dispatch_push(&q, pc);
    vk_dispatch_bind(&q, b, false, 4, VK_PUSH_WORD(vk_pc_quantize_q8, off_b));
    vk_dispatch_bind_scratch(&q, at, bytes, true);
    vk_groups_1d(rec->d, (uint64_t)cols * (uint64_t)b->ne[0] / 4, 128, q.groups);
    enum ggml_status s = vk_record_dispatch(rec, &q);
    if (s == GGML_STATUS_SUCCESS) vk_derived_note(rec, b, VK_SHADER_QUANTIZE_Q8, at);
    return s;
}

/* The kernel of node's product: mvqd_<type>, or with add (fused, vk-fuse.c) mvqd_<type>_add. */
static enum vk_shader_id mvq_dot_shader(const struct ggml_tensor *node, const struct ggml_tensor *add) {
    return vk_shader_find("mvqd_%s%s", ggml_type_name(node->src[0]->type), add ? "_add" : "");
}

/* Where a product reads b: quantized at scratch offset at (by quantize_q8_record: bytes long, the
 * scales from scales_at on), or, with self, as it is (the kernel quantizes it, MVQ_SELF_Q8). */
struct mvq_b_source {
    bool self;
    VkDeviceSize at, bytes, scales_at;
};

/* The product with the kernel's constants spec[0..n_spec), b from src; with add, its sum with e too. */
static enum ggml_status mvq_dot_product_record(struct vk_rec *rec, const struct ggml_tensor *node, enum vk_shader_id shader,
                                               const uint32_t *spec, int n_spec, const struct mvq_dot_tune *t,
                                               const struct mvq_b_source *src, const struct ggml_tensor *e,
                                               const struct ggml_tensor *add) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, shader);
    memcpy(ds.spec, spec, (size_t)n_spec * sizeof *spec);
    ds.n_spec = n_spec;
    vk_groups_1d(rec->d, (uint64_t)a->ne[1], t->rows, ds.groups);
    if (t->groups && (uint64_t)ds.groups[0] * ds.groups[1] > t->groups) /* the shader strides over the rest */
        vk_groups_1d(rec->d, t->groups, 1, ds.groups);
    ds.groups[2] = (uint32_t)(b->ne[2] * b->ne[3]);
    struct vk_pc_mm pc = vk_pc_matmul(node, vk_addr_unit(a->type), 4);
    pc.off_b = 0;                              /* the quants start the binding (uvec4 units) */
    pc.off_s = (uint32_t)(src->scales_at / 8); /* in (scale, sum) pairs */
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, (uint32_t)vk_addr_unit(a->type), VK_PUSH_WORD(vk_pc_mm, off_a));
    if (src->self) vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_mm, off_b));
    else vk_dispatch_bind_scratch(&ds, src->at, src->bytes, false);
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm, off_d));
    if (add) {
        vk_dispatch_bind(&ds, e, false, 4, VK_PUSH_WORD(vk_pc_mm, off_e));
        vk_dispatch_bind(&ds, add, true, 4, VK_PUSH_WORD(vk_pc_mm, off_o));
    }
    return vk_record_dispatch(rec, &ds);
}

/* Whether the integer-dot kernel `kernel` (mvqd or mvqd_id) of a's type builds with these constants; when
 * it does not, the products take the float kernels from then on (said once). */
static bool mvq_dot_pipeline(struct vk_device *d, const char *kernel, enum ggml_type type, const uint32_t spec[3]) {
    return vk_optional_pipeline(d, vk_shader_find("%s_%s", kernel, ggml_type_name(type)), spec, 3,
                                VK_PATH_MVQ_DOT,
                                "the matrix-vector products take the float kernels");
}

/* b quantized at scratch offset *at (by an earlier product of the segment, or now: status in *st);
 * false when the scratch memory does not hold it, or quantize-q8.comp's pipeline failed (the
 * products then take the float kernels, from then on). */
static bool quantized_b(struct vk_rec *rec, const struct ggml_tensor *b, VkDeviceSize *at, enum ggml_status *st) {
    VkDeviceSize scales_at;
    const VkDeviceSize bytes = mvq_dot_scratch(b, &scales_at);
    *st = GGML_STATUS_SUCCESS;
    if (vk_derived_find(rec, b, VK_SHADER_QUANTIZE_Q8, at)) return true;
    if (!vk_optional_pipeline(rec->d, VK_SHADER_QUANTIZE_Q8, NULL, 0, VK_PATH_QUANTIZE_Q8,
                              "the matrix-vector products take the float kernels"))
        return false;
    if (!vk_scratch_take(rec, bytes, at)) return false;
    *st = quantize_q8_record(rec, b, *at, bytes, scales_at);
    return true;
}

/* mul_mat_id's matrix-vector products: the kernel's tuning for one column (RW rows of a pair per
 * workgroup), as mul_mat's */
static bool mvq_dot_id_choose(const struct vk_device *d, const struct ggml_tensor *node, struct mvq_dot_tune *t) {
    if (!mvq_dot_allowed(d, "mvqd_id", node->src[0], node->src[1])) return false;
    *t = (struct mvq_dot_tune){d->caps.subgroup_size > 32 ? d->caps.subgroup_size : 32, 2, 0};
    while (t->wg > 8 && !mvq_dot_fits(d, t, 1)) t->wg /= 2;
    return mvq_dot_fits(d, t, 1);
}

bool vk_mvq_dot_id_takes(const struct vk_device *d, const struct ggml_tensor *node, VkDeviceSize *scratch) {
    struct mvq_dot_tune t;
    VkDeviceSize scales_at;
    if (!mvq_dot_id_choose(d, node, &t)) return false;
    *scratch = mvq_dot_scratch(node->src[1], &scales_at);
    return true;
}

bool vk_mvq_dot_id_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    struct mvq_dot_tune t;
    VkDeviceSize at, scales_at;
    const VkDeviceSize bytes = mvq_dot_scratch(b, &scales_at);
    if (!mvq_dot_id_choose(rec->d, node, &t)) return false;
    const uint32_t spec[3] = {t.wg, t.rows, 1};
    if (!mvq_dot_pipeline(rec->d, "mvqd_id", as->type, spec) || !quantized_b(rec, b, &at, st)) return false;
    if (*st != GGML_STATUS_SUCCESS) return true;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("mvqd_id_%s", ggml_type_name(as->type)));
    memcpy(ds.spec, spec, sizeof spec);
    ds.n_spec = 3;
    struct vk_pc_mm_id pc = vk_pc_matmul_id(node, vk_addr_unit(as->type));
    pc.off_b = 0;                         /* the quants start the binding (uvec4 units) */
    pc.off_s = (uint32_t)(scales_at / 8); /* in (scale, sum) pairs */
    vk_dispatch_push(&ds, pc);
    vk_groups_1d(rec->d, (uint64_t)as->ne[1], t.rows, ds.groups);
    ds.groups[2] = (uint32_t)(ids->ne[0] * ids->ne[1]);
    vk_dispatch_bind(&ds, as, false, (uint32_t)vk_addr_unit(as->type),
                     VK_PUSH_WORD(vk_pc_mm_id, off_a));
    vk_dispatch_bind_scratch(&ds, at, bytes, false);
    vk_dispatch_bind(&ds, ids, false, 4, VK_PUSH_WORD(vk_pc_mm_id, off_i));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_mm_id, off_d));
    *st = vk_dispatch_bind_check(rec, &ds, node) < 0 ? GGML_STATUS_FAILED : vk_record_dispatch(rec, &ds);
    return true;
}

bool vk_mvq_dot_takes(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b, VkDeviceSize *scratch) {
    struct mvq_dot_tune t;
    VkDeviceSize scales_at;
    if (!mvq_dot_choose(d, a, b, &t)) return false;
    *scratch = mvq_dot_scratch(b, &scales_at);
    return true;
}

bool vk_mvq_dot_add_takes(const struct ggml_tensor *node, const struct ggml_tensor *add) {
    return vk_shader_present(mvq_dot_shader(node, add));
}

/* ------------------------------------------- products that quantize b themselves
 *
 * In a decode graph every product's b is a fresh activation vector, so each one (or each group
 * of products reading the same vector) took a quantize-q8.comp dispatch and a barrier before the
 * product: 65 of a Q4_0 llama decode graph's 294 dispatches on the H200, a few microseconds each
 * whatever their size.  The MVQ_SELF_Q8 kernels (mvqdq_<type>, mvq-dot.glsl) take b as f32 and
 * quantize their batch of it into shared memory before their rows, with the same rounding: every
 * workgroup quantizes the whole vector again, which costs less than the dispatch and barrier
 * saved while the vector is short and the product small.  A fusion (GGMLC_VK_FUSE=0: the
 * separate quantization), taken where the quantized columns fit MVQ_SELF_SHARED_MAX bytes of
 * shared memory and the weights MVQ_SELF_WEIGHTS_MAX values ($GGMLC_VK_MVQ_SELF=W: W; 0 never).
 * The repeated quantization grows with the workgroups times k, so with the weights' size: in
 * llama.cpp's decoding on an H200 (session 22) a 100M model (768 wide, 2048 FFN: at most 1.6M
 * weights a product) ran Q4_0 1.11-1.18 ms a token with it and 1.26 without, a 1.1B one (2048
 * wide, 5632 FFN, 4.2M-11.5M) 2.59-2.61 ms with it and 1.91-2.01 without. */
#define MVQ_SELF_SHARED_MAX 16384
#define MVQ_SELF_WEIGHTS_MAX ((uint64_t)1 << 21)

/* mvqdq_<type>, or with add mvqdq_<type>_add */
static enum vk_shader_id mvq_self_shader(const struct ggml_tensor *node, const struct ggml_tensor *add) {
    return vk_shader_find("mvqdq_%s%s", ggml_type_name(node->src[0]->type), add ? "_add" : "");
}

static bool mvq_self_fits(const struct vk_device *d, const struct ggml_tensor *node, const struct ggml_tensor *add,
                          const struct mvq_dot_tune *t) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const uint64_t n = (uint64_t)b->ne[1], quantized = (uint64_t)b->ne[0] / 32 * 40 * n; /* 32 quants + (scale, sum) */
    const struct vk_env_value *env = &vk_tuning()->mvq_self;
    const uint64_t weights_max = env->set ? (uint64_t)(env->number > 0 ? env->number : 0) : MVQ_SELF_WEIGHTS_MAX;
    return !vk_tuning()->fuse_off && !vk_path_disabled(d, VK_PATH_FUSE) && b->nb[0] == 4 &&
           quantized <= MVQ_SELF_SHARED_MAX && (uint64_t)a->ne[0] * (uint64_t)a->ne[1] <= weights_max &&
           quantized + 4ull * (t->wg / 8) * t->rows * n <= d->props.limits.maxComputeSharedMemorySize &&
           vk_shader_present(mvq_self_shader(node, add));
}

/* The product on the kernel that quantizes b itself; false, with nothing recorded, when it does not
 * take it or its pipeline fails (then no fused kernel is used from then on). */
static bool mvq_self_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct mvq_dot_tune *t,
                            const struct ggml_tensor *e, const struct ggml_tensor *add, enum ggml_status *st) {
    const struct ggml_tensor *b = node->src[1];
    const uint32_t spec[4] = {t->wg, t->rows, (uint32_t)b->ne[1], (uint32_t)(b->ne[0] / 32)};
    const enum vk_shader_id shader = mvq_self_shader(node, add);
    if (!mvq_self_fits(rec->d, node, add, t) || !vk_optional_pipeline(rec->d, shader, spec, 4, VK_PATH_FUSE, "unfused nodes"))
        return false;
    const struct mvq_b_source src = {.self = true};
    *st = mvq_dot_product_record(rec, node, shader, spec, 4, t, &src, e, add);
    return true;
}

bool vk_mvq_dot_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct ggml_tensor *e,
                       const struct ggml_tensor *add, enum ggml_status *st) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct mvq_dot_tune t;
    struct mvq_b_source src = {.self = false};
    VkDeviceSize made;
    if (!mvq_dot_choose(rec->d, a, b, &t)) return false;
    /* b quantized already (by an earlier product or the kernel that made it): read that form */
    if (!vk_derived_find(rec, b, VK_SHADER_QUANTIZE_Q8, &made) && mvq_self_record(rec, node, &t, e, add, st)) return true;
    src.bytes = mvq_dot_scratch(b, &src.scales_at);
    const uint32_t spec[3] = {t.wg, t.rows, (uint32_t)b->ne[1]};
    if (!mvq_dot_pipeline(rec->d, "mvqd", a->type, spec)) return false;
    if (add && !vk_optional_pipeline(rec->d, mvq_dot_shader(node, add), spec, 3, VK_PATH_FUSE, "unfused nodes"))
        return false;
    if (!quantized_b(rec, b, &src.at, st)) return false;
    if (*st == GGML_STATUS_SUCCESS) *st = mvq_dot_product_record(rec, node, mvq_dot_shader(node, add), spec, 3, &t, &src, e, add);
    return true;
}

/* ------------------------------------------- results quantized by the kernel that makes them
 *
 * With weights past MVQ_SELF_WEIGHTS_MAX each activation vector a product reads took a
 * quantize-q8.comp dispatch and a barrier: in a 1.1B llama's decode graph (2048 wide) the q, k, v
 * products' norm, the up and gate products' norm, the down product's GLU and the output
 * projection's attention, 88 dispatches of 4.4 us a token on an H200 (session 22).  The fused
 * norm and mul (rows_mul_q8_f32), the GLU (glu_q8_f32) and decode attention (fattn_vec_*_q8)
 * write that form as well when a later product of the segment reads it; the products then find it
 * (vk_derived_find), the small ones too, whose workgroups would each quantize the whole vector
 * themselves.  llama.cpp's decoding on an H200 (session 23, three rounds), ms a token before ->
 * after: 1.1B Q4_0 1.83-1.87 -> 1.52-1.63, Q8_0 1.96-2.11 -> 1.63-1.69; 100M (small products
 * only) Q4_0 1.08-1.15 -> 0.98-1.03, Q8_0 1.09-1.15 -> 0.99-1.02. */

/* Whether product node reads b quantized to Q8_0: in scratch memory (quantize_q8_record), or,
 * taking the kernels that quantize it themselves, from scratch memory where it is there. */
static bool reads_q8(const struct vk_device *d, const struct ggml_tensor *node) {
    struct mvq_dot_tune t;
    if (node->op == GGML_OP_MUL_MAT_ID) return mvq_dot_id_choose(d, node, &t);
    return node->op == GGML_OP_MUL_MAT && mvq_dot_choose(d, node->src[0], node->src[1], &t);
}

/* Whether product b, which a product reads, is t or t's whole contiguous bytes seen in another
 * shape (a reshape of an attention's heads into one vector): the quantized form, laid out by b's
 * rows, is then t's values in order, 4 to a word and 32 to a pair. */
static bool same_values(const struct ggml_tensor *b, const struct ggml_tensor *t) {
    if (b == t) return true;
    return b->view_src == t && b->view_offs == 0 && b->type == t->type && ggml_nbytes(b) == ggml_nbytes(t) &&
           ggml_is_contiguous(b) && ggml_is_contiguous(t);
}

bool vk_q8_result_plan(struct vk_rec *rec, const struct ggml_tensor *t, struct vk_q8_result *q) {
    if (vk_tuning()->fuse_off || vk_path_disabled(rec->d, VK_PATH_Q8_RESULT) || t->type != GGML_TYPE_F32)
        return false;
    q->as = NULL;
    for (int i = 0; i < rec->n_rest && !q->as; i++) {
        const struct ggml_tensor *node = rec->rest[i], *b = node->src[1];
        if (b && same_values(b, t) && b->ne[0] % 32 == 0 && reads_q8(rec->d, node)) q->as = b;
    }
    if (!q->as) return false;
    q->bytes = mvq_dot_scratch(q->as, &q->scales_at);
    return vk_scratch_take(rec, q->bytes, &q->at);
}

void vk_q8_result_note(struct vk_rec *rec, const struct vk_q8_result *q) {
    vk_derived_note(rec, q->as, VK_SHADER_QUANTIZE_Q8, q->at);
}
