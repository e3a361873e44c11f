/*
 * ops-rope.c - constructors of rotary position embeddings (rope, rope_ext,
 * rope_multi, their in-place and backward forms) and the YaRN helper.
 *
 * op_params layout, as ggml's (backends and saved graphs rely on it):
 *   i32 [0] n_past (0)  [1] n_dims  [2] mode  [3] n_ctx (0)  [4] n_ctx_orig
 *   f32 [5] freq_base [6] freq_scale [7] ext_factor [8] attn_factor [9] beta_fast [10] beta_slow
 *   i32 [11..14] sections (multi-section modes only, else 0)
 */
#include <math.h>

#include "ggml-impl.h"

struct rope_args {
    int n_dims, mode, n_ctx_orig;
    float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    const int *sections; /* NULL unless multi-section */
};

static bool rope_mode_known(int mode) {
    return mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX || mode == GGML_ROPE_TYPE_MROPE ||
           mode == GGML_ROPE_TYPE_VISION || mode == GGML_ROPE_TYPE_IMROPE;
}

static bool check_sections(const char *func, const struct ggml_tensor *a, const struct rope_args *p) {
    int total = 0;
    for (int i = 0; i < GGML_MROPE_SECTIONS; i++) {
        if (p->sections[i] < 0) {
            ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "section %d has negative size %d", i, p->sections[i]);
            return false;
        }
        total += p->sections[i];
    }
    if (p->sections[0] + p->sections[1] + p->sections[2] == 0 || total > a->ne[0]) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "sections {%d, %d, %d, %d} must be non-empty and sum to at most ne0 = %lld",
                      p->sections[0], p->sections[1], p->sections[2], p->sections[3], (long long)a->ne[0]);
        return false;
    }
    return true;
}

static bool check_rope(const char *func, const struct ggml_tensor *a, const struct ggml_tensor *b,
                       const struct ggml_tensor *c, const struct rope_args *p) {
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    const bool multi = (p->mode & GGML_ROPE_TYPE_MROPE) != 0;
    if (!rope_mode_known(p->mode)) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "unknown rope mode %d", p->mode);
        return false;
    }
    /* ggml_rope_multi with a single-position mode is a plain rope (its sections are kept in
     * the op's parameters and unused), as in ggml: llama.cpp's hunyuan-dense builds one */
    if (multi && !p->sections) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "mode %d needs sections (use ggml_rope_multi)", p->mode);
        return false;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, func, "input %s must be f32 or f16",
                       ggmlc__shape_str(a, sa));
        return false;
    }
    const int64_t n_pos = multi ? 4 * a->ne[2] : a->ne[2];
    if (b->type != GGML_TYPE_I32 || !ggml_is_vector(b) || b->ne[0] != n_pos) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "positions %s must be an i32 vector of %lld values for input %s",
                      ggmlc__shape_str(b, sb), (long long)n_pos, ggmlc__shape_str(a, sa));
        return false;
    }
    const bool vision = p->mode == GGML_ROPE_TYPE_VISION;
    /* n_dims 0 turns nothing (every dimension passes through): ggml accepts it, and llama.cpp
     * builds such a rope to ask which buffer types can hold a model's frequency factors */
    if (p->n_dims < 0 || p->n_dims % 2 != 0 || p->n_dims > a->ne[0] || (vision && 2 * (int64_t)p->n_dims != a->ne[0])) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "n_dims = %d must be even, not negative and %s ne0 of %s", p->n_dims,
                      vision ? "half of" : "at most", ggmlc__shape_str(a, sa));
        return false;
    }
    /* vision mode rotates ne0/2 pairs, each reading a frequency factor */
    const int64_t n_factors = vision ? a->ne[0] / 2 : p->n_dims / 2;
    if (c && (c->type != GGML_TYPE_F32 || c->ne[0] < n_factors || !ggml_is_contiguous(c))) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "frequency factors %s must be a contiguous f32 vector of at least %lld values",
                      ggmlc__shape_str(c, sb), (long long)n_factors);
        return false;
    }
    return !multi || check_sections(func, a, p);
}

static struct ggml_tensor *rope_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a,
                                     struct ggml_tensor *b, struct ggml_tensor *c, const struct rope_args *p,
                                     enum ggml_op op, bool inplace) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!check_rope(func, a, b, c, p)) return NULL;
    struct ggml_tensor *r = inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, op, a, b, c);
    const int32_t ints[5] = {0, p->n_dims, p->mode, 0, p->n_ctx_orig};
    const float floats[6] = {p->freq_base, p->freq_scale, p->ext_factor, p->attn_factor, p->beta_fast, p->beta_slow};
    for (int i = 0; i < 5; i++) ggmlc__set_op_params_i32(r, i, ints[i]);
    for (int i = 0; i < 6; i++) ggmlc__set_op_params_f32(r, 5 + i, floats[i]);
    for (int i = 0; i < GGML_MROPE_SECTIONS; i++) ggmlc__set_op_params_i32(r, 11 + i, p->sections ? p->sections[i] : 0);
    return r;
}

#define EXT_ARGS(secs)                                                                                                   \
    (struct rope_args) {                                                                                                 \
        n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow, secs              \
    }

struct ggml_tensor *ggml_rope(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims, int mode) {
    const struct rope_args p = {n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, NULL};
    return rope_impl(__func__, ctx, a, b, NULL, &p, GGML_OP_ROPE, false);
}

struct ggml_tensor *ggml_rope_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims, int mode) {
    const struct rope_args p = {n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, NULL};
    return rope_impl(__func__, ctx, a, b, NULL, &p, GGML_OP_ROPE, true);
}

struct ggml_tensor *ggml_rope_ext(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
                                  int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                  float attn_factor, float beta_fast, float beta_slow) {
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(NULL), GGML_OP_ROPE, false);
}

struct ggml_tensor *ggml_rope_ext_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                          struct ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                          float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                          float beta_slow) {
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(NULL), GGML_OP_ROPE, true);
}

struct ggml_tensor *ggml_rope_multi(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
                                    int n_dims, int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig, float freq_base,
                                    float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    if (!sections) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "sections is NULL");
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(sections), GGML_OP_ROPE, false);
}

struct ggml_tensor *ggml_rope_multi_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                            struct ggml_tensor *c, int n_dims, int sections[GGML_MROPE_SECTIONS], int mode,
                                            int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                            float attn_factor, float beta_fast, float beta_slow) {
    if (!sections) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "sections is NULL");
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(sections), GGML_OP_ROPE, true);
}

struct ggml_tensor *ggml_rope_custom(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims, int mode,
                                     int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                     float beta_fast, float beta_slow) {
    return rope_impl(__func__, ctx, a, b, NULL, &EXT_ARGS(NULL), GGML_OP_ROPE, false);
}

struct ggml_tensor *ggml_rope_custom_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims,
                                             int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                             float attn_factor, float beta_fast, float beta_slow) {
    return rope_impl(__func__, ctx, a, b, NULL, &EXT_ARGS(NULL), GGML_OP_ROPE, true);
}

struct ggml_tensor *ggml_rope_ext_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                       struct ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                       float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                       float beta_slow) {
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(NULL), GGML_OP_ROPE_BACK, false);
}

struct ggml_tensor *ggml_rope_multi_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                         struct ggml_tensor *c, int n_dims, int sections[4], int mode, int n_ctx_orig,
                                         float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                         float beta_fast, float beta_slow) {
    if (!sections) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "sections is NULL");
    return rope_impl(__func__, ctx, a, b, c, &EXT_ARGS(sections), GGML_OP_ROPE_BACK, false);
}

/* The dimension whose wavelength makes n_rot turns over the original context. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

void ggml_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]) {
    const float start = floorf(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end = ceilf(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = fmaxf(0.0f, start);
    dims[1] = fminf((float)(n_dims - 1), end);
}
