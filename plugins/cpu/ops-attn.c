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

/* Queries that share each tile of key and value rows loaded (and converted) once: 32 took
 * 11% less time than 16, 64 no less than 32 (ggmlc-bench flash_attn_ext: 512 queries over
 * 512 keys, causal, 12 heads on 4, one thread, dev VM: 38.5, 34.2, 34.0 ms). */
#define ATTN_BLOCK 32
/* Keys scored per tile: the online softmax rescales its running sums once per tile, not
 * once per key, and the scores and exponentials of a tile vectorize across keys.  On
 * llama.cpp's 128-token prompt through a 2-layer model (head size 32, F16 KV cache), one
 * thread, a loaded 2-core Zen 4: 8-10k tokens/s with one key at a time (attention 48% of
 * the time, its dot products ending in serial sums) against 51-53k tiled (ggml: 68-70k). */
#define ATTN_KEYS 32
/* Blocks of at least this many queries transpose each key tile once for all of them. */
#define ATTN_TRANSPOSE_MIN 4

/* Prompts (blocks of many queries) keep the tiles of a K/V head converted to f32, the keys
 * transposed, in each task's scratch: the head's later query blocks and the query heads
 * sharing it (grouped-query attention) read them from there.  Converting and transposing
 * every tile for every block of queries took a fifth of a 512-query prompt's attention (dev
 * VM, F16 cache).  At most ATTN_CACHE_MAX_FLOATS a task; longer caches convert per block. */

/* The K/V head a task holds converted: per tile ti, the keys transposed at kt + ti * dk *
 * ATTN_KEYS (as tile_keys_transposed) and the value rows' f32 form at vrows[ti * ATTN_KEYS
 * + j] (in v where they are converted); ready[ti] once filled. */
struct kv_cache {
    int64_t ik2, ik3; /* the head held; -1: none */
    float *kt, *v;
    const float **vrows;
    unsigned char *ready;
};

static int64_t attn_tiles_of(const struct ggml_tensor *dst) {
    return (dst->src[1]->ne[1] + ATTN_KEYS - 1) / ATTN_KEYS;
}

/* Floats of a task's kv_cache, 0 where the node takes none (few queries, or too long a cache). */
static int64_t kv_cache_floats(const struct ggml_tensor *dst) {
    if (dst->src[0]->ne[1] < ATTN_TRANSPOSE_MIN) return 0;
    const int64_t keys = attn_tiles_of(dst) * ATTN_KEYS, dk = dst->src[1]->ne[0],
                  dv = dst->src[2]->ne[0];
    const int64_t pointers = keys * (int64_t)sizeof(float *) / (int64_t)sizeof(float),
                  flags = attn_tiles_of(dst) / 4 + 1;
    const int64_t floats = keys * (dk + dv) + pointers + flags;
    return floats <= ATTN_CACHE_MAX_FLOATS ? floats : 0;
}

/* The tiles' floats of a task: a block of query rows and of accumulators, a tile of keys
 * (transposed) and of value rows, the block's mask values over a tile, one key row being
 * converted; rounded to a cache line, the kv_cache after them. */
static int64_t attn_tile_floats(const struct ggml_tensor *dst) {
    const int64_t dk = dst->src[0]->ne[0], dv = dst->src[2]->ne[0];
    return (ATTN_BLOCK * (dk + dv) + ATTN_KEYS * (dk + dv) + ATTN_BLOCK * ATTN_KEYS + dk + 15) &
           ~(int64_t)15;
}

/* Scratch of the forward per task. */
int64_t cpu_attn_scratch_floats(const struct ggml_tensor *dst) {
    const int64_t tiles = attn_tile_floats(dst) + kv_cache_floats(dst);
    const int64_t partials =
        dst->src[0]->ne[2] * (2 + dst->src[2]->ne[0]); /* ops-attn-match.c's split-KV path */
    const int64_t most = tiles > partials ? tiles : partials;
    const int64_t tiled = cpu_flash_attn_tiled_applies(dst) ? cpu_flash_attn_tiled_floats(dst) : 0;
    return most > tiled ? most : tiled;
}

/* The task's kv_cache in its scratch, holding no head; false where the node takes none. */
static bool kv_cache_init(const struct ggml_tensor *dst, float *scratch, struct kv_cache *c) {
    if (kv_cache_floats(dst) == 0) return false;
    const int64_t keys = attn_tiles_of(dst) * ATTN_KEYS, dk = dst->src[1]->ne[0],
                  dv = dst->src[2]->ne[0];
    float *base = scratch + attn_tile_floats(dst); /* 64-byte aligned */
    c->vrows = (const float **)base;
    c->kt = base + keys * (int64_t)sizeof(float *) / (int64_t)sizeof(float);
    c->v = c->kt + keys * dk;
    c->ready = (unsigned char *)(c->v + keys * dv);
    c->ik2 = c->ik3 = -1;
    return true;
}

static size_t flash_attn_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(cpu_attn_scratch_floats(dst), n_threads);
}

/* Sum of a[i] * b[i] for a key row (blocks of few queries, where transposing the keys
 * would cost more than it saves): sixteen partial sums, added pairwise at the end. */
static inline float dot_f32(const float *a, const float *b, int64_t n) {
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int l = 0; l < 16; l++) part[l] += a[i + l] * b[i + l];
    }
    for (int w = 8; w >= 1; w /= 2) {
        for (int l = 0; l < w; l++) part[l] += part[l + w];
    }
    for (; i < n; i++) part[0] += a[i] * b[i];
    return part[0];
}

/* Online softmax state of one query: running maximum, normaliser and weighted sum of V. */
struct online_softmax {
    float max, sum;
    float *acc;
    int64_t dv;
};

/* Raise the running maximum to m (>= max), rescaling what was accumulated. */
static void online_raise(struct online_softmax *o, float m) {
    if (m <= o->max) return;
    const float shrink = o->max == -INFINITY ? 0.0f : ew_expf(o->max - m);
    for (int64_t i = 0; i < o->dv; i++) o->acc[i] *= shrink;
    o->sum *= shrink;
    o->max = m;
}

/* What the scores of one tile need besides the query, keys and values. */
struct attn_tile {
    const float *const *k;            /* nk key rows (blocks of few queries) */
    const float *const *v;            /* nk value rows */
    int64_t nk, dk;
    float qk_scale, softcap, slope;
};

/* The tile's maximum and sum run in eight lanes, one per lane of a vector register, then
 * meet: a single running value was a chain of 32 dependent operations per query and tile
 * (with the exponentials, a fifth of a 512-query prompt's attention on the dev VM). */
#define ATTN_LANES 8

static inline float lanes_max(const float part[ATTN_LANES]) {
    float m = part[0];
    for (int l = 1; l < ATTN_LANES; l++) m = part[l] > m ? part[l] : m;
    return m;
}

static inline float lanes_sum(float part[ATTN_LANES]) {
    for (int w = ATTN_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) part[l] += part[l + w];
    return part[0];
}

/* Turn the raw scores s of one query against a tile (mask values mv, -inf: skipped; NULL:
 * none, every key of a full tile counts) into the weights e^(s - max) of its values, after
 * one rescale of the query's online softmax for the tile; false (and s all zero) when the
 * tile gives the query no weight.  Every loop runs the whole tile (a fixed count the
 * compiler keeps in registers): keys past nk have zero scores and -inf mask values. */
EW_CLONES static bool tile_weights(const struct attn_tile *t, float *restrict s,
                                   const float *restrict mv, struct online_softmax *o) {
    const float slope = t->slope;
    float part[ATTN_LANES];
    if (t->softcap != 0.0f) {
        for (int j = 0; j < ATTN_KEYS; j++) s[j] = t->softcap * tanhf(s[j] * t->qk_scale); /* c tanh(q.k scale / c) */
    } else {
        for (int j = 0; j < ATTN_KEYS; j++) s[j] *= t->qk_scale;
    }
    for (int l = 0; l < ATTN_LANES; l++) part[l] = -INFINITY;
    for (int c = 0; c < ATTN_KEYS && mv; c += ATTN_LANES)
        for (int l = 0; l < ATTN_LANES; l++) {
            const float y = s[c + l] + slope * mv[c + l],
                        x = mv[c + l] == -INFINITY ? -INFINITY : y;
            s[c + l] = x;
            part[l] = x > part[l] ? x : part[l];
        }
    for (int c = 0; c < ATTN_KEYS && !mv; c += ATTN_LANES)
        for (int l = 0; l < ATTN_LANES; l++) part[l] = s[c + l] > part[l] ? s[c + l] : part[l];
    const float tile_max = lanes_max(part);
    if (tile_max == -INFINITY) { /* no weight, and -inf - -inf would be NaN */
        memset(s, 0, ATTN_KEYS * sizeof(float));
        return false;
    }
    online_raise(o, tile_max);
    for (int j = 0; j < ATTN_KEYS; j++) s[j] = ew_expf(s[j] - o->max); /* e^-inf is 0 */
    for (int l = 0; l < ATTN_LANES; l++) part[l] = 0.0f;
    for (int c = 0; c < ATTN_KEYS; c += ATTN_LANES)
        for (int l = 0; l < ATTN_LANES; l++) part[l] += s[c + l];
    o->sum += lanes_sum(part);
    return true;
}

/* One query of a block of few (decoding): its scores as dot products with the key rows,
 * then the weighted sum of the values, 16 outputs at a time held in registers over the keys. */
EW_CLONES static void attend_tile(const struct attn_tile *t, const float *q, const float *mv,
                                  struct online_softmax *o) {
    float s[ATTN_KEYS] = {0};
    for (int64_t j = 0; j < t->nk; j++) s[j] = dot_f32(q, t->k[j], t->dk);
    if (!tile_weights(t, s, mv, o)) return;
    int64_t i0 = 0;
    for (; i0 + 16 <= o->dv; i0 += 16) {
        float r[16];
        for (int l = 0; l < 16; l++) r[l] = o->acc[i0 + l];
        for (int64_t j = 0; j < t->nk; j++) {
            const float w = s[j], *vr = t->v[j] + i0;
            for (int l = 0; l < 16; l++) r[l] += w * vr[l];
        }
        for (int l = 0; l < 16; l++) o->acc[i0 + l] = r[l];
    }
    for (int64_t j = 0; j < t->nk && i0 < o->dv; j++) {
        for (int64_t i = i0; i < o->dv; i++) o->acc[i] += s[j] * t->v[j][i];
    }
}

/* Blocks of many queries multiply like a small GEMM: ATTN_ROWS queries by 16 keys (or 16
 * value elements) of accumulators, each loaded key or value vector used by ATTN_ROWS
 * multiply-adds, and 8 independent sums in flight where one query alone had 2 (its value
 * sum waited on each multiply-add's latency).  Each sum runs over the depth (the keys) in
 * the order the one-query loops use, so the results are the same. */
#define ATTN_ROWS 4

/* Eight lanes, in GCC's vector extension: the clones compile it to one AVX register, the
 * portable build to what the target has (the auto-vectorizer turned these loops inside out). */
typedef float attn_v8 __attribute__((vector_size(32)));

/* v = the eight floats at p (any alignment) */
#define ATTN_LOAD8(v, p) memcpy(&(v), (p), sizeof(attn_v8))

/* a[i] += c[i * c_stride] * (x0, x1) for the ATTN_ROWS rows of a register block. */
static inline __attribute__((always_inline)) void rows_madd16(attn_v8 a[ATTN_ROWS][2], const float *c, int64_t c_stride,
                                                              attn_v8 x0, attn_v8 x1) {
#pragma GCC unroll 4
    for (int i = 0; i < ATTN_ROWS; i++) {
        const float ci = c[i * c_stride];
        a[i][0] += ci * x0;
        a[i][1] += ci * x1;
    }
}

/* s[r * ATTN_KEYS + j] = q_r . k_j for rows r < rows (a multiple of ATTN_ROWS) of q (dk
 * apart) and the tile's keys transposed in kt (row d holds element d of each key). */
EW_CLONES static void block_scores(const float *q, int64_t rows, int64_t dk, const float *kt, float *s) {
    for (int64_t r = 0; r < rows; r += ATTN_ROWS) {
        for (int h = 0; h < ATTN_KEYS; h += 16) {
            attn_v8 acc[ATTN_ROWS][2] = {{{0}}};
            for (int64_t d = 0; d < dk; d++) {
                attn_v8 k0, k1;
                ATTN_LOAD8(k0, kt + d * ATTN_KEYS + h);
                ATTN_LOAD8(k1, kt + d * ATTN_KEYS + h + 8);
                rows_madd16(acc, q + r * dk + d, dk, k0, k1);
            }
            for (int i = 0; i < ATTN_ROWS; i++) memcpy(s + (r + i) * ATTN_KEYS + h, acc[i], sizeof acc[i]);
        }
    }
}

/* acc[r * dv + i] += sum_j w[r * ATTN_KEYS + j] * v_j[i] for rows r < rows (a multiple of
 * ATTN_ROWS) and the tile's nk value rows. */
EW_CLONES static void block_values(const float *w, int64_t rows, const float *const *v, int64_t nk, int64_t dv,
                                   float *acc) {
    for (int64_t r = 0; r < rows; r += ATTN_ROWS) {
        int64_t i0 = 0;
        for (; i0 + 16 <= dv; i0 += 16) {
            attn_v8 a[ATTN_ROWS][2];
            for (int i = 0; i < ATTN_ROWS; i++) memcpy(a[i], acc + (r + i) * dv + i0, sizeof a[i]);
            for (int64_t j = 0; j < nk; j++) {
                attn_v8 v0, v1;
                ATTN_LOAD8(v0, v[j] + i0);
                ATTN_LOAD8(v1, v[j] + i0 + 8);
                rows_madd16(a, w + r * ATTN_KEYS + j, ATTN_KEYS, v0, v1);
            }
            for (int i = 0; i < ATTN_ROWS; i++) memcpy(acc + (r + i) * dv + i0, a[i], sizeof a[i]);
        }
        for (int i = 0; i < ATTN_ROWS; i++)
            for (int64_t j = 0; j < nk && i0 < dv; j++)
                for (int64_t e = i0; e < dv; e++) acc[(r + i) * dv + e] += w[(r + i) * ATTN_KEYS + j] * v[j][e];
    }
}

/* One block of queries [i1, i1 + nq) of head i2, batch i3. */
struct attn_block {
    int64_t i1, nq, i2, i3;
    const char *mask_rows[ATTN_BLOCK];
    struct online_softmax state[ATTN_BLOCK];
    float *q; /* nq rows of dk */
};

/* What a query gets of a tile: every key, its score as it is (open: no mask value to add),
 * no key (closed), or the mask values in mv (mixed). */
enum mask_row { MASK_OPEN, MASK_CLOSED, MASK_MIXED };

/* The kind of a full tile's f16 mask row m: all +0 is open, all -inf closed.  A causal
 * mask's rows are one or the other but at the diagonal, and telling them apart in f16 spares
 * converting them (a tenth of a 512-query prompt's attention). */
static enum mask_row f16_mask_kind(const ggml_fp16_t *m) {
    uint16_t any = 0, all = 0xffff;
    for (int j = 0; j < ATTN_KEYS; j++) any |= m[j], all &= m[j];
    return any == 0 ? MASK_OPEN : any == F16_MINUS_INF && all == F16_MINUS_INF ? MASK_CLOSED : MASK_MIXED;
}

/* The kind of each of the block's query rows over keys [j0, j0 + nk), and the mask values of
 * the mixed ones (rows of ATTN_KEYS in mv; a tile of fewer keys is mixed, keys past nk -inf);
 * false when every row is closed. */
static bool block_mask(const struct ggml_tensor *mask, const struct attn_block *b, int64_t j0,
                       int64_t nk, float *mv, enum mask_row kind[ATTN_BLOCK]) {
    const bool full = nk == ATTN_KEYS,
               f16 = mask && mask->type == GGML_TYPE_F16 && mask->nb[0] == sizeof(ggml_fp16_t);
    bool any = false;
    for (int64_t r = 0; r < b->nq; r++) {
        const char *row = mask ? b->mask_rows[r] + j0 * mask->nb[0] : NULL;
        kind[r] = !full   ? MASK_MIXED
                  : !mask ? MASK_OPEN
                  : f16   ? f16_mask_kind((const ggml_fp16_t *)row)
                          : MASK_MIXED;
        if (kind[r] == MASK_MIXED) {
            float *m = mv + r * ATTN_KEYS;
            for (int64_t j = nk; j < ATTN_KEYS; j++) m[j] = -INFINITY; /* past the last key */
            if (mask)
                ew_load(m, row, mask->type, mask->nb[0], nk);
            else
                memset(m, 0, (size_t)nk * sizeof(float));
            bool open = false;
            for (int64_t j = 0; j < nk && !open; j++) open = m[j] != -INFINITY;
            if (!open) kind[r] = MASK_CLOSED;
        }
        any |= kind[r] != MASK_CLOSED;
    }
    return any;
}

/* Rows [j0, j0 + nk) of K or V (head i2, batch i3) as f32: where they lie when they are
 * f32, else converted into buf (nk rows of t->ne[0]). */
static void tile_rows(const struct ggml_tensor *t, int64_t j0, int64_t nk, int64_t i2, int64_t i3, float *buf,
                      const float **rows) {
    if (t->type == GGML_TYPE_F16 && t->nb[0] == sizeof(ggml_fp16_t)) { /* a KV cache's rows, the common case */
        for (int64_t j = 0; j < nk; j++) {
            float *row = buf + j * t->ne[0];
            ew_f16_to_f32_row(t->ne[0], row, (const ggml_fp16_t *)ew_row(t, j0 + j, i2, i3));
            rows[j] = row;
        }
        return;
    }
    for (int64_t j = 0; j < nk; j++) {
        rows[j] = nn_f32_row(t, j0 + j, i2, i3);
        if (!rows[j]) {
            float *row = buf + j * t->ne[0];
            nn_row_load(t, j0 + j, i2, i3, row);
            rows[j] = row;
        }
    }
}

/* Keys [j0, j0 + nk) of head i2, batch i3, transposed into kt (row d holds element d of
 * each key, ATTN_KEYS apart); row converts a key that is not f32 in place. */
static void tile_keys_transposed(const struct ggml_tensor *k, int64_t j0, int64_t nk, int64_t i2, int64_t i3,
                                 float *row, float *kt) {
    for (int64_t j = 0; j < nk; j++) {
        const float *kr = nn_f32_row(k, j0 + j, i2, i3);
        if (!kr) nn_row_load(k, j0 + j, i2, i3, row), kr = row;
        for (int64_t d = 0; d < k->ne[0]; d++) kt[d * ATTN_KEYS + j] = kr[d];
    }
    for (int64_t d = 0; d < k->ne[0]; d++) memset(kt + d * ATTN_KEYS + nk, 0, (size_t)(ATTN_KEYS - nk) * sizeof(float));
}

/* Tile [j0, j0 + nk) of K/V head (ik2, ik3) for a block of many queries: the keys transposed
 * (*kt) and the value rows (*vr), from the task's cache (filled on first use) or, without
 * one, converted into kbuf, vbuf and vrows (row: a key row being converted). */
static void kv_tile(struct kv_cache *c, const struct ggml_tensor *k, const struct ggml_tensor *v,
                    int64_t j0, int64_t nk, int64_t ik2, int64_t ik3, float *row, float *kbuf,
                    float *vbuf, const float **vrows, const float **kt, const float *const **vr) {
    if (!c) {
        tile_keys_transposed(k, j0, nk, ik2, ik3, row, kbuf);
        tile_rows(v, j0, nk, ik2, ik3, vbuf, vrows);
        *kt = kbuf, *vr = vrows;
        return;
    }
    if (c->ik2 != ik2 || c->ik3 != ik3) {
        memset(c->ready, 0, (size_t)(k->ne[1] + ATTN_KEYS - 1) / ATTN_KEYS);
        c->ik2 = ik2, c->ik3 = ik3;
    }
    const int64_t ti = j0 / ATTN_KEYS;
    float *tile = c->kt + ti * k->ne[0] * ATTN_KEYS;
    if (!c->ready[ti]) {
        tile_keys_transposed(k, j0, nk, ik2, ik3, row, tile);
        tile_rows(v, j0, nk, ik2, ik3, c->v + j0 * v->ne[0], c->vrows + j0);
        c->ready[ti] = 1;
    }
    *kt = tile, *vr = c->vrows + j0;
}

/* Row r's mask values for tile_weights: NULL for an open row. */
static inline const float *row_mask(enum mask_row kind, const float *mv, int64_t r) {
    return kind == MASK_MIXED ? mv + r * ATTN_KEYS : NULL;
}

static void attend_block(const struct ggml_tensor *dst, const struct attn_params *p,
                         struct attn_block *b, float *scratch, struct kv_cache *cache) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3], *sinks = dst->src[4];
    /* kv heads and batches are shared by consecutive query heads and batches */
    const int64_t dk = q->ne[0], dv = v->ne[0], ik2 = b->i2 / (q->ne[2] / k->ne[2]), ik3 = b->i3 / (q->ne[3] / k->ne[3]);
    float *kbuf = scratch + ATTN_BLOCK * (dk + dv), *vbuf = kbuf + ATTN_KEYS * dk, *mv = vbuf + ATTN_KEYS * dv;
    b->q = scratch;
    for (int64_t r = 0; r < b->nq; r++) {
        nn_row_load(q, b->i1 + r, b->i2, b->i3, b->q + r * dk);
        b->state[r] = (struct online_softmax){-INFINITY, 0.0f, scratch + ATTN_BLOCK * dk + r * dv, dv};
        memset(b->state[r].acc, 0, (size_t)dv * sizeof(float));
        if (mask) b->mask_rows[r] = nn_elem(mask, 0, b->i1 + r, b->i2 % mask->ne[2], b->i3 % mask->ne[3]);
    }
    /* a block of a few queries (decoding) scores key rows as they are; more share the
     * transposed tile and multiply as a small GEMM, their rows padded to ATTN_ROWS with
     * zero queries and weights (whose results are dropped) */
    const bool transpose = b->nq >= ATTN_TRANSPOSE_MIN;
    const int64_t rows = (b->nq + ATTN_ROWS - 1) / ATTN_ROWS * ATTN_ROWS;
    if (transpose) {
        memset(b->q + b->nq * dk, 0, (size_t)((rows - b->nq) * dk) * sizeof(float));
        memset(scratch + ATTN_BLOCK * dk + b->nq * dv, 0, (size_t)((rows - b->nq) * dv) * sizeof(float));
    }
    float *krow = mv + ATTN_BLOCK * ATTN_KEYS, w[ATTN_BLOCK * ATTN_KEYS] = {0};
    enum mask_row kind[ATTN_BLOCK];
    const float *vrows[ATTN_KEYS], *krows[ATTN_KEYS];
    struct attn_tile t = {krows, vrows, 0, dk, p->softcap != 0.0f ? p->scale / p->softcap : p->scale, p->softcap,
                          nn_alibi_slope(p->max_bias, q->ne[2], b->i2)};
    for (int64_t j0 = 0; j0 < k->ne[1]; j0 += ATTN_KEYS) {
        t.nk = k->ne[1] - j0 < ATTN_KEYS ? k->ne[1] - j0 : ATTN_KEYS;
        if (!block_mask(mask, b, j0, t.nk, mv, kind)) continue;
        if (!transpose) {
            tile_rows(v, j0, t.nk, ik2, ik3, vbuf, vrows);
            tile_rows(k, j0, t.nk, ik2, ik3, kbuf, krows);
            for (int64_t r = 0; r < b->nq; r++)
                if (kind[r] != MASK_CLOSED)
                    attend_tile(&t, b->q + r * dk, row_mask(kind[r], mv, r), &b->state[r]);
            continue;
        }
        const float *kt, *const *vr;
        kv_tile(cache, k, v, j0, t.nk, ik2, ik3, krow, kbuf, vbuf, vrows, &kt, &vr);
        block_scores(b->q, rows, dk, kt, w);
        for (int64_t r = 0; r < b->nq; r++) {
            if (kind[r] == MASK_CLOSED)
                memset(w + r * ATTN_KEYS, 0, ATTN_KEYS * sizeof(float));
            else
                tile_weights(&t, w + r * ATTN_KEYS, row_mask(kind[r], mv, r), &b->state[r]);
        }
        memset(w + b->nq * ATTN_KEYS, 0, (size_t)((rows - b->nq) * ATTN_KEYS) * sizeof(float));
        block_values(w, rows, vr, t.nk, dv, scratch + ATTN_BLOCK * dk);
    }
    for (int64_t r = 0; r < b->nq; r++) {
        struct online_softmax *o = &b->state[r];
        const float sink = sinks ? *(const float *)nn_elem(sinks, b->i2, 0, 0, 0) : -INFINITY;
        if (sink != -INFINITY) { /* a score with no value: only the normaliser grows */
            online_raise(o, sink);
            o->sum += ew_expf(sink - o->max);
        }
        const float inv = o->sum > 0.0f ? 1.0f / o->sum : 0.0f; /* every key masked: zeros, not NaN */
        for (int64_t i = 0; i < dv; i++) o->acc[i] *= inv;
        ew_store(nn_elem(dst, 0, b->i2, b->i1 + r, b->i3), dst->type, dst->nb[0], o->acc, dv);
    }
}

/* Tasks take blocks of consecutive queries of one head. */
static enum ggml_status flash_attn_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (cpu_flash_attn_match(call, dst)) return GGML_STATUS_SUCCESS; /* ggml's bits */
    if (cpu_flash_attn_tiled(call, dst)) return GGML_STATUS_SUCCESS; /* ggml's bits, prompts */
    const struct ggml_tensor *q = dst->src[0];
    const struct ggmlc_flash_attn_params fa = ggmlc_flash_attn_params_of(dst);
    const struct attn_params p = {fa.scale, fa.max_bias, fa.logit_softcap};
    float *scratch = nn_scratch(call, cpu_attn_scratch_floats(dst));
    struct kv_cache cache;
    struct kv_cache *kv = kv_cache_init(dst, scratch, &cache) ? &cache : NULL;
    const int64_t per_head = (q->ne[1] + ATTN_BLOCK - 1) / ATTN_BLOCK;
    int64_t u0, u1;
    cpu_split_range(per_head * q->ne[2] * q->ne[3], call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        struct attn_block b;
        b.i1 = (u % per_head) * ATTN_BLOCK;
        b.nq = q->ne[1] - b.i1 < ATTN_BLOCK ? q->ne[1] - b.i1 : ATTN_BLOCK;
        b.i2 = (u / per_head) % q->ne[2];
        b.i3 = u / (per_head * q->ne[2]);
        attend_block(dst, &p, &b, scratch, kv);
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

/* Only ggml's split-KV path (cpu_flash_attn_match) meets inside the forward op. */
static bool flash_attn_tasks_free(const struct ggml_tensor *node) { return !cpu_flash_attn_tasks_meet(node); }

void cpu_nn_attn_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_FLASH_ATTN_EXT] = flash_attn_compute;
    t->supports[GGML_OP_FLASH_ATTN_EXT] = flash_attn_supports;
    t->work_size[GGML_OP_FLASH_ATTN_EXT] = flash_attn_work;
    t->tasks_free[GGML_OP_FLASH_ATTN_EXT] = flash_attn_tasks_free;
    t->compute[GGML_OP_FLASH_ATTN_BACK] = flash_attn_back_compute;
    t->work_size[GGML_OP_FLASH_ATTN_BACK] = flash_attn_back_work;
}
