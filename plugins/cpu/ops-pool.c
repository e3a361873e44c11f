/* ops-pool.c - max / average pooling over dimension 0 (1-D) or dimensions 0
 * and 1 (2-D), and the gradient of 2-D pooling.  As in ggml, padded positions
 * are skipped by max and count as zeros for avg (the divisor is the window size). */
#include <float.h>

#include "cpu-convops.h"

struct pool_geom {
    enum ggml_op_pool op;
    int k0, k1, s0, s1, p0, p1;
};

/* Pool window (ox, oy) of plane (i2, i3) of src; with max, *arg_x / *arg_y get the first maximum. */
static float pool_window(const struct ggml_tensor *src, const struct pool_geom *g, int64_t ox, int64_t oy, int64_t i2, int64_t i3,
                         int64_t *arg_x, int64_t *arg_y) {
    float acc = g->op == GGML_OP_POOL_MAX ? -FLT_MAX : 0.0f;
    const int64_t x0 = ox * g->s0 - g->p0, y0 = oy * g->s1 - g->p1;
    for (int64_t y = y0; y < y0 + g->k1; y++) {
        if (y < 0 || y >= src->ne[1]) continue;
        for (int64_t x = x0; x < x0 + g->k0; x++) {
            if (x < 0 || x >= src->ne[0]) continue;
            const float v = cpu_get_f32(src, x, y, i2, i3);
            if (g->op == GGML_OP_POOL_AVG) {
                acc += v;
            } else if (v > acc || (arg_x && *arg_x < 0)) {
                acc = v;
                if (arg_x) { *arg_x = x; *arg_y = y; }
            }
        }
    }
    return g->op == GGML_OP_POOL_AVG ? acc / (float)(g->k0 * g->k1) : acc;
}

static enum ggml_status pool_planes(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct pool_geom *g,
                                    const struct ggml_tensor *src) {
    const int64_t OW = dst->ne[0], OH = dst->ne[1];
    int64_t r0, r1;
    cpu_split_range(OH * dst->ne[2] * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t oy = r % OH, i2 = (r / OH) % dst->ne[2], i3 = r / (OH * dst->ne[2]);
        for (int64_t ox = 0; ox < OW; ox++)
            *(float *)cpu_elem_ptr(dst, ox, oy, i2, i3) = pool_window(src, g, ox, oy, i2, i3, NULL, NULL);
    }
    return GGML_STATUS_SUCCESS;
}

static struct pool_geom pool_geom_of(const struct ggmlc_pool_params *p) {
    const struct pool_geom g = {(enum ggml_op_pool)p->op, p->k0, p->k1, p->s0, p->s1, p->p0, p->p1};
    return g;
}

static enum ggml_status pool_1d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    /* a 1-D pool is a 2-D pool with a 1x1 window along dimension 1 */
    const struct ggmlc_pool_params p = ggmlc_pool_1d_params_of(dst);
    const struct pool_geom g = pool_geom_of(&p);
    return pool_planes(call, dst, &g, dst->src[0]);
}

static enum ggml_status pool_2d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggmlc_pool_params p = ggmlc_pool_2d_params_of(dst);
    const struct pool_geom g = pool_geom_of(&p);
    return pool_planes(call, dst, &g, dst->src[0]);
}

/* Windows overlap, so each task owns whole (i2, i3) planes of the input gradient. */
static enum ggml_status pool_2d_back(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy = dst->src[0], *x = dst->src[1];
    const struct ggmlc_pool_params p = ggmlc_pool_2d_params_of(dst);
    const struct pool_geom g = pool_geom_of(&p);
    const float inv_area = 1.0f / (float)(g.k0 * g.k1);
    int64_t r0, r1;
    cpu_split_range(dst->ne[2] * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i2 = r % dst->ne[2], i3 = r / dst->ne[2];
        for (int64_t y = 0; y < dst->ne[1]; y++)
            for (int64_t x = 0; x < dst->ne[0]; x++) *(float *)cpu_elem_ptr(dst, x, y, i2, i3) = 0.0f;
        for (int64_t oy = 0; oy < dy->ne[1]; oy++)
            for (int64_t ox = 0; ox < dy->ne[0]; ox++) {
                const float grad = cpu_get_f32(dy, ox, oy, i2, i3);
                if (g.op == GGML_OP_POOL_MAX) {
                    int64_t ax = -1, ay = -1;
                    pool_window(x, &g, ox, oy, i2, i3, &ax, &ay);
                    if (ax >= 0) *(float *)cpu_elem_ptr(dst, ax, ay, i2, i3) += grad;
                    continue;
                }
                const int64_t x0 = ox * g.s0 - g.p0, y0 = oy * g.s1 - g.p1;
                for (int64_t y = y0 < 0 ? 0 : y0; y < y0 + g.k1 && y < dst->ne[1]; y++)
                    for (int64_t xx = x0 < 0 ? 0 : x0; xx < x0 + g.k0 && xx < dst->ne[0]; xx++)
                        *(float *)cpu_elem_ptr(dst, xx, y, i2, i3) += grad * inv_area;
            }
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_pool_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_POOL_1D] = pool_1d;
    t->compute[GGML_OP_POOL_2D] = pool_2d;
    t->compute[GGML_OP_POOL_2D_BACK] = pool_2d_back;
}
