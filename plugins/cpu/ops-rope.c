/*
 * ops-rope.c - ROPE and ROPE_BACK in every mode (normal, NeoX, multi-section,
 * interleaved multi-section, vision) with YaRN scaling and frequency factors.
 *
 * Dimension pair k (k = i0/2) of position p turns by theta = p * base^(-2k/n_dims),
 * divided by its frequency factor and blended with the interpolated angle by
 * YaRN's ramp.  The backward pass turns by -theta (the transpose of a rotation).
 * The arithmetic is ggml's CPU backend's, so that a model's activations keep
 * ggml's bits: theta_scale = powf(base, -2 / n_dims) in float, each pair's
 * angle the previous one times theta_scale (in float, from the position), and
 * the rotation's two products fused as ggml's x86 build fuses them.
 */
#include "ops-nn.h"

struct rope_params {
    int n_dims, mode;
    float freq_scale, ext_factor, attn_factor;
    float theta_scale; /* base^(-2/n_dims) */
    float corr_dims[2];
    int sections[GGML_MROPE_SECTIONS];
    float sin_sign; /* +1 forward, -1 backward */
    int n_offs;     /* first rotated dimension; those before and past the range pass through */
};

static struct rope_params rope_params_of(const struct ggml_tensor *dst) {
    const struct ggmlc_rope_params op = ggmlc_rope_params_of(dst);
    struct rope_params p;
    p.n_dims = op.n_dims;
    p.mode = op.mode;
    p.freq_scale = op.freq_scale;
    p.ext_factor = op.ext_factor;
    p.attn_factor = op.attn_factor;
    p.theta_scale = powf(op.freq_base, -2.0f / (float)p.n_dims);
    ggml_rope_yarn_corr_dims(p.n_dims, op.n_ctx_orig, op.freq_base, op.beta_fast, op.beta_slow,
                             p.corr_dims);
    memcpy(p.sections, op.sections, sizeof p.sections);
    p.sin_sign = dst->op == GGML_OP_ROPE_BACK ? -1.0f : 1.0f;
    p.n_offs = op.n_offs;
    return p;
}

/* YaRN: 1 below the low correction dimension, 0 above the high one, linear between. */
static float yarn_ramp(float low, float high, int64_t i0) {
    const float y = ((float)(i0 / 2) - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

static void yarn_cos_sin(const struct rope_params *p, float theta_extrap, int64_t i0, float *cs) {
    const float theta_interp = p->freq_scale * theta_extrap;
    float theta = theta_interp, mscale = p->attn_factor;
    if (p->ext_factor != 0.0f) {
        const float mix = yarn_ramp(p->corr_dims[0], p->corr_dims[1], i0) * p->ext_factor;
        theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / p->freq_scale); /* magnitude correction of interpolation */
    }
    cs[0] = cosf(theta) * mscale;
    cs[1] = sinf(theta) * mscale * p->sin_sign;
}

/* For pair k of a multi-section mode: the position component (0 = t, 1 = h, 2 = w, 3 = e)
 * and whether its angle restarts from the position here (vision restarts every section). */
static void multi_section_of(const struct rope_params *p, int64_t k, int *component, bool *restart) {
    const int *s = p->sections;
    const int total = s[0] + s[1] + s[2] + s[3];
    const int64_t sector = k % total;
    const int64_t start[4] = {0, s[0], s[0] + s[1], s[0] + s[1] + s[2]};
    int c;
    if (p->mode == GGML_ROPE_TYPE_IMROPE) { /* sections interleaved t, h, w, t, h, w, ... */
        if (sector % 3 == 1 && sector < 3 * s[1]) c = 1;
        else if (sector % 3 == 2 && sector < 3 * s[2]) c = 2;
        else if (sector % 3 == 0 && sector < 3 * s[0]) c = 0;
        else c = 3;
    } else {
        c = sector < start[1] ? 0 : sector < start[2] ? 1 : sector < start[3] ? 2 : 3;
    }
    *component = c;
    *restart = p->mode == GGML_ROPE_TYPE_VISION && sector == start[c];
}

/* cos/sin of every pair k < n_pairs for sequence index i2 into cache[2k], cache[2k+1]. */
static void rope_fill_cache(const struct rope_params *p, const struct ggml_tensor *pos_t, const struct ggml_tensor *ff_t,
                            int64_t ne2, int64_t i2, int64_t n_pairs, float *cache) {
    const float *ff = ff_t ? (const float *)ff_t->data : NULL;
    const bool multi = (p->mode & GGML_ROPE_TYPE_MROPE) != 0;
    float pos[4] = {0}, theta[4]; /* the angle of each position component, pair by pair */
    for (int c = 0; c < (multi ? 4 : 1); c++) pos[c] = (float)*(const int32_t *)nn_elem(pos_t, i2 + c * ne2, 0, 0, 0);
    memcpy(theta, pos, sizeof theta);
    for (int64_t k = 0; k < n_pairs; k++) {
        int c = 0;
        bool restart = false;
        if (multi) multi_section_of(p, k, &c, &restart);
        if (restart) theta[c] = pos[c];
        yarn_cos_sin(p, theta[c] / (ff ? ff[k] : 1.0f), 2 * k, &cache[2 * k]);
        for (int i = 0; i < 4; i++) theta[i] *= p->theta_scale;
    }
}

/* Rotate x into y: pair k is (k*stride_k, k*stride_k + offset), for k < n_pairs. */
EW_CLONES static void rotate_pairs(const float *x, float *y, const float *cache, int64_t n_pairs, int64_t stride_k, int64_t offset) {
    for (int64_t k = 0; k < n_pairs; k++) {
        const int64_t a = k * stride_k, b = a + offset;
        const float c = cache[2 * k], s = cache[2 * k + 1], x0 = x[a], x1 = x[b];
        y[a] = fmaf(x0, c, -(x1 * s));
        y[b] = fmaf(x0, s, x1 * c);
    }
}

/* Pairs of dimensions turned per row. */
static int64_t rope_n_pairs(const struct rope_params *p, int64_t ne0) {
    return p->mode == GGML_ROPE_TYPE_VISION ? ne0 / 2 : p->n_dims / 2;
}

/* Where the angle tables of all the node's positions fit in this many floats, each thread
 * keeps one table per position (filled on first use) instead of one cache refilled whenever
 * the position changes: rows are [head, n_head, T, B], so that cache was refilled for every
 * (position, batch) pair, each time a pow and a sincos per pair (4% of a small GPT's
 * training step). */
#define ROPE_TABLE_MAX_FLOATS (1 << 16)

/* Floats of the per-position tables (cos/sin of each pair and a filled flag), 0 when too many. */
static int64_t rope_table_floats(const struct ggml_tensor *dst, int64_t n_pairs) {
    const int64_t floats = dst->src[0]->ne[2] * (2 * n_pairs + 1);
    return floats <= ROPE_TABLE_MAX_FLOATS ? floats : 0;
}

/* Scratch: the angle cache, the input row, the output row, then the position tables. */
static size_t rope_work(const struct ggml_tensor *dst, int n_threads) {
    const struct rope_params p = rope_params_of(dst);
    const int64_t table = rope_table_floats(dst, rope_n_pairs(&p, dst->src[0]->ne[0]));
    return nn_scratch_bytes(3 * dst->ne[0] + 2 + table, n_threads);
}

static enum ggml_status rope_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct rope_params p = rope_params_of(dst);
    const int64_t ne0 = src->ne[0], n_pairs = rope_n_pairs(&p, ne0), entry = 2 * n_pairs + 1;
    const int64_t table_floats = rope_table_floats(dst, n_pairs);
    float *cache = nn_scratch(call, 3 * ne0 + 2 + table_floats), *x = cache + ne0 + 2, *y = x + ne0;
    float *table = table_floats ? y + ne0 : NULL;
    for (int64_t i2 = 0; table && i2 < src->ne[2]; i2++) table[i2 * entry + 2 * n_pairs] = 0.0f; /* not filled */
    const bool vision = p.mode == GGML_ROPE_TYPE_VISION, neox_like = (p.mode & (GGML_ROPE_TYPE_NEOX | GGML_ROPE_TYPE_MROPE)) != 0;
    int64_t r0, r1, cached_i2 = -1;
    /* whether the pairs turned cover every dimension of a row (none passes through) */
    const bool covers = !vision && p.n_offs == 0 && 2 * n_pairs == ne0;
    cpu_split_range(ggml_nrows(src), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(src, r, &i1, &i2, &i3);
        const float *angles = cache;
        if (table) {
            float *e = table + i2 * entry;
            if (e[2 * n_pairs] == 0.0f) {
                rope_fill_cache(&p, dst->src[1], dst->src[2], src->ne[2], i2, n_pairs, e);
                e[2 * n_pairs] = 1.0f;
            }
            angles = e;
        } else if (i2 != cached_i2) {
            rope_fill_cache(&p, dst->src[1], dst->src[2], src->ne[2], i2, n_pairs, cache);
            cached_i2 = i2;
        }
        /* f32 rows are rotated where they lie (heads of 32 values: the copies to and from
         * scratch were most of the op's time); others go through the scratch rows */
        const float *in = nn_f32_row(src, i1, i2, i3);
        float *out = nn_f32_row(dst, i1, i2, i3);
        if (!in) nn_row_load(src, i1, i2, i3, x), in = x;
        if (!out || (out != in && out < in + ne0 && in < out + ne0)) out = y; /* partial overlap */
        if (out != in && !covers) memcpy(out, in, (size_t)ne0 * sizeof(float)); /* dimensions outside pass through */
        const float *xr = in + p.n_offs; /* the rotated range (vision: n_offs = 0) */
        float *yr = out + p.n_offs;
        if (vision) rotate_pairs(xr, yr, angles, n_pairs, 1, p.n_dims);
        else if (neox_like) rotate_pairs(xr, yr, angles, n_pairs, 1, p.n_dims / 2);
        else rotate_pairs(xr, yr, angles, n_pairs, 2, 1);
        if (out == y) nn_row_store(dst, i1, i2, i3, y);
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_nn_rope_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_ROPE] = rope_compute;
    t->work_size[GGML_OP_ROPE] = rope_work;
    t->compute[GGML_OP_ROPE_BACK] = rope_compute;
    t->work_size[GGML_OP_ROPE_BACK] = rope_work;
}
