/*
 * ops-indexer.c - DeepSeek's lightning indexer (GGML_OP_LIGHTNING_INDEXER): the
 * score of key row j for token t is sum over heads h of relu(q[h, t] . k[j]) *
 * weights[h, t], plus mask[t, j].  Each task takes a range of key rows; a key
 * row of another type is converted to floats once per (token, row) as in ggml.
 * The dot products sum in double and round once (ggml sums in its SIMD lanes,
 * so the two agree within float rounding, not bit for bit).
 */
#include "cpu-convops.h"
#include "ggmlc-blocks.h"

static double dot_f32(const float *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static enum ggml_status lightning_indexer(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *w = dst->src[2], *m = dst->src[3];
    const int64_t D = q->ne[0], H = q->ne[1], T = q->ne[2], S = q->ne[3], n_kv = k->ne[2];
    const ggml_to_float_t to_float = k->type == GGML_TYPE_F32 ? NULL : ggml_get_type_traits(k->type)->to_float;
    float *row = (float *)((char *)call->wdata + (size_t)call->ith * ((size_t)D * sizeof(float) + 64));
    int64_t j0, j1;
    cpu_split_range(n_kv, call->ith, call->nth, &j0, &j1);
    for (int64_t s = 0; s < S; s++)
        for (int64_t t = 0; t < T; t++) {
            const float *wt = (const float *)cpu_elem_ptr(w, 0, t, 0, s);
            const ggml_fp16_t *mt = (const ggml_fp16_t *)cpu_elem_ptr(m, 0, t, 0, s % m->ne[3]);
            float *out = (float *)cpu_elem_ptr(dst, 0, t, 0, s);
            for (int64_t j = j0; j < j1; j++) {
                const float *kr = (const float *)cpu_elem_ptr(k, 0, 0, j, s);
                if (to_float) {
                    to_float(kr, row, D);
                    kr = row;
                }
                float score = 0.0f;
                for (int64_t h = 0; h < H; h++) {
                    const float qk = (float)dot_f32((const float *)cpu_elem_ptr(q, 0, h, t, s), kr, D);
                    score += (qk > 0.0f ? qk : 0.0f) * wt[h];
                }
                out[j] = score + ggmlc_fp16_to_fp32(mt[j]);
            }
        }
    return GGML_STATUS_SUCCESS;
}

static bool lightning_indexer_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *q = node->src[0], *k = node->src[1], *w = node->src[2], *m = node->src[3];
    return q->nb[0] == sizeof(float) && w->nb[0] == sizeof(float) && m->nb[0] == sizeof(ggml_fp16_t) &&
           k->nb[0] == ggml_type_size(k->type) && node->nb[0] == sizeof(float);
}

static size_t lightning_indexer_work(const struct ggml_tensor *node, int n_threads) {
    return (size_t)n_threads * ((size_t)node->src[0]->ne[0] * sizeof(float) + 64);
}

void cpu_ops_indexer_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_LIGHTNING_INDEXER] = lightning_indexer;
    t->supports[GGML_OP_LIGHTNING_INDEXER] = lightning_indexer_supports;
    t->work_size[GGML_OP_LIGHTNING_INDEXER] = lightning_indexer_work;
}
