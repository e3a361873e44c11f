/*
 * ops-attn.c - FLASH_ATTN_EXT (one pass over the keys with an online softmax,
 * so no n_kv-sized score row is kept; blocks of queries share each key and
 * value row read) and FLASH_ATTN_BACK.
 * K and V of any float type are read in f32; scores accumulate in f32.
 */
#include "ops-nn.h"

struct attn_params {
    float scale, max_bias, softcap;
};

/* Queries that share each key and value row loaded (and converted) once. */
#define ATTN_BLOCK 8

/* Scratch of the forward per task: a block of query rows and of accumulators, one key
 * row, one value row, and the running maximum and normaliser of each query. */
static int64_t attn_scratch_floats(const struct ggml_tensor *dst) {
    const int64_t dk = dst->src[0]->ne[0], dv = dst->src[2]->ne[0];
    return ATTN_BLOCK * (dk + dv + 2) + dk + dv;
}

static size_t flash_attn_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(attn_scratch_floats(dst), n_threads);
}

/* Sum of a[i] * b[i]: sixteen partial sums, a pattern the vectorizer maps onto one or
 * more registers at each x86-64 level without reassociating anything itself. */
EW_CLONES static float dot_f32(const float *a, const float *b, int64_t n) {
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int l = 0; l < 16; l++) part[l] += a[i + l] * b[i + l];
    }
    float sum = 0.0f;
    for (; i < n; i++) sum += a[i] * b[i];
    for (int l = 0; l < 16; l++) sum += part[l];
    return sum;
}

/* y = y * s + w * x. */
EW_CLONES static void scale_add(float *y, float s, float w, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = y[i] * s + w * x[i];
}

/* Online softmax state of one query: running maximum, normaliser and weighted sum of V. */
struct online_softmax {
    float max, sum;
    float *acc;
    int64_t dv;
};

/* Add a score s with value row val: rescale what was accumulated when s raises the maximum. */
static void online_add(struct online_softmax *o, float s, const float *val) {
    if (s == -INFINITY) return; /* no weight, and -inf - -inf would be NaN */
    float w = 1.0f, shrink = 1.0f;
    if (s > o->max) {
        shrink = o->max == -INFINITY ? 0.0f : expf(o->max - s);
        o->max = s;
    } else {
        w = expf(s - o->max);
    }
    if (val) {
        scale_add(o->acc, shrink, w, val, o->dv);
    } else if (shrink != 1.0f) {
        for (int64_t i = 0; i < o->dv; i++) o->acc[i] *= shrink;
    }
    o->sum = o->sum * shrink + w;
}

/* One block of queries [i1, i1 + nq) of head i2, batch i3. */
struct attn_block {
    int64_t i1, nq, i2, i3;
    const char *mask_rows[ATTN_BLOCK];
    struct online_softmax state[ATTN_BLOCK];
    float *q; /* nq rows of dk */
};

/* Mask values of key j for the block's queries; false when every one is -inf. */
static bool block_mask(const struct ggml_tensor *mask, const struct attn_block *b, int64_t j, float *mv) {
    bool any = false;
    for (int64_t r = 0; r < b->nq; r++) {
        mv[r] = 0.0f;
        if (mask) ew_load(&mv[r], b->mask_rows[r] + j * mask->nb[0], mask->type, 0, 1);
        any = any || mv[r] != -INFINITY;
    }
    return any;
}

static void attend_block(const struct ggml_tensor *dst, const struct attn_params *p, struct attn_block *b, float *scratch) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3], *sinks = dst->src[4];
    /* kv heads and batches are shared by consecutive query heads and batches */
    const int64_t dk = q->ne[0], dv = v->ne[0], ik2 = b->i2 / (q->ne[2] / k->ne[2]), ik3 = b->i3 / (q->ne[3] / k->ne[3]);
    float *krow = scratch + ATTN_BLOCK * (dk + dv), *vrow = krow + dk;
    b->q = scratch;
    for (int64_t r = 0; r < b->nq; r++) {
        nn_row_load(q, b->i1 + r, b->i2, b->i3, b->q + r * dk);
        b->state[r] = (struct online_softmax){-INFINITY, 0.0f, scratch + ATTN_BLOCK * dk + r * dv, dv};
        memset(b->state[r].acc, 0, (size_t)dv * sizeof(float));
        if (mask) b->mask_rows[r] = nn_elem(mask, 0, b->i1 + r, b->i2 % mask->ne[2], b->i3 % mask->ne[3]);
    }
    const float slope = nn_alibi_slope(p->max_bias, q->ne[2], b->i2);
    /* softcap: s = c * tanh(q.k * scale / c) */
    const float qk_scale = p->softcap != 0.0f ? p->scale / p->softcap : p->scale;
    float mv[ATTN_BLOCK];
    for (int64_t j = 0; j < k->ne[1]; j++) {
        if (!block_mask(mask, b, j, mv)) continue;
        /* f32 rows are used where they lie; others are converted once for the block */
        const float *kr = nn_f32_row(k, j, ik2, ik3), *vr = nn_f32_row(v, j, ik2, ik3);
        if (!kr) nn_row_load(k, j, ik2, ik3, krow), kr = krow;
        if (!vr) nn_row_load(v, j, ik2, ik3, vrow), vr = vrow;
        for (int64_t r = 0; r < b->nq; r++) {
            if (mv[r] == -INFINITY) continue;
            float s = dot_f32(b->q + r * dk, kr, dk) * qk_scale;
            if (p->softcap != 0.0f) s = p->softcap * tanhf(s);
            online_add(&b->state[r], s + slope * mv[r], vr);
        }
    }
    for (int64_t r = 0; r < b->nq; r++) {
        struct online_softmax *o = &b->state[r];
        if (sinks) online_add(o, *(const float *)nn_elem(sinks, b->i2, 0, 0, 0), NULL);
        const float inv = o->sum > 0.0f ? 1.0f / o->sum : 0.0f; /* every key masked: zeros, not NaN */
        for (int64_t i = 0; i < dv; i++) o->acc[i] *= inv;
        ew_store(nn_elem(dst, 0, b->i2, b->i1 + r, b->i3), dst->type, dst->nb[0], o->acc, dv);
    }
}

/* Tasks take blocks of consecutive queries of one head. */
static enum ggml_status flash_attn_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (cpu_flash_attn_match(call, dst)) return GGML_STATUS_SUCCESS; /* ggml's bits */
    const struct ggml_tensor *q = dst->src[0];
    const struct ggmlc_flash_attn_params fa = ggmlc_flash_attn_params_of(dst);
    const struct attn_params p = {fa.scale, fa.max_bias, fa.logit_softcap};
    float *scratch = nn_scratch(call, attn_scratch_floats(dst));
    const int64_t per_head = (q->ne[1] + ATTN_BLOCK - 1) / ATTN_BLOCK;
    int64_t u0, u1;
    cpu_split_range(per_head * q->ne[2] * q->ne[3], call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        struct attn_block b;
        b.i1 = (u % per_head) * ATTN_BLOCK;
        b.nq = q->ne[1] - b.i1 < ATTN_BLOCK ? q->ne[1] - b.i1 : ATTN_BLOCK;
        b.i2 = (u / per_head) % q->ne[2];
        b.i3 = u / (per_head * q->ne[2]);
        attend_block(dst, &p, &b, scratch);
    }
    return GGML_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ backward */

static float at(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return *(const float *)nn_elem(t, i0, i1, i2, i3);
}

/* Scratch of the backward: probabilities and their gradients, N x M each. */
static size_t flash_attn_back_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->src[0]->ne[1] * dst->src[1]->ne[1], n_threads);
}

/* Offsets (in floats) of dq, dk, dv inside the packed result. */
static void packed_offsets(const struct ggml_tensor *dst, size_t offs[3]) {
    offs[0] = 0;
    offs[1] = GGML_PAD(ggml_nelements(dst->src[0]) * sizeof(float), GGML_MEM_ALIGN) / sizeof(float);
    offs[2] = offs[1] + GGML_PAD(ggml_nelements(dst->src[1]) * sizeof(float), GGML_MEM_ALIGN) / sizeof(float);
}

/* Attention probabilities A (N x M) of head (h, b), causal when masked (key j visible
 * to query i when j <= i + M - N). */
static void attn_probs(const struct ggml_tensor *q, const struct ggml_tensor *k, bool masked, int64_t h, int64_t b,
                       float *A) {
    const int64_t D = q->ne[0], N = q->ne[1], M = k->ne[1];
    const float scale = 1.0f / sqrtf((float)D);
    for (int64_t i = 0; i < N; i++) {
        float *row = A + i * M;
        for (int64_t j = 0; j < M; j++) {
            if (masked && j > i + (M - N)) {
                row[j] = -INFINITY;
                continue;
            }
            float s = 0.0f;
            for (int64_t d = 0; d < D; d++) s += at(q, d, i, h, b) * at(k, d, j, h, b);
            row[j] = s * scale;
        }
        float max = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < M; j++) max = row[j] > max ? row[j] : max;
        for (int64_t j = 0; j < M; j++) sum += row[j] = expf(row[j] - max);
        for (int64_t j = 0; j < M; j++) row[j] /= sum;
    }
}

/* Gradients of head (h, b): dV = A^T dO, dS = A * (dA - rowsum(A * dA)), dQ = scale dS K,
 * dK = scale dS^T Q, with dA = dO V^T (v is stored transposed: v[j + d*M]). */
static void attn_back_head(struct ggml_tensor *dst, int64_t h, int64_t b, float *A, float *dS) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *dO = dst->src[3];
    const int64_t D = q->ne[0], N = q->ne[1], M = k->ne[1], H = q->ne[2];
    const float scale = 1.0f / sqrtf((float)D);
    size_t offs[3];
    packed_offsets(dst, offs);
    float *gq = (float *)dst->data + offs[0] + (b * H + h) * N * D;
    float *gk = (float *)dst->data + offs[1] + (b * H + h) * M * D;
    float *gv = (float *)dst->data + offs[2] + (b * H + h) * M * D;
    attn_probs(q, k, ggmlc_op_param_i32(dst, 0) != 0, h, b, A);
    for (int64_t i = 0; i < N; i++) {
        double rowdot = 0.0;
        for (int64_t j = 0; j < M; j++) {
            float da = 0.0f;
            for (int64_t d = 0; d < D; d++) da += at(dO, d, i, h, b) * at(v, j, d, h, b);
            dS[i * M + j] = da;
            rowdot += (double)A[i * M + j] * da;
        }
        for (int64_t j = 0; j < M; j++) dS[i * M + j] = A[i * M + j] * (dS[i * M + j] - (float)rowdot);
    }
    for (int64_t i = 0; i < N; i++) {
        for (int64_t d = 0; d < D; d++) {
            float s = 0.0f;
            for (int64_t j = 0; j < M; j++) s += dS[i * M + j] * at(k, d, j, h, b);
            gq[i * D + d] = scale * s;
        }
    }
    for (int64_t j = 0; j < M; j++) {
        for (int64_t d = 0; d < D; d++) {
            float sk = 0.0f, sv = 0.0f;
            for (int64_t i = 0; i < N; i++) {
                sk += dS[i * M + j] * at(q, d, i, h, b);
                sv += A[i * M + j] * at(dO, d, i, h, b);
            }
            gk[j * D + d] = scale * sk;
            gv[d * M + j] = sv;
        }
    }
}

static enum ggml_status flash_attn_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1];
    const int64_t NM = q->ne[1] * k->ne[1];
    float *A = nn_scratch(call, 2 * NM), *dS = A + NM;
    if (call->ith == 0) memset(dst->data, 0, ggml_nbytes(dst)); /* the alignment gaps */
    if (call->barrier) call->barrier(call);
    int64_t j0, j1;
    cpu_split_range(q->ne[2] * q->ne[3], call->ith, call->nth, &j0, &j1);
    for (int64_t j = j0; j < j1; j++) attn_back_head(dst, j % q->ne[2], j / q->ne[2], A, dS);
    return GGML_STATUS_SUCCESS;
}

/* K and V rows are read through their type's to_float: decline block types without one
 * (layouts ggmlc knows but cannot convert yet, such as Q1_0). */
static bool kv_readable(enum ggml_type type) {
    return type == GGML_TYPE_F32 || ggml_get_type_traits(type)->to_float != NULL;
}

static bool flash_attn_supports(const struct ggml_tensor *node) {
    return kv_readable(node->src[1]->type) && kv_readable(node->src[2]->type);
}

void cpu_nn_attn_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_FLASH_ATTN_EXT] = flash_attn_compute;
    t->supports[GGML_OP_FLASH_ATTN_EXT] = flash_attn_supports;
    t->work_size[GGML_OP_FLASH_ATTN_EXT] = flash_attn_work;
    t->compute[GGML_OP_FLASH_ATTN_BACK] = flash_attn_back_compute;
    t->work_size[GGML_OP_FLASH_ATTN_BACK] = flash_attn_back_work;
}
