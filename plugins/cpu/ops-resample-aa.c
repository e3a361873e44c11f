/*
 * ops-resample-aa.c - ggml_interpolate's antialiased bilinear mode
 * (GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS), PyTorch's
 * F.interpolate(mode="bilinear", antialias=True): each output pixel averages
 * the source pixels under a triangle filter widened to the scale factor when
 * shrinking (at least one pixel when enlarging), weights normalized to 1.
 * The arithmetic follows ggml's CPU kernel step by step (float coordinates,
 * the product of the two axis weights, the sum fused as its -march=native
 * build fuses it), so results carry its bits; dimensions 2 and 3 are nearest.
 */
#include <math.h>

#include "cpu-convops.h"

static inline float triangle(float x) {
    const float v = 1.0f - fabsf(x);
    return v > 0.0f ? v : 0.0f;
}

/* Per axis: ggml's scale factor (output / input size, or (out - 1) / (in - 1) with aligned corners). */
struct aa_axis {
    float sf, support, invscale;
    int64_t n_in;
};

static struct aa_axis aa_axis_of(int64_t n_in, int64_t n_out, bool align) {
    float sf = (float)n_out / (float)n_in;
    if (align && n_out > 1 && n_in > 1) sf = (float)(n_out - 1) / (float)(n_in - 1);
    const float support = 1.0f / sf > 1.0f ? 1.0f / sf : 1.0f;
    return (struct aa_axis){sf, support, 1.0f / support, n_in};
}

/* The source range [lo, hi) an output coordinate c (in source pixels) reaches. */
static void aa_range(const struct aa_axis *a, float c, float offset, int64_t *lo, int64_t *hi) {
    const int64_t l = (int64_t)(c - a->support + offset), h = (int64_t)(c + a->support + offset);
    *lo = l > 0 ? l : 0;
    *hi = h < a->n_in ? h : a->n_in;
}

enum ggml_status cpu_upscale_antialias(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const bool align = (ggmlc_op_param_i32(dst, 0) & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0;
    const float offset = align ? 0.0f : 0.5f;
    const struct aa_axis ax = aa_axis_of(src->ne[0], dst->ne[0], align), ay = aa_axis_of(src->ne[1], dst->ne[1], align);
    const float sf2 = (float)dst->ne[2] / (float)src->ne[2], sf3 = (float)dst->ne[3] / (float)src->ne[3];
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % dst->ne[1], i2 = (r / dst->ne[1]) % dst->ne[2], i3 = r / (dst->ne[1] * dst->ne[2]);
        const int64_t j2 = (int64_t)((float)i2 / sf2), j3 = (int64_t)((float)i3 / sf3);
        const float y = ((float)i1 + offset) / ay.sf;
        int64_t y_lo, y_hi;
        aa_range(&ay, y, offset, &y_lo, &y_hi);
        float *out = (float *)cpu_elem_ptr(dst, 0, i1, i2, i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            const float x = ((float)i0 + offset) / ax.sf;
            int64_t x_lo, x_hi;
            aa_range(&ax, x, offset, &x_lo, &x_hi);
            float val = 0.0f, total = 0.0f;
            for (int64_t sy = y_lo; sy < y_hi; sy++) {
                const float wy = triangle(((float)sy - y + offset) * ay.invscale);
                for (int64_t sx = x_lo; sx < x_hi; sx++) {
                    const float w = triangle(((float)sx - x + offset) * ax.invscale) * wy;
                    if (w <= 0.0f) continue;
                    val = fmaf(*(const float *)cpu_elem_ptr(src, sx, sy, j2, j3), w, val);
                    total += w;
                }
            }
            out[i0] = total > 0.0f ? val / total : val;
        }
    }
    return GGML_STATUS_SUCCESS;
}
