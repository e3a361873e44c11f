/* ops-image.c - resampling (nearest, bilinear, bicubic; align-corners), zero
 * and reflection padding, roll, timestep embeddings, and SAM's window and
 * relative-position helpers. */
#include <math.h>

#include "cpu-convops.h"

/* ------------------------------------------------------------ resampling */

/* Source coordinate of output position i (PyTorch's convention; cubic skips the clamp at 0). */
static float source_coord(int64_t i, int64_t n_in, int64_t n_out, bool align_corners, bool cubic) {
    if (align_corners) return n_out > 1 ? (float)i * (float)(n_in - 1) / (float)(n_out - 1) : 0.0f;
    const float x = ((float)i + 0.5f) * (float)n_in / (float)n_out - 0.5f;
    return !cubic && x < 0.0f ? 0.0f : x;
}

static inline int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

static inline int64_t nearest_index(int64_t i, int64_t n_in, int64_t n_out) {
    return clamp_index((int64_t)floorf((float)i * (float)n_in / (float)n_out), n_in);
}

/* Keys' cubic convolution weights with a = -0.75 for taps at offsets -1, 0, 1, 2 from floor(x). */
static void cubic_weights(float t, float w[4]) {
    const float A = -0.75f;
    const float near0 = t, near1 = 1.0f - t, far0 = t + 1.0f, far1 = 2.0f - t;
    w[1] = ((A + 2) * near0 - (A + 3)) * near0 * near0 + 1;
    w[2] = ((A + 2) * near1 - (A + 3)) * near1 * near1 + 1;
    w[0] = ((A * far0 - 5 * A) * far0 + 8 * A) * far0 - 4 * A;
    w[3] = ((A * far1 - 5 * A) * far1 + 8 * A) * far1 - 4 * A;
}

/* Taps (indices, weights) of one output position along one dimension; returns the tap count. */
static int resample_taps(enum ggml_scale_mode mode, bool align, int64_t i, int64_t n_in, int64_t n_out, int64_t idx[4], float w[4]) {
    if (mode == GGML_SCALE_MODE_NEAREST) {
        idx[0] = nearest_index(i, n_in, n_out);
        w[0] = 1.0f;
        return 1;
    }
    const float x = source_coord(i, n_in, n_out, align, mode == GGML_SCALE_MODE_BICUBIC);
    const float x0 = floorf(x), t = x - x0;
    if (mode == GGML_SCALE_MODE_BILINEAR) {
        idx[0] = clamp_index((int64_t)x0, n_in);
        idx[1] = clamp_index((int64_t)x0 + 1, n_in);
        w[0] = 1.0f - t;
        w[1] = t;
        return 2;
    }
    cubic_weights(t, w);
    for (int k = 0; k < 4; k++) idx[k] = clamp_index((int64_t)x0 - 1 + k, n_in);
    return 4;
}

/* Horizontal taps of every output column, computed once per task (work_size bytes per task). */
struct col_taps {
    int64_t idx[4];
    float w[4];
    int n;
};

static size_t upscale_task_bytes(const struct ggml_tensor *node) { return (size_t)node->ne[0] * sizeof(struct col_taps) + 64; }

static size_t upscale_work_size(const struct ggml_tensor *node, int n_threads) {
    return (size_t)n_threads * upscale_task_bytes(node);
}

/* Dimensions 0 and 1 use the mode; dimensions 2 and 3 always nearest. */
static enum ggml_status upscale(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const uint32_t mode_flags = (uint32_t)ggmlc_op_param_i32(dst, 0);
    const enum ggml_scale_mode mode = (enum ggml_scale_mode)(mode_flags & 0xff);
    const bool align = (mode_flags & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0;
    if (mode_flags & GGML_SCALE_FLAG_ANTIALIAS) return cpu_upscale_antialias(call, dst);
    struct col_taps *cols = (struct col_taps *)((char *)call->wdata + (size_t)call->ith * upscale_task_bytes(dst));
    for (int64_t i0 = 0; i0 < dst->ne[0]; i0++)
        cols[i0].n = resample_taps(mode, align, i0, src->ne[0], dst->ne[0], cols[i0].idx, cols[i0].w);
    const size_t nb0 = src->nb[0];
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % dst->ne[1], i2 = (r / dst->ne[1]) % dst->ne[2], i3 = r / (dst->ne[1] * dst->ne[2]);
        const int64_t j2 = nearest_index(i2, src->ne[2], dst->ne[2]), j3 = nearest_index(i3, src->ne[3], dst->ne[3]);
        int64_t iy[4];
        float wy[4];
        const int ny = resample_taps(mode, align, i1, src->ne[1], dst->ne[1], iy, wy);
        const char *rows[4];
        for (int a = 0; a < ny; a++) rows[a] = cpu_elem_ptr(src, 0, iy[a], j2, j3);
        float *out = (float *)cpu_elem_ptr(dst, 0, i1, i2, i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            const struct col_taps *c = &cols[i0];
            float sum = 0.0f;
            for (int a = 0; a < ny; a++) {
                float row_sum = 0.0f;
                for (int b = 0; b < c->n; b++) row_sum += c->w[b] * *(const float *)(rows[a] + c->idx[b] * nb0);
                sum += wy[a] * row_sum;
            }
            out[i0] = sum;
        }
    }
    return GGML_STATUS_SUCCESS;
}

static bool upscale_supported(const struct ggml_tensor *node) {
    const int32_t mode_flags = ggmlc_op_param_i32(node, 0);
    return node->type == GGML_TYPE_F32 && (mode_flags & 0xff) < GGML_SCALE_MODE_COUNT;
}

/* ------------------------------------------------------ padding and roll */

/* Row r of dst as (i1, i2, i3). */
static inline void row_coords(const struct ggml_tensor *t, int64_t r, int64_t *i1, int64_t *i2, int64_t *i3) {
    *i1 = r % t->ne[1];
    *i2 = (r / t->ne[1]) % t->ne[2];
    *i3 = r / (t->ne[1] * t->ne[2]);
}

/* Index j of a dimension of size n taken circularly (j within one wrap of [0, n)). */
static inline int64_t wrap_index(int64_t j, int64_t n) { return j < 0 ? j + n : (j >= n ? j - n : j); }

/* Circular padding: every element comes from the source, wrapped. */
static enum ggml_status pad_circular(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct ggmlc_pad_params p = ggmlc_pad_params_of(dst);
    const int32_t *lp = p.lp;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        row_coords(dst, r, &i1, &i2, &i3);
        const int64_t j1 = wrap_index(i1 - lp[1], src->ne[1]);
        const int64_t j2 = wrap_index(i2 - lp[2], src->ne[2]);
        const int64_t j3 = wrap_index(i3 - lp[3], src->ne[3]);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++)
            *(float *)cpu_elem_ptr(dst, i0, i1, i2, i3) = cpu_get_f32(src, wrap_index(i0 - lp[0], src->ne[0]), j1, j2, j3);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status pad(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct ggmlc_pad_params p = ggmlc_pad_params_of(dst);
    if (p.circular) return pad_circular(call, dst);
    const int32_t *lp = p.lp; /* the padding before each dimension */
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        row_coords(dst, r, &i1, &i2, &i3);
        const int64_t j1 = i1 - lp[1], j2 = i2 - lp[2], j3 = i3 - lp[3];
        const bool row_in = j1 >= 0 && j1 < src->ne[1] && j2 >= 0 && j2 < src->ne[2] && j3 >= 0 && j3 < src->ne[3];
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            const int64_t j0 = i0 - lp[0];
            const bool in = row_in && j0 >= 0 && j0 < src->ne[0];
            *(float *)cpu_elem_ptr(dst, i0, i1, i2, i3) = in ? cpu_get_f32(src, j0, j1, j2, j3) : 0.0f;
        }
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status pad_reflect_1d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const int64_t p0 = ggmlc_pad_reflect_1d_params_of(dst).lp[0], n = src->ne[0];
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        row_coords(dst, r, &i1, &i2, &i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            int64_t j = i0 - p0;
            if (j < 0) j = -j;                 /* mirror at the first element, which is not repeated */
            if (j >= n) j = 2 * (n - 1) - j;   /* and at the last */
            *(float *)cpu_elem_ptr(dst, i0, i1, i2, i3) = cpu_get_f32(src, j, i1, i2, i3);
        }
    }
    return GGML_STATUS_SUCCESS;
}

static inline int64_t wrap(int64_t i, int64_t shift, int64_t n) {
    const int64_t j = (i - shift) % n;
    return j < 0 ? j + n : j;
}

static enum ggml_status roll(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct ggmlc_roll_params p = ggmlc_roll_params_of(dst);
    const int32_t *sh = p.shift;
    const size_t es = ggml_type_size(dst->type);
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        row_coords(dst, r, &i1, &i2, &i3);
        const int64_t j1 = wrap(i1, sh[1], dst->ne[1]), j2 = wrap(i2, sh[2], dst->ne[2]), j3 = wrap(i3, sh[3], dst->ne[3]);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++)
            memcpy(cpu_elem_ptr(dst, i0, i1, i2, i3), cpu_elem_ptr(src, wrap(i0, sh[0], dst->ne[0]), j1, j2, j3), es);
    }
    return GGML_STATUS_SUCCESS;
}

/* Stable Diffusion's embedding: [cos(t f_j) | sin(t f_j)], f_j = max_period^(-j/half), a zero last if dim is odd. */
static enum ggml_status timestep_embedding(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *ts = dst->src[0];
    const struct ggmlc_timestep_params p = ggmlc_timestep_params_of(dst);
    const int dim = p.dim, max_period = p.max_period, half = dim / 2;
    int64_t r0, r1;
    cpu_split_range(dst->ne[1], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float t = cpu_get_f32(ts, r, 0, 0, 0);
        float *out = (float *)cpu_elem_ptr(dst, 0, r, 0, 0);
        for (int j = 0; j < half; j++) {
            const float arg = t * expf(-logf((float)max_period) * (float)j / (float)half);
            out[j] = cosf(arg);
            out[j + half] = sinf(arg);
        }
        if (dim % 2) out[dim - 1] = 0.0f;
    }
    return GGML_STATUS_SUCCESS;
}

/* -------------------------------------------------------------------- SAM */

static enum ggml_status win_part(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct ggmlc_window_params p = ggmlc_win_part_params_of(dst);
    const int64_t npx = p.npx, w = p.w;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, win;
        row_coords(dst, r, &i1, &i2, &win);
        const int64_t x = (win % npx) * w + i1, y = (win / npx) * w + i2;
        const bool in = x < src->ne[1] && y < src->ne[2];
        for (int64_t c = 0; c < dst->ne[0]; c++)
            *(float *)cpu_elem_ptr(dst, c, i1, i2, win) = in ? cpu_get_f32(src, c, x, y, 0) : 0.0f;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status win_unpart(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const int64_t w = ggmlc_win_unpart_params_of(dst).w, npx = (dst->ne[1] + w - 1) / w;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t x, y, unused;
        row_coords(dst, r, &x, &y, &unused);
        const int64_t win = (y / w) * npx + x / w;
        for (int64_t c = 0; c < dst->ne[0]; c++)
            *(float *)cpu_elem_ptr(dst, c, x, y, 0) = cpu_get_f32(src, c, x % w, y % w, win);
    }
    return GGML_STATUS_SUCCESS;
}

/* dst[:, k, q] = table[:, q - k + kh - 1]: the embedding of the relative offset of query q and key k. */
static enum ggml_status get_rel_pos(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const int64_t kh = dst->ne[1];
    int64_t r0, r1;
    cpu_split_range(dst->ne[1] * dst->ne[2], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t k = r % kh, q = r / kh, pos = q - k + kh - 1;
        for (int64_t c = 0; c < dst->ne[0]; c++)
            cpu_store_f32(dst->type, cpu_elem_ptr(dst, c, k, q, 0), cpu_get_f32(src, c, pos, 0, 0));
    }
    return GGML_STATUS_SUCCESS;
}

/* a viewed as [Kw, Kh, Qw, Qh, B]: a + pw[kw, qw, qh, b] + ph[kh, qw, qh, b]. */
static enum ggml_status add_rel_pos(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *pw = dst->src[1], *ph = dst->src[2];
    const int64_t K = pw->ne[0], n_q = pw->ne[1] * pw->ne[2] * pw->ne[3];
    const float *ad = (const float *)a->data, *pwd = (const float *)pw->data, *phd = (const float *)ph->data;
    float *out = (float *)dst->data;
    int64_t q0, q1;
    cpu_split_range(n_q, call->ith, call->nth, &q0, &q1);
    for (int64_t q = q0; q < q1; q++)
        for (int64_t kh = 0; kh < K; kh++)
            for (int64_t kw = 0; kw < K; kw++) {
                const int64_t i = (q * K + kh) * K + kw;
                out[i] = ad[i] + pwd[q * K + kw] + phd[q * K + kh];
            }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_image_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_UPSCALE] = upscale;
    t->supports[GGML_OP_UPSCALE] = upscale_supported;
    t->work_size[GGML_OP_UPSCALE] = upscale_work_size;
    t->compute[GGML_OP_PAD] = pad;
    t->compute[GGML_OP_PAD_REFLECT_1D] = pad_reflect_1d;
    t->compute[GGML_OP_ROLL] = roll;
    t->compute[GGML_OP_TIMESTEP_EMBEDDING] = timestep_embedding;
    t->compute[GGML_OP_WIN_PART] = win_part;
    t->compute[GGML_OP_WIN_UNPART] = win_unpart;
    t->compute[GGML_OP_GET_REL_POS] = get_rel_pos;
    t->compute[GGML_OP_ADD_REL_POS] = add_rel_pos;
}
