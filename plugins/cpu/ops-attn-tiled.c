/*
 * ops-attn-tiled.c - FLASH_ATTN_EXT rounded as ggml's x86 CPU backend rounds
 * its tiled path (prompts: f32 q, K and V both f32 or both f16, at least 64
 * query rows, the value head a multiple of the build's f32 vector: 16 floats
 * where the CPU has AVX-512, else 8), so that a prompt's attention keeps
 * ggml's bits.  Each query row (of a head) is computed on its own, over the
 * keys in tiles of 64 from the first:
 *  - K and V converted to f32 exactly, the query kept in f32;
 *  - each score one chain of fused multiply-adds over the head from 0
 *    (acc = fma(k[d], q[d], acc), d = 0, 1, ...), then times scale; the
 *    keys past the end of the last tile are -inf; then the f16 mask added
 *    (a plain float add);
 *  - a tile whose scores of the row are all -inf is passed over; else with
 *    m the tile's maximum, M = fmaxf(M, m); where M grew, the accumulator
 *    and S are multiplied by expf(M_old - M); the scores become
 *    exp(s - M) and their sum (ggml_vec_soft_max_f32's order and
 *    exponential: cpu_softmax_exp_sum over all 64, the padding included)
 *    is added to S in double, rounded to float;
 *  - acc[d] = fma(v_j[d], p_j, acc[d]) over the tile's 64 keys in order
 *    (the padding's zero weights and zero rows included);
 *  - the result acc * (1 / S) (0 where S is 0).
 * A row's result does not depend on the other rows of its tile, so any split
 * of the rows among tasks gives the same bits, with one corner: a tile of
 * keys is passed over for a whole tile of queries where the mask hides it
 * from all of them; where it hides it from this row only, the row's zero
 * weights still go through the value sums (as in ggml), which turns a -0 in
 * the accumulator (a negative sum scaled to zero by an underflowed expf)
 * into +0 where the value is positive.  ggml's tiles of queries start where
 * its chunks of rows do (which depend on its thread count), these at
 * multiples of 64 per head, so that sign of a zero may differ from ggml's.
 * ALiBi, the softcap and sinks take ops-attn.c's kernel.  The loops are plain
 * C compiled per x86-64 level (EW_CLONES): every level, "generic" included,
 * gives the same bits (fmaf is exact everywhere; the exponentials follow the
 * CPU's ggml order whatever GGMLC_CPU_PATH says).
 */
#include "ops-nn.h"
#include "simd.h"

/* ggml's tile sizes (GGML_FA_TILE_Q, GGML_FA_TILE_KV). */
#define TILE_Q  64
#define TILE_KV 64
/* Query rows whose scores are computed together (each key vector loaded once for them). */
#define TILED_ROWS 4
/* Query rows whose value sums are computed together: eight independent chains of fused
 * multiply-adds per vector of values, each value vector loaded once for them. */
#define VALUE_ROWS 8

/* The f32 vector of ggml's x86 build for this CPU, in floats. */
static int64_t ggml_f32_lanes(void) { return cpu_simd_best_level() >= CPU_SIMD_AVX512 ? 16 : 8; }

bool cpu_flash_attn_tiled_applies(const struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2],
                             *mask = dst->src[3];
    const struct ggmlc_flash_attn_params fa = ggmlc_flash_attn_params_of(dst);
    if (q->type != GGML_TYPE_F32 || k->type != v->type) return false;
    if (k->type != GGML_TYPE_F32 && k->type != GGML_TYPE_F16) return false;
    if (q->ne[1] < TILE_Q || v->ne[0] % ggml_f32_lanes() != 0) return false;
    if (dst->src[4] || fa.max_bias != 0.0f || fa.logit_softcap != 0.0f) return false;
    if (mask && mask->type != GGML_TYPE_F16) return false;
    if (dst->type != GGML_TYPE_F32 || q->nb[0] != sizeof(float)) return false;
    return k->nb[0] == ggml_type_size(k->type) && v->nb[0] == ggml_type_size(v->type);
}

/* A task converts each K/V head's tiles of keys to f32 once, as its query tiles first ask for
 * them, for all the query tiles of its share that read the head (the head's tiles of queries,
 * and the query heads sharing it in grouped-query attention), where converting (and
 * transposing the keys) for every tile of queries took 5% of the op (ggmlc-bench
 * flash_attn_ext, 512 queries over 512 keys, 12 heads of 64 on 4, f16, 2 Zen 5 threads:
 * 5.67 -> 5.40 ms, medians of 8 alternating rounds).
 * A task's share is a run of (query tile, head, batch) in that order, so it meets a K/V head
 * in one stretch (again per batch only where the batches share one K/V).  The conversions
 * stay those of load_kv_tile, so the bits do not change.  Bounded as ops-attn.c's cache:
 * at most ATTN_CACHE_MAX_FLOATS a task, 4096 keys of heads of 128; the tiles past them (long
 * contexts) are converted per tile of queries, as before. */

static int64_t kv_tiles_of(const struct ggml_tensor *dst) {
    return (dst->src[1]->ne[1] + TILE_KV - 1) / TILE_KV;
}

/* Floats of a tile of keys in f32: its keys (transposed) and its value rows. */
static int64_t kv_tile_floats(const struct ggml_tensor *dst) {
    return TILE_KV * (dst->src[1]->ne[0] + dst->src[2]->ne[0]);
}

/* The tiles of keys the cache holds (the first ones). */
static int64_t kv_cached_tiles(const struct ggml_tensor *dst) {
    const int64_t fit = ATTN_CACHE_MAX_FLOATS / kv_tile_floats(dst), tiles = kv_tiles_of(dst);
    return tiles < fit ? tiles : fit;
}

/* Floats of a query tile's work: query rows, keys (transposed), value rows, scores,
 * accumulators, M and S; a multiple of 64 (the cache after them stays aligned). */
static int64_t q_tile_floats(const struct ggml_tensor *dst) {
    const int64_t dk = dst->src[1]->ne[0], dv = dst->src[2]->ne[0];
    return TILE_Q * dk + TILE_KV * dk + TILE_KV * dv + TILE_Q * TILE_KV + TILE_Q * dv + 2 * TILE_Q;
}

int64_t cpu_flash_attn_tiled_floats(const struct ggml_tensor *dst) {
    const int64_t tiles = kv_cached_tiles(dst), flags = tiles / (int64_t)sizeof(float) + 1;
    return q_tile_floats(dst) + tiles * kv_tile_floats(dst) + flags;
}

/* s[r][j] = the fused chain over d of kt[d][j] * q[r][d], for rows r < TILED_ROWS. */
EW_CLONES static void rows_scores(const float *q, int64_t dk, const float *kt, float *s) {
    float acc[TILED_ROWS][TILE_KV];
    for (int r = 0; r < TILED_ROWS; r++)
        for (int j = 0; j < TILE_KV; j++) acc[r][j] = 0.0f;
    for (int64_t d = 0; d < dk; d++) {
        const float *kd = kt + d * TILE_KV;
        for (int r = 0; r < TILED_ROWS; r++) {
            const float qd = q[r * dk + d];
            for (int j = 0; j < TILE_KV; j++) acc[r][j] = fmaf(kd[j], qd, acc[r][j]);
        }
    }
    memcpy(s, acc, sizeof acc);
}

/* One row's scores as ggml_compute_forward_flash_attn_ext_tiled's gemm computes them. */
EW_CLONES static void row_scores(const float *q, int64_t dk, const float *kt, float *s) {
    float acc[TILE_KV];
    for (int j = 0; j < TILE_KV; j++) acc[j] = 0.0f;
    for (int64_t d = 0; d < dk; d++) {
        const float *kd = kt + d * TILE_KV;
        const float qd = q[d];
        for (int j = 0; j < TILE_KV; j++) acc[j] = fmaf(kd[j], qd, acc[j]);
    }
    memcpy(s, acc, sizeof acc);
}

/* acc[r][d] = the fused chain over the tile's keys j of v[j][d] * p[r][j], rows r < nr. */
EW_CLONES static void rows_values(const float *p, int nr, const float *v, int64_t dv, float *acc) {
    for (int64_t d0 = 0; d0 < dv; d0 += 16) {
        const int64_t w = dv - d0 < 16 ? dv - d0 : 16;
        if (w == 16 && nr == VALUE_ROWS) {
            float a[VALUE_ROWS][16];
            for (int r = 0; r < VALUE_ROWS; r++) memcpy(a[r], acc + r * dv + d0, sizeof a[r]);
            for (int j = 0; j < TILE_KV; j++) {
                const float *vj = v + j * dv + d0;
                for (int r = 0; r < VALUE_ROWS; r++) {
                    const float pj = p[r * TILE_KV + j];
                    for (int l = 0; l < 16; l++) a[r][l] = fmaf(vj[l], pj, a[r][l]);
                }
            }
            for (int r = 0; r < VALUE_ROWS; r++) memcpy(acc + r * dv + d0, a[r], sizeof a[r]);
        } else {
            for (int r = 0; r < nr; r++)
                for (int j = 0; j < TILE_KV; j++) {
                    const float pj = p[r * TILE_KV + j];
                    for (int64_t l = 0; l < w; l++)
                        acc[r * dv + d0 + l] = fmaf(v[j * dv + d0 + l], pj, acc[r * dv + d0 + l]);
                }
        }
    }
}

EW_CLONES static void scale_row(float *x, int64_t n, float s) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

/* Row (i1, head i2, batch i3) of dst. */
static float *tiled_out_row(struct ggml_tensor *dst, int64_t i1, int64_t i2, int64_t i3) {
    return (float *)((char *)dst->data +
                     (i3 * dst->ne[2] * dst->ne[1] + i2 + i1 * dst->ne[1]) * dst->nb[1]);
}

/* Keys [j0, j0 + nk) of K (head ik2, ik3) into kt transposed (kt[d][j]) and of V into vt
 * (rows of dv), f32, the rest of the tile zeros. */
static void load_kv_tile(const struct ggml_tensor *k, const struct ggml_tensor *v, int64_t j0,
                         int64_t nk, int64_t ik2, int64_t ik3, int64_t iv2, int64_t iv3, float *kt,
                         float *vt) {
    const int64_t dk = k->ne[0], dv = v->ne[0];
    float row[1024];
    for (int64_t j = 0; j < nk; j++) {
        const char *kr = nn_elem(k, 0, j0 + j, ik2, ik3);
        for (int64_t d0 = 0; d0 < dk; d0 += 1024) {
            const int64_t n = dk - d0 < 1024 ? dk - d0 : 1024;
            ew_load(row, kr + d0 * k->nb[0], k->type, k->nb[0], n);
            for (int64_t d = 0; d < n; d++) kt[(d0 + d) * TILE_KV + j] = row[d];
        }
        ew_load(vt + j * dv, nn_elem(v, 0, j0 + j, iv2, iv3), v->type, v->nb[0], dv);
    }
    for (int64_t j = nk; j < TILE_KV; j++) {
        for (int64_t d = 0; d < dk; d++) kt[d * TILE_KV + j] = 0.0f;
        memset(vt + j * dv, 0, (size_t)dv * sizeof(float));
    }
}

/* The K/V head a task holds in f32: tile ti < cached's keys transposed at kt + ti * TILE_KV *
 * dk (as load_kv_tile's kt) and its value rows at vt + ti * TILE_KV * dv, ready[ti] once
 * converted; later tiles are converted into the query tile's kt1 and vt1. */
struct kv_head {
    const struct ggml_tensor *k, *v;
    int64_t ik2, ik3, iv2, iv3; /* the head held; ik2 -1: none yet */
    int64_t cached;
    float *kt, *vt, *kt1, *vt1;
    unsigned char *ready;
};

/* The task's cache in its scratch (after the query tile's floats), holding no head. */
static void kv_head_init(const struct ggml_tensor *dst, float *scratch, struct kv_head *c) {
    const int64_t dk = dst->src[1]->ne[0], dv = dst->src[2]->ne[0];
    c->k = dst->src[1], c->v = dst->src[2];
    c->ik2 = c->ik3 = c->iv2 = c->iv3 = -1;
    c->cached = kv_cached_tiles(dst);
    c->kt1 = scratch + TILE_Q * dk, c->vt1 = c->kt1 + TILE_KV * dk;
    c->kt = scratch + q_tile_floats(dst), c->vt = c->kt + c->cached * TILE_KV * dk;
    c->ready = (unsigned char *)(c->vt + c->cached * TILE_KV * dv);
}

/* Holds the K/V head of query head i2, batch i3 (its tiles converted as they are asked for). */
static void kv_head_hold(struct kv_head *c, const struct ggml_tensor *q, int64_t i2, int64_t i3) {
    const int64_t ik2 = i2 / (q->ne[2] / c->k->ne[2]), ik3 = i3 / (q->ne[3] / c->k->ne[3]);
    const int64_t iv2 = i2 / (q->ne[2] / c->v->ne[2]), iv3 = i3 / (q->ne[3] / c->v->ne[3]);
    if (ik2 == c->ik2 && ik3 == c->ik3 && iv2 == c->iv2 && iv3 == c->iv3) return;
    c->ik2 = ik2, c->ik3 = ik3, c->iv2 = iv2, c->iv3 = iv3;
    memset(c->ready, 0, (size_t)c->cached);
}

/* The held head's tile of keys [j0, j0 + nk) in f32: *kt its keys transposed, *vt its values. */
static void kv_head_tile(struct kv_head *c, int64_t j0, int64_t nk, const float **kt,
                         const float **vt) {
    const int64_t ti = j0 / TILE_KV, dk = c->k->ne[0], dv = c->v->ne[0];
    float *kd = c->kt1, *vd = c->vt1;
    if (ti < c->cached) {
        kd = c->kt + ti * TILE_KV * dk, vd = c->vt + ti * TILE_KV * dv;
        if (!c->ready[ti]) load_kv_tile(c->k, c->v, j0, nk, c->ik2, c->ik3, c->iv2, c->iv3, kd, vd);
        c->ready[ti] = 1;
    } else {
        load_kv_tile(c->k, c->v, j0, nk, c->ik2, c->ik3, c->iv2, c->iv3, kd, vd);
    }
    *kt = kd, *vt = vd;
}

/* Whether some row of the nq mask rows has a key above -inf among keys j0 .. j0 + nk (each row
 * scanned whole, so that the scan vectorizes). */
static bool mask_tile_live(const ggml_fp16_t *const *mrow, int64_t nq, int64_t j0, int64_t nk) {
    for (int64_t r = 0; r < nq; r++) {
        int live = 0;
        for (int64_t j = 0; j < nk; j++) live |= mrow[r][j0 + j] != F16_MINUS_INF;
        if (live) return true;
    }
    return false;
}

/* Query rows [i1, i1 + nq) of head i2, batch i3. */
static void attend_q_tile(struct ggml_tensor *dst, float scale, int64_t i1, int64_t nq, int64_t i2,
                          int64_t i3, float *scratch, struct kv_head *kv) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2],
                             *mask = dst->src[3];
    const int64_t dk = k->ne[0], dv = v->ne[0], nkv = k->ne[1];
    float *qb = scratch, *s = kv->vt1 + TILE_KV * dv; /* kv's kt1, vt1 after the query rows */
    float *acc = s + TILE_Q * TILE_KV, *M = acc + TILE_Q * dv, *S = M + TILE_Q;
    for (int64_t r = 0; r < TILE_Q; r++) {
        if (r < nq)
            memcpy(qb + r * dk, nn_elem(q, 0, i1 + r, i2, i3), (size_t)dk * sizeof(float));
        else
            memset(qb + r * dk, 0, (size_t)dk * sizeof(float));
        M[r] = -INFINITY, S[r] = 0.0f;
    }
    memset(acc, 0, (size_t)(TILE_Q * dv) * sizeof(float));
    const ggml_fp16_t *mrow[TILE_Q];
    for (int64_t r = 0; r < nq; r++)
        mrow[r] =
            mask ? (const ggml_fp16_t *)nn_elem(mask, 0, i1 + r, i2 % mask->ne[2], i3 % mask->ne[3])
                 : NULL;
    for (int64_t j0 = 0; j0 < nkv; j0 += TILE_KV) {
        const int64_t nk = nkv - j0 < TILE_KV ? nkv - j0 : TILE_KV;
        if (mask && !mask_tile_live(mrow, nq, j0, nk)) continue; /* nothing to do */
        const float *kt, *vt;
        kv_head_tile(kv, j0, nk, &kt, &vt);
        int64_t r = 0;
        for (; r + TILED_ROWS <= nq; r += TILED_ROWS)
            rows_scores(qb + r * dk, dk, kt, s + r * TILE_KV);
        for (; r < nq; r++) row_scores(qb + r * dk, dk, kt, s + r * TILE_KV);
        for (r = 0; r < nq; r++) {
            float *sr = s + r * TILE_KV;
            scale_row(sr, TILE_KV, scale);
            for (int64_t j = nk; j < TILE_KV; j++) sr[j] = -INFINITY;
            if (mask) {
                float mv[TILE_KV];
                ew_f16_to_f32_row(nk, mv, mrow[r] + j0);
                for (int64_t j = 0; j < nk; j++) sr[j] += mv[j];
            }
            const float m = nn_row_max(sr, TILE_KV, -INFINITY);
            if (m == -INFINITY) { /* the row has no key here: zero weights */
                memset(sr, 0, TILE_KV * sizeof(float));
                continue;
            }
            const float m_new = fmaxf(M[r], m);
            if (m_new > M[r]) {
                const float ms = expf(M[r] - m_new);
                scale_row(acc + r * dv, dv, ms);
                S[r] *= ms;
            }
            M[r] = m_new;
            S[r] = (float)((double)S[r] + cpu_softmax_exp_sum(TILE_KV, sr, sr, m_new));
        }
        for (r = 0; r < nq; r += VALUE_ROWS) {
            const int nr = nq - r < VALUE_ROWS ? (int)(nq - r) : VALUE_ROWS;
            rows_values(s + r * TILE_KV, nr, vt, dv, acc + r * dv);
        }
    }
    for (int64_t r = 0; r < nq; r++) {
        const float s_inv = S[r] == 0.0f ? 0.0f : 1.0f / S[r];
        float *out = tiled_out_row(dst, i1 + r, i2, i3);
        for (int64_t d = 0; d < dv; d++) out[d] = acc[r * dv + d] * s_inv;
    }
}

bool cpu_flash_attn_tiled(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (!cpu_flash_attn_tiled_applies(dst)) return false;
    const struct ggml_tensor *q = dst->src[0];
    const float scale = ggmlc_flash_attn_params_of(dst).scale;
    float *scratch = nn_scratch(call, cpu_attn_scratch_floats(dst));
    struct kv_head kv;
    kv_head_init(dst, scratch, &kv);
    const int64_t per_head = (q->ne[1] + TILE_Q - 1) / TILE_Q;
    int64_t u0, u1;
    cpu_split_range(per_head * q->ne[2] * q->ne[3], call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t i1 = (u % per_head) * TILE_Q, i2 = (u / per_head) % q->ne[2],
                      i3 = u / (per_head * q->ne[2]);
        const int64_t nq = q->ne[1] - i1 < TILE_Q ? q->ne[1] - i1 : TILE_Q;
        kv_head_hold(&kv, q, i2, i3);
        attend_q_tile(dst, scale, i1, nq, i2, i3, scratch, &kv);
    }
    return true;
}
