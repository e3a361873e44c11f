/*
 * ops-attn-match.c - FLASH_ATTN_EXT with f16 K and V rounded as ggml's x86
 * CPU backend rounds it (its AVX-512 build on a CPU with AVX-512, its AVX2
 * build elsewhere: only the dot's order differs) where ggml takes its one-query-row
 * path (fewer than 64 queries, and not a single query over 512 or more keys),
 * so that a model's attention output keeps ggml's bits:
 *  - the query row rounded to f16; each score the f16 dot product of ggml's
 *    vec_dot_f16: four 16-lane fused accumulators over steps of 64 values,
 *    added (0+2)+(1+3), the 16 lanes halved as _mm512_reduce_add_ps does,
 *    the tail added in double (AVX2: 8-lane accumulators over steps of 32,
 *    the lanes reduced as its two horizontal adds); then times scale, plus
 *    the mask;
 *  - the online softmax kept in f16 as ggml keeps it: on a new maximum the
 *    f16 accumulator is scaled by expf(old - new) (rounded back to f16),
 *    else the value row is weighted by expf(s - max); each update is one
 *    fused multiply-add per value rounded to f16; the normaliser
 *    S = S * ms + vs, fused;
 *  - the result the f16 accumulator times 1 / S.
 * One query over 512 or more keys takes ggml's split-KV path: task t of n
 * runs the above over keys [t * c, (t + 1) * c), c = ceil(keys / n), keeping
 * M, S and the accumulator as f32; then per head the chunks are combined in
 * order, M = fmaxf(M, Mc), acc = fma(acc, expf(M_old - M), acc_c * expf(Mc - M)),
 * S likewise, and the result is acc * (1 / S) (as ggml's build contracts it).
 * ggml's tiled path (64 or more queries) is ops-attn-tiled.c's; other cases
 * (ALiBi, softcap, sinks, f32 K/V) take ops-attn.c's kernel.  The f16 loops here are the portable reference;
 * ops-attn-match-x86.c has them with AVX2 and AVX-512 intrinsics (same bits).
 */
#include "ops-nn.h"
#include "simd.h"

/* The widest head this path takes (its buffers live on the stack). */
#define MATCH_MAX_HEAD 1024

/* Whether ggml would run this node through its one-query-row path with f16 K and V. */
static bool attn_match_applies(const struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const struct ggmlc_flash_attn_params fa = ggmlc_flash_attn_params_of(dst);
    if (q->type != GGML_TYPE_F32 || k->type != GGML_TYPE_F16 || v->type != GGML_TYPE_F16) return false;
    if (dst->src[4] || fa.max_bias != 0.0f || fa.logit_softcap != 0.0f) return false;
    if (mask && mask->type != GGML_TYPE_F16) return false;
    if (k->ne[0] > MATCH_MAX_HEAD || v->ne[0] > MATCH_MAX_HEAD || dst->type != GGML_TYPE_F32) return false;
    if (q->nb[0] != sizeof(float) || k->nb[0] != sizeof(ggml_fp16_t) || v->nb[0] != sizeof(ggml_fp16_t)) return false;
    return q->ne[1] < 64;
}

/* ggml's split-KV path: one query over 512 or more keys. */
static bool attn_split_kv(const struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0];
    return q->ne[1] == 1 && q->ne[3] == 1 && dst->src[1]->ne[1] >= 512;
}

#if defined(__x86_64__) && defined(__FLT16_MAX__)
/* Through _Float16, which the x86-64-v3/v4 clones convert with F16C (round to nearest even,
 * as the core's converters). */
static inline __attribute__((always_inline)) float h2f(ggml_fp16_t h) {
    _Float16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}
static inline __attribute__((always_inline)) ggml_fp16_t f2h(float x) {
    const _Float16 f = (_Float16)x;
    ggml_fp16_t h;
    memcpy(&h, &f, sizeof h);
    return h;
}
#else
static inline float h2f(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }
static inline ggml_fp16_t f2h(float x) { return ggmlc_fp32_to_fp16(x); }
#endif

/* The 16 lanes of a register added as GCC's _mm512_reduce_add_ps adds them. */
static inline __attribute__((always_inline)) float reduce16(const float v[16]) {
    float a8[8], a4[4];
    for (int i = 0; i < 8; i++) a8[i] = v[i + 8] + v[i];
    for (int i = 0; i < 4; i++) a4[i] = a8[i + 4] + a8[i];
    return (a4[0] + a4[2]) + (a4[1] + a4[3]);
}

/* ggml's vec_dot_f16 on AVX-512: four 16-lane accumulators over steps of 64 values. */
EW_CLONES static float dot_f16(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n) {
    float sum[4][16] = {{0}};
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) {
                const int64_t e = i + 16 * j + l;
                sum[j][l] = fmaf(h2f(x[e]), h2f(y[e]), sum[j][l]);
            }
    for (int l = 0; l < 16; l++) {
        sum[0][l] += sum[2][l];
        sum[1][l] += sum[3][l];
        sum[0][l] += sum[1][l];
    }
    double total = reduce16(sum[0]);
    for (int64_t i = np; i < n; i++) total += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)total;
}

/* ggml's vec_dot_f16 on AVX2: four 8-lane accumulators over steps of 32 values, added
 * (0+2)+(1+3); the 8 lanes as its two horizontal adds: t[l] = a[l] + a[l + 4], then
 * (t[0] + t[1]) + (t[2] + t[3]); the tail in double. */
EW_CLONES static float dot_f16_avx2_order(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n) {
    float sum[4][8] = {{0}}, t[4];
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) {
                const int64_t e = i + 8 * j + l;
                sum[j][l] = fmaf(h2f(x[e]), h2f(y[e]), sum[j][l]);
            }
    for (int l = 0; l < 8; l++) sum[0][l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
    for (int l = 0; l < 4; l++) t[l] = sum[0][l] + sum[0][l + 4];
    double total = (t[0] + t[1]) + (t[2] + t[3]);
    for (int64_t i = np; i < n; i++) total += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)total;
}

EW_CLONES static void scale_f16(ggml_fp16_t *acc, float s, int64_t n) {
    for (int64_t d = 0; d < n; d++) acc[d] = f2h(h2f(acc[d]) * s);
}

EW_CLONES static void mad_f16(ggml_fp16_t *acc, const ggml_fp16_t *v, float s, int64_t n) {
    for (int64_t d = 0; d < n; d++) acc[d] = f2h(fmaf(h2f(v[d]), s, h2f(acc[d])));
}

/* The loops of the SIMD level in use (GGMLC_CPU_PATH), the portable ones above on "generic".
 * The dot order is that of ggml built for this CPU on every level: AVX-512's where the CPU
 * has it, else AVX2's. */
static const struct cpu_attn_f16_loops *attn_loops(void) {
    static const struct cpu_attn_f16_loops portable = {dot_f16, scale_f16, mad_f16};
    static const struct cpu_attn_f16_loops portable_avx2_order = {dot_f16_avx2_order, scale_f16, mad_f16};
    const enum cpu_simd_level level = cpu_simd_level();
    if (level == CPU_SIMD_GENERIC && cpu_simd_best_level() < CPU_SIMD_AVX512) return &portable_avx2_order;
    if (level >= CPU_SIMD_AVX512 && cpu_attn_f16_loops_avx512()) return cpu_attn_f16_loops_avx512();
    if (level >= CPU_SIMD_AVX2 && cpu_attn_f16_loops_avx2()) return cpu_attn_f16_loops_avx2();
    return &portable;
}

/* Keys ahead of the one in use whose rows are fetched into the cache.  A head's slice of a
 * cache row (128 bytes of 1536 for the GPT of ggmlc-gpt) shares no cache line with the other
 * heads', so the hardware's stride prefetcher alone left each key and value row a miss to
 * memory: a decode step's attention was a third of its single-threaded time. */
#define ATTN_PREFETCH_KEYS 6

/* Both ends of the n f16 values at p (a head's slice of a key or value row) into the cache. */
static inline void prefetch_slice(const char *p, int64_t n) {
    __builtin_prefetch(p);
    __builtin_prefetch(p + (n * (int64_t)sizeof(ggml_fp16_t) - 1));
}

/* Keys [ic0, ic1) of query row (i1, head i2, batch i3) into the f16 accumulator acc (dv
 * values) and the running maximum *M and normaliser *S.  Cloned per x86-64 level so that
 * fmaf is one instruction where the CPU has FMA (a libm call otherwise). */
EW_CLONES static void attend_keys(const struct cpu_attn_f16_loops *loops, const struct ggml_tensor *dst, float scale,
                                  int64_t i1, int64_t i2, int64_t i3, int64_t ic0, int64_t ic1, ggml_fp16_t *acc, float *M,
                                  float *S) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const int64_t dk = k->ne[0], dv = v->ne[0];
    const int64_t ik2 = i2 / (q->ne[2] / k->ne[2]), ik3 = i3 / (q->ne[3] / k->ne[3]);
    const int64_t iv2 = i2 / (q->ne[2] / v->ne[2]), iv3 = i3 / (q->ne[3] / v->ne[3]);
    ggml_fp16_t qh[MATCH_MAX_HEAD];
    const float *qr = (const float *)nn_elem(q, 0, i1, i2, i3);
    for (int64_t d = 0; d < dk; d++) qh[d] = f2h(qr[d]);
    const ggml_fp16_t *mp =
        mask ? (const ggml_fp16_t *)nn_elem(mask, 0, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : NULL;
    for (int64_t ic = ic0; ic < ic1; ic++) {
        if (ic + ATTN_PREFETCH_KEYS < ic1) {
            prefetch_slice(nn_elem(k, 0, ic + ATTN_PREFETCH_KEYS, ik2, ik3), dk);
            prefetch_slice(nn_elem(v, 0, ic + ATTN_PREFETCH_KEYS, iv2, iv3), dv);
        }
        const float mv = mp ? h2f(mp[ic]) : 0.0f;
        if (mv == -INFINITY) continue;
        float s = loops->dot((const ggml_fp16_t *)nn_elem(k, 0, ic, ik2, ik3), qh, dk) * scale;
        s += mv;
        float ms = 1.0f, vs = 1.0f;
        if (s > *M) {
            const float m_old = *M;
            *M = s;
            ms = expf(m_old - *M);
            loops->scale(acc, ms, dv);
        } else {
            vs = expf(s - *M);
        }
        loops->mad(acc, (const ggml_fp16_t *)nn_elem(v, 0, ic, iv2, iv3), vs, dv);
        *S = fmaf(*S, ms, vs);
    }
}

/* out[d] = acc[d] * s, cloned so that the f16 values convert by F16C rather than by libgcc's
 * software conversion (__extendhfsf2) where the CPU has it; s = 1 copies exactly. */
EW_CLONES static void acc_to_f32(float *out, const ggml_fp16_t *acc, float s, int64_t n) {
    for (int64_t d = 0; d < n; d++) out[d] = h2f(acc[d]) * s;
}

/* Row (i1, head i2, batch i3) of dst. */
static float *out_row(struct ggml_tensor *dst, int64_t i1, int64_t i2, int64_t i3) {
    return (float *)((char *)dst->data + (i3 * dst->ne[2] * dst->ne[1] + i2 + i1 * dst->ne[1]) * dst->nb[1]);
}

/* One query row over all keys into its place in dst. */
static void attend_row(const struct cpu_attn_f16_loops *loops, struct ggml_tensor *dst, float scale, int64_t i1,
                       int64_t i2, int64_t i3) {
    const int64_t dv = dst->src[2]->ne[0];
    ggml_fp16_t acc[MATCH_MAX_HEAD];
    memset(acc, 0, (size_t)dv * sizeof *acc);
    float S = 0.0f, M = -INFINITY;
    attend_keys(loops, dst, scale, i1, i2, i3, 0, dst->src[1]->ne[1], acc, &M, &S);
    const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
    acc_to_f32(out_row(dst, i1, i2, i3), acc, s_inv, dv);
}

/* The split-KV path: this task's chunk of keys for every head into its scratch (per head
 * M, S, then the f32 accumulator), then, after the barrier, the heads ith, ith + nth, ...
 * combined over all tasks' chunks in order. */
static void attend_split(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct cpu_attn_f16_loops *loops,
                         float scale) {
    const int64_t nkv = dst->src[1]->ne[1], dv = dst->src[2]->ne[0], heads = dst->src[0]->ne[2];
    const int64_t chunk = (nkv + call->nth - 1) / call->nth, part_size = 2 + dv;
    const int64_t task_floats = cpu_attn_scratch_floats(dst);
    float *mine = nn_scratch(call, task_floats);
    const int64_t ic0 = call->ith * chunk, ic1 = ic0 + chunk < nkv ? ic0 + chunk : nkv;
    for (int64_t h = 0; h < heads; h++) {
        float *part = mine + h * part_size;
        part[0] = -INFINITY, part[1] = 0.0f;
        if (ic0 >= nkv) continue;
        ggml_fp16_t acc[MATCH_MAX_HEAD];
        memset(acc, 0, (size_t)dv * sizeof *acc);
        attend_keys(loops, dst, scale, 0, h, 0, ic0, ic1, acc, &part[0], &part[1]);
        acc_to_f32(part + 2, acc, 1.0f, dv);
    }
    if (call->nth > 1 && call->barrier) call->barrier(call);
    for (int64_t h = call->ith; h < heads; h += call->nth) {
        float M = -INFINITY, S = 0.0f, *out = out_row(dst, 0, h, 0);
        memset(out, 0, (size_t)dv * sizeof *out);
        for (int c = 0; c < call->nth && (int64_t)c * chunk < nkv; c++) {
            const float *part = (const float *)call->wdata + nn_scratch_floats(task_floats) * (size_t)c + h * part_size;
            if (part[1] == 0.0f) continue;
            const float m_new = fmaxf(M, part[0]), s_old = expf(M - m_new), s_new = expf(part[0] - m_new);
            for (int64_t d = 0; d < dv; d++) out[d] = fmaf(out[d], s_old, part[2 + d] * s_new);
            S = fmaf(S, s_old, part[1] * s_new);
            M = m_new;
        }
        if (S != 0.0f) {
            const float s_inv = 1.0f / S;
            for (int64_t d = 0; d < dv; d++) out[d] *= s_inv;
        }
    }
}

bool cpu_flash_attn_tasks_meet(const struct ggml_tensor *dst) { return attn_match_applies(dst) && attn_split_kv(dst); }

bool cpu_flash_attn_match(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (!attn_match_applies(dst)) return false;
    const struct ggml_tensor *q = dst->src[0];
    const float scale = ggmlc_flash_attn_params_of(dst).scale;
    int64_t r0, r1;
    const struct cpu_attn_f16_loops *loops = attn_loops();
    if (attn_split_kv(dst)) {
        attend_split(call, dst, loops, scale);
        return true;
    }
    cpu_split_range(q->ne[1] * q->ne[2] * q->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        attend_row(loops, dst, scale, r % q->ne[1], (r / q->ne[1]) % q->ne[2], r / (q->ne[1] * q->ne[2]));
    return true;
}
