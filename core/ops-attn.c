/*
 * ops-attn.c - constructors of fused attention: flash_attn_ext (with its
 * precision and sinks setters) and flash_attn_back.
 *
 * flash_attn_ext op_params: f32 [0] scale [1] max_bias [2] logit_softcap, i32 [3] prec;
 * sources q, k, v, mask, sinks.
 */
#include "ggml-impl.h"

struct attn_strs {
    char q[GGMLC_SHAPE_STR], k[GGMLC_SHAPE_STR], v[GGMLC_SHAPE_STR], m[GGMLC_SHAPE_STR];
};

static bool check_attn_mask(const struct ggml_tensor *q, const struct ggml_tensor *k, const struct ggml_tensor *mask) {
    struct attn_strs s;
    if (mask->type != GGML_TYPE_F16 && mask->type != GGML_TYPE_F32) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, "ggml_flash_attn_ext", "mask %s must be f16 or f32", ggmlc__shape_str(mask, s.m));
        return false;
    }
    if (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1] || mask->ne[2] == 0 || mask->ne[3] == 0 ||
        q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0) {
        ggmlc__op_fail(
            GGMLC_ERR_SHAPE, "ggml_flash_attn_ext",
            "mask %s does not fit q %s and k %s (need [n_kv, >= n_batch, heads dividing, ne3 dividing])",
            ggmlc__shape_str(mask, s.m), ggmlc__shape_str(q, s.q), ggmlc__shape_str(k, s.k));
        return false;
    }
    return true;
}

/* K and V may be float or any block type (KV caches in Q8_0, Q4_0, ...), as in ggml; a
 * backend that cannot dequantize the type declines the node in supports_op. */
static bool kv_type_ok(enum ggml_type type) { return ggmlc__is_float_type(type) || ggml_is_quantized(type); }

static bool check_attn(const struct ggml_tensor *q, const struct ggml_tensor *k, const struct ggml_tensor *v) {
    struct attn_strs s;
    if (!ggmlc__is_float_type(q->type) || !kv_type_ok(k->type) || !kv_type_ok(v->type)) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, "ggml_flash_attn_ext", "q %s must be float, k %s and v %s float or quantized",
                      ggmlc__shape_str(q, s.q), ggmlc__shape_str(k, s.k), ggmlc__shape_str(v, s.v));
        return false;
    }
    if (k->ne[0] != q->ne[0] || v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2] || k->ne[2] == 0 || q->ne[2] % k->ne[2] != 0 ||
        k->ne[3] == 0 || v->ne[3] != k->ne[3] || q->ne[3] % k->ne[3] != 0) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_flash_attn_ext",
                      "q %s, k %s, v %s do not fit (need q [Dk, n_batch, n_head, B], k [Dk, n_kv, n_head_kv, Bkv], "
                      "v [Dv, n_kv, n_head_kv, Bkv], n_head %% n_head_kv == 0, B %% Bkv == 0)",
                      ggmlc__shape_str(q, s.q), ggmlc__shape_str(k, s.k), ggmlc__shape_str(v, s.v));
        return false;
    }
    return true;
}

struct ggml_tensor *ggml_flash_attn_ext(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
                                        struct ggml_tensor *v, struct ggml_tensor *mask, float scale, float max_bias,
                                        float logit_softcap) {
    GGMLC_CHECK_SRC(q);
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    if (!check_attn(q, k, v) || (mask && !check_attn_mask(q, k, mask))) return NULL;
    if (!(max_bias >= 0.0f)) {
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "max_bias = %g must be >= 0", (double)max_bias);
    }
    /* the result is permuted: one row of Dv values per (head, query) */
    const int64_t ne[4] = {v->ne[0], q->ne[2], q->ne[1], q->ne[3]};
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_FLASH_ATTN_EXT, q, k, v);
    r->src[3] = mask;
    ggmlc__set_op_params_f32(r, 0, scale);
    ggmlc__set_op_params_f32(r, 1, max_bias);
    ggmlc__set_op_params_f32(r, 2, logit_softcap);
    ggmlc__set_op_params_i32(r, 3, GGML_PREC_DEFAULT);
    return r;
}

static bool is_flash_attn_node(const char *func, const struct ggml_tensor *a) {
    if (a && a->op == GGML_OP_FLASH_ATTN_EXT) return true;
    ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "%s is not a flash_attn_ext node", a ? ggml_op_name(a->op) : "NULL");
    return false;
}

void ggml_flash_attn_ext_set_prec(struct ggml_tensor *a, enum ggml_prec prec) {
    if (is_flash_attn_node(__func__, a)) ggmlc__set_op_params_i32(a, 3, (int32_t)prec);
}

enum ggml_prec ggml_flash_attn_ext_get_prec(const struct ggml_tensor *a) {
    return is_flash_attn_node(__func__, a) ? (enum ggml_prec)ggmlc__get_op_params_i32(a, 3) : GGML_PREC_DEFAULT;
}

void ggml_flash_attn_ext_add_sinks(struct ggml_tensor *a, struct ggml_tensor *sinks) {
    if (!is_flash_attn_node(__func__, a)) return;
    if (sinks && (sinks->type != GGML_TYPE_F32 || ggml_nelements(sinks) != a->src[0]->ne[2])) {
        char ss[GGMLC_SHAPE_STR], sq[GGMLC_SHAPE_STR];
        ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "sinks %s must be f32 with one value per head of q %s",
                      ggmlc__shape_str(sinks, ss), ggmlc__shape_str(a->src[0], sq));
        return;
    }
    a->src[4] = sinks;
}

/* Gradients of softmax(q k^T / sqrt(D)) v, with v given transposed ([n_kv, D]).
 * The result packs dq, dk, dv (each in its operand's layout) into one f32 vector,
 * each part starting at a GGML_MEM_ALIGN boundary, exactly as ggml does. */
struct ggml_tensor *ggml_flash_attn_back(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
                                         struct ggml_tensor *v, struct ggml_tensor *d, bool masked) {
    GGMLC_CHECK_SRC(q);
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(d);
    struct attn_strs s;
    const int64_t D = q->ne[0], N = q->ne[1], M = k->ne[1];
    if (q->type != GGML_TYPE_F32 || k->type != GGML_TYPE_F32 || v->type != GGML_TYPE_F32 || d->type != GGML_TYPE_F32) {
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "q %s, k %s, v %s and d must be f32", ggmlc__shape_str(q, s.q),
                             ggmlc__shape_str(k, s.k), ggmlc__shape_str(v, s.v));
    }
    if (k->ne[0] != D || v->ne[0] != M || v->ne[1] != D || !ggml_are_same_shape(d, q) || M < N ||
        k->ne[2] != q->ne[2] || v->ne[2] != q->ne[2] || k->ne[3] != q->ne[3] || v->ne[3] != q->ne[3]) {
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__,
                             "q %s, k %s, v %s, d %s do not fit (need q, d [D, N, H, B], k [D, M, H, B], v [M, D, H, B], M >= N)",
                             ggmlc__shape_str(q, s.q), ggmlc__shape_str(k, s.k), ggmlc__shape_str(v, s.v),
                             ggmlc__shape_str(d, s.m));
    }
    const size_t tsize = sizeof(float);
    const size_t end = GGML_PAD(ggml_nelements(q) * tsize, GGML_MEM_ALIGN) + GGML_PAD(ggml_nelements(k) * tsize, GGML_MEM_ALIGN) +
                       GGML_PAD(ggml_nelements(v) * tsize, GGML_MEM_ALIGN);
    struct ggml_tensor *r = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t)((end + tsize - 1) / tsize));
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_FLASH_ATTN_BACK, q, k, v);
    r->src[3] = d;
    ggmlc__set_op_params_i32(r, 0, masked ? 1 : 0);
    return r;
}
