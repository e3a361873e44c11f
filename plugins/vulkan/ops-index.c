/*
 * ops-index.c - moving rows and blocks: get_rows, get_rows_back, set_rows,
 * concat, pad; and sorting rows: argsort, top_k.
 */
#include "vk-impl.h"

static bool float_ok(const struct vk_device *d, const struct ggml_tensor *t) {
    return vk_float_code(t->type) >= 0 && vk_type_ok(d, t->type) && vk_shape_fits(t);
}

/* Integer tensors (indices) in units of int32 words. */
static bool index_fits(const struct ggml_tensor *t) {
    if (t->type != GGML_TYPE_I32 && t->type != GGML_TYPE_I64) return false;
    const size_t ts = ggml_type_size(t->type);
    for (int i = 0; i < 4; i++)
        if (t->nb[i] % ts != 0 || t->nb[i] / ts > UINT32_MAX / 2 || t->ne[i] > UINT32_MAX) return false;
    return true;
}

/* ------------------------------------------------------------ get_rows */

static bool get_rows_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *idx = node->src[1];
    const bool quant_ok = vk_quant_readable(d, a);
    const bool ints = a->type == GGML_TYPE_I32 && node->type == GGML_TYPE_I32 && vk_shape_fits(a); /* moved, not converted */
    return (((float_ok(d, a) || quant_ok) && node->type == GGML_TYPE_F32) || ints) && idx->type == GGML_TYPE_I32 && index_fits(idx) &&
           vk_shape_fits(node) && a->ne[2] == idx->ne[1] && a->ne[3] == idx->ne[2];
}

static enum ggml_status get_rows_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *idx = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("getrows_%s", ggml_type_name(a->type)));
    const size_t ta = vk_addr_unit(a->type);
    struct vk_pc_getrows pc = {
        .nb00 = (uint32_t)(a->nb[0] / ta),
        .nb01 = (uint32_t)(a->nb[1] / ta),
        .nb02 = (uint32_t)(a->nb[2] / ta),
        .nb03 = (uint32_t)(a->nb[3] / ta),
        .nbi0 = (uint32_t)(idx->nb[0] / 4),
        .nbi1 = (uint32_t)(idx->nb[1] / 4),
        .nbi2 = (uint32_t)(idx->nb[2] / 4),
        .rows_a = (uint32_t)a->ne[1],
    };
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ta, VK_PUSH_WORD(vk_pc_getrows, off_a));
    vk_dispatch_bind(&ds, idx, false, 4, VK_PUSH_WORD(vk_pc_getrows, off_i));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_getrows, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------- get_rows_back */

/* Rows of d per invocation: a power of two up to 64, as small as leaves at least 32768 invocations
 * (each scans every index, so fewer rows each cost nothing extra; the pipeline is built per value). */
static uint32_t rows_back_chunk(int64_t ne0, int64_t n_rows) {
    uint32_t chunk = 1;
    while (chunk < 64 && ne0 * ((n_rows + 2 * chunk - 1) / (2 * chunk)) >= 32768) chunk *= 2;
    return chunk;
}

/* dy [E, n] (f32) scattered by idx [n] (I32) into d [E, R] (f32), summing repeated rows. */
static bool get_rows_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *idx = node->src[1];
    return vk_float_code(dy->type) >= 0 && vk_type_ok(d, dy->type) && idx->type == GGML_TYPE_I32 && node->type == GGML_TYPE_F32 &&
           ggml_is_matrix(dy) && ggml_is_vector(idx) && ggml_is_matrix(node) && dy->ne[0] == node->ne[0] && dy->ne[1] >= idx->ne[0] &&
           vk_shape_fits(dy) && index_fits(idx) && vk_shape_fits(node);
}

static enum ggml_status get_rows_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *idx = node->src[1];
    struct vk_dispatch ds;
    const size_t ty = ggml_type_size(dy->type);
    vk_dispatch_init(&ds, vk_shader_find("get_rows_back_%s", ggml_type_name(dy->type)));
    const uint32_t chunk = rows_back_chunk(node->ne[0], node->ne[1]);
    ds.spec[0] = chunk;
    ds.n_spec = 1;
    const struct vk_pc_get_rows_back pc = {
        .ne0 = (uint32_t)node->ne[0],
        .n_rows = (uint32_t)node->ne[1],
        .n_idx = (uint32_t)idx->ne[0],
        .ny0 = (uint32_t)(dy->nb[0] / ty),
        .ny1 = (uint32_t)(dy->nb[1] / ty),
        .ni0 = (uint32_t)(idx->nb[0] / 4),
        .nd0 = (uint32_t)(node->nb[0] / 4),
        .nd1 = (uint32_t)(node->nb[1] / 4),
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, dy, false, (uint32_t)ty, VK_PUSH_WORD(vk_pc_get_rows_back, off_dy));
    vk_dispatch_bind(&ds, idx, false, 4, VK_PUSH_WORD(vk_pc_get_rows_back, off_i));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_get_rows_back, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    const uint64_t n_chunks = ((uint64_t)node->ne[1] + chunk - 1) / chunk;
    vk_groups_1d(rec->d, (uint64_t)node->ne[0] * n_chunks, 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ set_rows */

/* A destination in a 32-value block format that cpy-quant.comp writes: whole blocks per
 * row, rows on 16-bit words (quantize.glsl). */
static bool quant_dest_ok(const struct vk_device *d, const struct ggml_tensor *t) {
    const enum ggml_type q = t->type;
    if (!(q == GGML_TYPE_Q4_0 || q == GGML_TYPE_Q4_1 || q == GGML_TYPE_Q5_0 || q == GGML_TYPE_Q5_1 || q == GGML_TYPE_Q8_0 ||
          q == GGML_TYPE_IQ4_NL))
        return false;
    if (!d->caps.storage16 || t->ne[0] % 32 != 0 || t->nb[0] != ggml_type_size(q)) return false;
    for (int i = 0; i < 4; i++)
        if (t->nb[i] % 2 != 0 || t->nb[i] / 2 > UINT32_MAX || t->ne[i] > UINT32_MAX) return false;
    return ggml_nelements(t) <= UINT32_MAX;
}

/* cpy-quant.comp's push constants: the float source's shape, then d's rows (in blocks, words);
 * the rest 0 (zero: the zero quantize.glsl hides products behind). */
static struct vk_pc_cpy_quant quant_shapes(const struct ggml_tensor *a,
                                           const struct ggml_tensor *rows,
                                           const struct ggml_tensor *d) {
    struct vk_pc_cpy_quant pc = {
        .nblk0 = (uint32_t)(rows->ne[0] / 32),
        .ne1 = (uint32_t)rows->ne[1],
        .ne2 = (uint32_t)rows->ne[2],
        .ne3 = (uint32_t)rows->ne[3],
        .nb1 = (uint32_t)(d->nb[1] / 2),
        .nb2 = (uint32_t)(d->nb[2] / 2),
        .nb3 = (uint32_t)(d->nb[3] / 2),
    };
    VK_PUSH_SHAPE(pc, 0, a);
    return pc;
}

/* Rows of whole blocks whose strides are whole 16-bit words (cpy-words.comp). */
static bool block_rows_in_words(const struct ggml_tensor *t) {
    if (!ggml_is_quantized(t->type) || ggml_type_size(t->type) % 2 != 0 || t->nb[0] != ggml_type_size(t->type)) return false;
    for (int i = 0; i < 4; i++)
        if (t->nb[i] % 2 != 0 || t->nb[i] / 2 > UINT32_MAX || t->ne[i] > UINT32_MAX) return false;
    return ggml_row_size(t->type, t->ne[0]) / 2 * ggml_nrows(t) <= UINT32_MAX;
}

/* A block-format tensor copied to one of its type and row length: its rows' words moved. */
static bool cpy_same_blocks(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return d->caps.storage16 && a->type == node->type && a->ne[0] == node->ne[0] && ggml_nrows(a) == ggml_nrows(node) &&
           block_rows_in_words(a) && block_rows_in_words(node);
}

static enum ggml_status cpy_words_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("cpy_words"));
    const struct vk_pc_cpy_words pc = {
        .ne0 = (uint32_t)(ggml_row_size(a->type, a->ne[0]) / 2),
        .ne1 = (uint32_t)node->ne[1],
        .ne2 = (uint32_t)node->ne[2],
        .ne3 = (uint32_t)node->ne[3],
        .nb01 = (uint32_t)(a->nb[1] / 2),
        .nb02 = (uint32_t)(a->nb[2] / 2),
        .nb03 = (uint32_t)(a->nb[3] / 2),
        .nb1 = (uint32_t)(node->nb[1] / 2),
        .nb2 = (uint32_t)(node->nb[2] / 2),
        .nb3 = (uint32_t)(node->nb[3] / 2),
        .ne01 = (uint32_t)a->ne[1],
        .ne02 = (uint32_t)a->ne[2],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 2, VK_PUSH_WORD(vk_pc_cpy_words, off_a));
    vk_dispatch_bind(&ds, node, true, 2, VK_PUSH_WORD(vk_pc_cpy_words, off_d));
    vk_groups_1d(rec->d, (uint64_t)pc.ne0 * ggml_nrows(a), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* A block-format source read by dq() (cpy-dequant.comp). */
static bool quant_source_ok(const struct vk_device *d, const struct ggml_tensor *a) {
    return vk_quant_readable(d, a) && ggml_nelements(a) <= UINT32_MAX;
}

bool vk_cpy_quant_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (node->op != GGML_OP_CPY && node->op != GGML_OP_DUP && node->op != GGML_OP_CONT) return false;
    if (cpy_same_blocks(d, node)) return true;
    if (ggml_nelements(a) != ggml_nelements(node)) return false;
    if (quant_source_ok(d, a)) return node->type == GGML_TYPE_F32 && vk_shape_fits(node); /* dequantized (the CPU's only target) */
    return float_ok(d, a) && quant_dest_ok(d, node);                                     /* quantized from f32, f16 or bf16 */
}

/* cpy-dequant.comp's dispatch of source a (its shape, row strides in vk_addr_unit, bound first)
 * into a destination of shape dst, one value per invocation; the destination's binding is the
 * caller's. */
static void dequant_dispatch_init(struct vk_rec *rec, struct vk_dispatch *ds,
                                  enum vk_shader_id shader, const struct ggml_tensor *a,
                                  const struct vk_shape *dst) {
    const size_t unit = vk_addr_unit(a->type);
    vk_dispatch_init(ds, shader);
    const struct vk_pc_cpy_dequant pc = {
        .ne00 = (uint32_t)a->ne[0],
        .ne01 = (uint32_t)a->ne[1],
        .ne02 = (uint32_t)a->ne[2],
        .ne03 = (uint32_t)a->ne[3],
        .nb01 = (uint32_t)(a->nb[1] / unit),
        .nb02 = (uint32_t)(a->nb[2] / unit),
        .nb03 = (uint32_t)(a->nb[3] / unit),
        .ne0 = dst->ne[0],
        .ne1 = dst->ne[1],
        .ne2 = dst->ne[2],
        .ne3 = dst->ne[3],
        .nb0 = dst->nb[0],
        .nb1 = dst->nb[1],
        .nb2 = dst->nb[2],
        .nb3 = dst->nb[3],
    };
    vk_dispatch_push(ds, pc);
    vk_dispatch_bind(ds, a, false, (uint32_t)unit, VK_PUSH_WORD(vk_pc_cpy_dequant, off_a));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(a), 256, ds->groups);
}

/* A block format into f32 (node, any shape of as many values). */
static enum ggml_status cpy_dequant_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    const struct vk_shape dst = vk_shape_of(node);
    dequant_dispatch_init(
        rec, &ds, vk_shader_find("cpy_%s_%s", ggml_type_name(a->type), ggml_type_name(node->type)),
        a, &dst);
    vk_dispatch_bind(&ds, node, true, (uint32_t)ggml_type_size(node->type),
                     VK_PUSH_WORD(vk_pc_cpy_dequant, off_d));
    return vk_record_dispatch(rec, &ds);
}

enum ggml_status vk_dequant_f16_record(struct vk_rec *rec, const struct ggml_tensor *a, VkDeviceSize at) {
    struct vk_dispatch ds;
    const struct vk_shape dst = {
        /* contiguous f16 */
        .ne = {(uint32_t)a->ne[0], (uint32_t)a->ne[1], (uint32_t)a->ne[2], (uint32_t)a->ne[3]},
        .nb = {1, (uint32_t)a->ne[0], (uint32_t)(a->ne[0] * a->ne[1]),
               (uint32_t)(a->ne[0] * a->ne[1] * a->ne[2])},
    };
    dequant_dispatch_init(rec, &ds, vk_shader_find("dequant_%s_f16", ggml_type_name(a->type)), a,
                          &dst);
    vk_dispatch_bind_scratch(&ds, at, vk_f16_bytes(a), true);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(a) / 8, 256, ds.groups); /* 8 values per invocation */
    return vk_record_dispatch(rec, &ds);
}

enum ggml_status vk_cpy_quant_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (a->type == node->type) return cpy_words_record(rec, node);
    if (vk_is_block_quant(a->type)) return cpy_dequant_record(rec, node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("cpy_%s_%s", ggml_type_name(a->type), ggml_type_name(node->type)));
    const struct vk_pc_cpy_quant pc = quant_shapes(a, node, node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, (uint32_t)ggml_type_size(a->type),
                     VK_PUSH_WORD(vk_pc_cpy_quant, off_a));
    vk_dispatch_bind(&ds, node, true, 2, VK_PUSH_WORD(vk_pc_cpy_quant, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node) / 32, 64, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

static bool set_rows_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *b = node->src[0], *idx = node->src[1]; /* node views the destination */
    return b && idx && b->type == GGML_TYPE_F32 && vk_shape_fits(b) && (float_ok(d, node) || quant_dest_ok(d, node)) &&
           index_fits(idx) && idx->ne[1] > 0 && idx->ne[2] > 0 && b->ne[2] % idx->ne[1] == 0 && b->ne[3] % idx->ne[2] == 0 &&
           b->ne[1] == idx->ne[0] && b->ne[0] == node->ne[0];
}

/* set_rows into a block format: one invocation quantizes a block of b into its row. */
static enum ggml_status set_rows_quant_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *b = node->src[0], *idx = node->src[1];
    const bool i64 = idx->type == GGML_TYPE_I64;
    const size_t ti = ggml_type_size(idx->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("setrows_%s_%s", ggml_type_name(node->type), i64 ? "i64" : "i32"));
    struct vk_pc_cpy_quant pc = quant_shapes(b, b, node);
    pc.nei1 = (uint32_t)idx->ne[1], pc.nei2 = (uint32_t)idx->ne[2];
    pc.nbi0 = (uint32_t)(idx->nb[0] / ti), pc.nbi1 = (uint32_t)(idx->nb[1] / ti),
    pc.nbi2 = (uint32_t)(idx->nb[2] / ti);
    pc.rows_d = (uint32_t)node->ne[1];
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_cpy_quant, off_a));
    vk_dispatch_bind(&ds, idx, false, (uint32_t)ti, VK_PUSH_WORD(vk_pc_cpy_quant, off_i));
    vk_dispatch_bind(&ds, node, true, 2, VK_PUSH_WORD(vk_pc_cpy_quant, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(b) / 32, 64, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

static enum ggml_status set_rows_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *b = node->src[0], *idx = node->src[1]; /* node views the destination */
    if (vk_float_code(node->type) < 0) return set_rows_quant_record(rec, node);
    const bool i64 = idx->type == GGML_TYPE_I64;
    struct vk_dispatch ds;
    vk_dispatch_init(
        &ds, vk_shader_find("setrows_%s_%s", ggml_type_name(node->type), i64 ? "i64" : "i32"));
    const size_t ti = ggml_type_size(idx->type), td = ggml_type_size(node->type);
    struct vk_pc_setrows pc = {
        .nei1 = (uint32_t)idx->ne[1],
        .nei2 = (uint32_t)idx->ne[2],
        .nbi0 = (uint32_t)(idx->nb[0] / ti),
        .nbi1 = (uint32_t)(idx->nb[1] / ti),
        .nbi2 = (uint32_t)(idx->nb[2] / ti),
        .nb0 = (uint32_t)(node->nb[0] / td),
        .nb1 = (uint32_t)(node->nb[1] / td),
        .nb2 = (uint32_t)(node->nb[2] / td),
        .nb3 = (uint32_t)(node->nb[3] / td),
        .rows_d = (uint32_t)node->ne[1],
    };
    VK_PUSH_SHAPE(pc, 1, b);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_setrows, off_b));
    /* offset in index units; the shader doubles it for i64 */
    vk_dispatch_bind(&ds, idx, false, (uint32_t)ti, VK_PUSH_WORD(vk_pc_setrows, off_i));
    vk_dispatch_bind(&ds, node, true, (uint32_t)td, VK_PUSH_WORD(vk_pc_setrows, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    vk_groups_1d(rec->d, ggml_nelements(b), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* -------------------------------------------------------------- concat */

static bool concat_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = ggmlc_op_param_i32(node, 0);
    const bool ints = a->type == GGML_TYPE_I32 && vk_shape_fits(a) && vk_shape_fits(b) && vk_shape_fits(node); /* moved as they are */
    return (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_I32) && b->type == a->type && node->type == a->type &&
           (ints || (float_ok(d, a) && float_ok(d, b) && float_ok(d, node))) && dim >= 0 && dim < 4;
}

static enum ggml_status concat_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const size_t ts = ggml_type_size(a->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("concat_%s", ggml_type_name(a->type)));
    const struct vk_shape sb = vk_shape_of(b);
    struct vk_pc_concat pc = {
        .nb10 = sb.nb[0],
        .nb11 = sb.nb[1],
        .nb12 = sb.nb[2],
        .nb13 = sb.nb[3],
        .dim = (uint32_t)ggmlc_op_param_i32(node, 0),
    };
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ts, VK_PUSH_WORD(vk_pc_concat, off_a));
    vk_dispatch_bind(&ds, b, false, ts, VK_PUSH_WORD(vk_pc_concat, off_b));
    vk_dispatch_bind(&ds, node, true, ts, VK_PUSH_WORD(vk_pc_concat, off_d));
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ----------------------------------------------------------------- pad */

/* struct ggmlc_pad_params; circular padding is not supported here. */
static bool pad_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if ((a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) || node->type != a->type || !float_ok(d, a) || !float_ok(d, node))
        return false;
    const struct ggmlc_pad_params p = ggmlc_pad_params_of(node);
    if (p.circular) return false;
    for (int i = 0; i < 4; i++) {
        const int32_t lp = p.lp[i], rp = p.rp[i];
        if (lp < 0 || rp < 0 || node->ne[i] != a->ne[i] + lp + rp) return false;
    }
    return true;
}

static enum ggml_status pad_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const size_t ts = ggml_type_size(a->type);
    const struct ggmlc_pad_params p = ggmlc_pad_params_of(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("pad_%s", ggml_type_name(a->type)));
    struct vk_pc_pad pc = {
        .lp0 = (uint32_t)p.lp[0],
        .lp1 = (uint32_t)p.lp[1],
        .lp2 = (uint32_t)p.lp[2],
        .lp3 = (uint32_t)p.lp[3],
    };
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ts, VK_PUSH_WORD(vk_pc_pad, off_a));
    vk_dispatch_bind(&ds, node, true, ts, VK_PUSH_WORD(vk_pc_pad, off_d));
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------ argsort, top_k */

#define SORT_MAX 2048   /* a row sorted in shared memory: 16 KiB of keys and indices */
#define SELECT_MAX_K 1024 /* top_k of longer rows: k selection rounds over the row */

#define SELECT_BLOCK 256  /* invocations per row in topk-select.comp */

/* Loop iterations of one selection round: a pass over the row's share of an invocation,
 * the reduction over the workgroup, the round itself. */
static uint32_t select_round_iterations(const struct ggml_tensor *a) {
    uint32_t steps = 0;
    for (uint32_t s = SELECT_BLOCK / 2; s > 0; s >>= 1) steps++;
    return (uint32_t)((a->ne[0] + SELECT_BLOCK - 1) / SELECT_BLOCK) + steps + 1;
}

/* top_k of a row too long to sort: selected (topk-select.comp), one round at least per dispatch. */
static bool top_k_by_selection(const struct ggml_tensor *node) {
    return node->op == GGML_OP_TOP_K && node->src[0]->ne[0] > SORT_MAX && node->ne[0] <= SELECT_MAX_K &&
           select_round_iterations(node->src[0]) <= VK_LOOP_BUDGET;
}

static bool sort_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const bool fits = (a->ne[0] <= SORT_MAX && d->props.limits.maxComputeSharedMemorySize >= SORT_MAX * 8) || top_k_by_selection(node);
    return a->type == GGML_TYPE_F32 && fits && vk_shape_fits(a) && node->type == GGML_TYPE_I32 &&
           node->nb[0] == 4 && node->ne[0] <= a->ne[0] && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] &&
           node->ne[3] == a->ne[3];
}

static enum ggml_status top_k_select_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("topk_select_f32"));
    ds.spec[0] = SELECT_BLOCK;
    ds.n_spec = 1;
    struct vk_pc_topk_select pc = {
        .k = (uint32_t)node->ne[0],
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
        .nb3 = (uint32_t)(node->nb[3] / 4),
    };
    VK_PUSH_SHAPE(pc, 0, a);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_topk_select, off_a));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_topk_select, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nrows(a), 1, ds.groups);
    /* the k rounds in dispatches within the loop budget; each resumes from the index its
     * predecessor wrote last */
    return vk_record_dispatch_chunks(rec, &ds, (uint32_t)node->ne[0],
                                     VK_LOOP_BUDGET / select_round_iterations(a),
                                     VK_PUSH_WORD(vk_pc_topk_select, j_begin));
}

static enum ggml_status sort_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (top_k_by_selection(node)) return top_k_select_record(rec, node);
    uint32_t npad = 1;
    while (npad < a->ne[0]) npad <<= 1;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("argsort_f32"));
    struct vk_pc_argsort pc = {
        .ne0 = (uint32_t)node->ne[0],
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
        .nb3 = (uint32_t)(node->nb[3] / 4),
        .npad = npad,
        .desc = node->op == GGML_OP_TOP_K || ggmlc_op_param_i32(node, 0) == GGML_SORT_ORDER_DESC,
    };
    VK_PUSH_SHAPE(pc, 0, a);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_argsort, off_a));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_argsort, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nrows(a), 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_index_register(struct vk_op_kernel *t) {
    vk_ops_window_register(t);
    t[GGML_OP_ARGSORT] = (struct vk_op_kernel){sort_supports, sort_record};
    t[GGML_OP_TOP_K] = (struct vk_op_kernel){sort_supports, sort_record};
    t[GGML_OP_GET_ROWS] = (struct vk_op_kernel){get_rows_supports, get_rows_record};
    t[GGML_OP_GET_ROWS_BACK] = (struct vk_op_kernel){get_rows_back_supports, get_rows_back_record};
    t[GGML_OP_SET_ROWS] = (struct vk_op_kernel){set_rows_supports, set_rows_record};
    t[GGML_OP_CONCAT] = (struct vk_op_kernel){concat_supports, concat_record};
    t[GGML_OP_PAD] = (struct vk_op_kernel){pad_supports, pad_record};
}
