/*
 * test-ggml-rounding.c - RMS_NORM and ROPE on the CPU backend round as ggml's
 * CPU backend does, bit for bit, so that a model's activations keep ggml's
 * bits into its quantized products (whose activation rounding would
 * otherwise amplify a last-bit difference).  The expected values are a
 * scalar model of ggml's arithmetic written out here, checked against
 * llama.cpp c198af4d's bundled ggml (per-node dumps of a llama model):
 *  - RMS_NORM: float squares summed in double, mean and 1 / sqrtf(mean + eps)
 *    in float, then x * scale;
 *  - ROPE (normal mode, no YaRN): theta_scale = powf(base, -2 / n_dims),
 *    the angle of pair k the angle of pair k - 1 times theta_scale in float
 *    from the position, and (x0, x1) turned to fma(x0, cos, -(x1 sin)),
 *    fma(x0, sin, x1 cos) as ggml's x86 build fuses them;
 *  - FLASH_ATTN_EXT with f16 K and V (ggml's one-query-row path): the query
 *    rounded to f16, scores by ggml's AVX-512 f16 dot (four 16-lane fused
 *    accumulators per 64 values, added (0+2)+(1+3), lanes halved 16-8-4-2-1,
 *    the tail in double) on a CPU with AVX-512, else by its AVX2 f16 dot
 *    (four 8-lane accumulators per 32 values, (0+2)+(1+3), lanes l + (l + 4),
 *    then two horizontal adds), times scale plus the mask, and an online softmax
 *    whose accumulator is f16: rescaled by expf(old - new max) on a new
 *    maximum, else weighted by expf(s - max), each update one fused
 *    multiply-add rounded to f16; S = fma(S, ms, vs); the output acc / S;
 *    one query over 512+ keys (ggml's split-KV path): that over one chunk of
 *    keys per thread, the chunks' f32 accumulators combined in order with
 *    acc = fma(acc, expf(M - M'), acc_c * expf(M_c - M')), S likewise, then
 *    acc * (1 / S) (the contraction ggml's build makes, read from its binary);
 *  - FLASH_ATTN_EXT on ggml's tiled path (64 or more queries, f32 q, f32 or
 *    f16 K and V, the value head a multiple of 16 floats, 8 without AVX-512):
 *    per row, keys in tiles of 64; scores one fused chain over the head, times
 *    scale, plus the mask; per tile M and S rescaled by expf on a new maximum,
 *    the exponentials and their sum as SOFT_MAX below (all 64, padding
 *    included) added to S in double; values summed by a fused chain over the
 *    tile's keys; the output acc * (1 / S) (checked by llama.cpp 0a50d99's
 *    prompt logits of 64, 100 and 512 tokens: the same bits);
 *  - SWIGLU (split form): ggml's AVX-512 ggml_vec_swiglu_f32, 16 values at a
 *    time x / (1 + ggml_v_expf(0 - x)) * g, ggml_v_expf being ARM's
 *    optimized-routines exp (n = fma(x, log2 e, 0x1.8p23) - 0x1.8p23, b by two
 *    fused steps of ln 2, a degree-5 fused polynomial, scaled by 2^n; |n| > 192
 *    gives 0 or infinity), the row's last n % 16 values by libm expf.  Checked
 *    against llama.cpp 0a50d99's ggml: every node sum of a Q8_0 and a Q4_0
 *    llama prompt (llama-eval-callback) equal.  On a CPU without AVX-512:
 *    ggml's AVX2 build, 8 values at a time through its AVX2 ggml_v_expf
 *    (2^n (1 + p) as one fma, two factors past |n| > 126), the last n % 8 by
 *    libm expf (checked by greedy tokens of llama.cpp 0a50d99 on ggml built
 *    for AVX2);
 *  - SILU: ggml_vec_silu_f32, the same as SWIGLU without the gate;
 *  - SOFT_MAX: logits * scale, fma(slope, mask, .), y = that build's SIMD
 *    expf(x - max) a vector at a time, each vector's lanes folded by halves
 *    to 4 and added (0+2)+(1+3) in float, summed in double; the last
 *    n % lanes by libm expf; the values times (float)(1 / sum).
 * The expected orders are those of ggml built for the CPU the test runs on,
 * whatever GGMLC_CPU_PATH forces (test-quant-activations-paths.sh runs it on
 * each path).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N_EMBD = 768, N_TOK = 9, HEAD = 64, N_HEAD = 4 };

static bool compute(struct ggml_context *ctx, struct ggml_tensor *out, int n_threads) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const bool ok = ggml_graph_compute_with_ctx(ctx, gf, n_threads) == GGML_STATUS_SUCCESS;
    if (!ok) tap_diag("%s", ggmlc_last_error());
    return ok;
}

static int count_differ(const float *a, const float *b, size_t n) {
    int differ = 0;
    for (size_t i = 0; i < n; i++) differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return differ;
}

static void check_rms_norm(int n_threads) {
    static float x[N_TOK * N_EMBD], want[N_TOK * N_EMBD];
    const float eps = 1e-5f;
    for (int i = 0; i < N_TOK * N_EMBD; i++) x[i] = test_normal() * (1.0f + (float)(i % 7));
    for (int t = 0; t < N_TOK; t++) {
        const float *r = x + t * N_EMBD;
        double sum = 0.0;
        for (int i = 0; i < N_EMBD; i++) sum += (double)(r[i] * r[i]);
        const float mean = (float)(sum / N_EMBD), scale = 1.0f / sqrtf(mean + eps);
        for (int i = 0; i < N_EMBD; i++) want[t * N_EMBD + i] = r[i] * scale;
    }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N_EMBD, N_TOK);
    memcpy(in->data, x, sizeof x);
    struct ggml_tensor *out = ggml_rms_norm(ctx, in, eps);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, N_TOK * N_EMBD) : -1;
    tap_ok(differ == 0, "rms_norm of %d rows of %d, %d thread(s): ggml's rounding (%d differ)", N_TOK, N_EMBD,
           n_threads, differ);
    ggml_free(ctx);
}

static void check_rope(int n_threads) {
    static float x[N_TOK * N_HEAD * HEAD], want[N_TOK * N_HEAD * HEAD];
    const float base = 10000.0f;
    int32_t pos[N_TOK];
    for (int t = 0; t < N_TOK; t++) pos[t] = t == N_TOK - 1 ? 4000 : 3 * t; /* a far position too */
    for (int i = 0; i < N_TOK * N_HEAD * HEAD; i++) x[i] = test_normal();
    const float theta_scale = powf(base, -2.0f / HEAD);
    for (int t = 0; t < N_TOK; t++)
        for (int h = 0; h < N_HEAD; h++) {
            const float *r = x + (t * N_HEAD + h) * HEAD;
            float *o = want + (t * N_HEAD + h) * HEAD, theta = (float)pos[t];
            for (int k = 0; k < HEAD / 2; k++, theta *= theta_scale) {
                const float c = cosf(theta), s = sinf(theta), x0 = r[2 * k], x1 = r[2 * k + 1];
                o[2 * k] = fmaf(x0, c, -(x1 * s));
                o[2 * k + 1] = fmaf(x0, s, x1 * c);
            }
        }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    struct ggml_tensor *in = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, HEAD, N_HEAD, N_TOK);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, N_TOK);
    memcpy(in->data, x, sizeof x);
    memcpy(p->data, pos, sizeof pos);
    struct ggml_tensor *out = ggml_rope_ext(ctx, in, p, NULL, HEAD, 0, 4096, base, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, N_TOK * N_HEAD * HEAD) : -1;
    tap_ok(differ == 0, "rope (normal mode, head %d, positions up to 4000), %d thread(s): ggml's rounding (%d differ)",
           HEAD, n_threads, differ);
    ggml_free(ctx);
}

static float h2f(ggml_fp16_t h) { return ggml_fp16_to_fp32(h); }
static ggml_fp16_t f2h(float f) { return ggml_fp32_to_fp16(f); }

/* Whether ggml built for this CPU would take its AVX-512 paths; else its AVX2 ones (the
 * orders the CPU plugin follows on every GGMLC_CPU_PATH of this CPU). */
static bool cpu_has_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

/* ggml's AVX2 vec_dot_f16: lanes l of four 8-wide accumulators take x[i + 8 j + l] y[...]
 * for steps i of 32; then (0+2)+(1+3); lanes l and l + 4 added, then the two hadds:
 * (h0 + h1) + (h2 + h3); the tail in double. */
static float model_dot_f16_avx2(const ggml_fp16_t *x, const ggml_fp16_t *y, int n) {
    float acc[4][8] = {{0}}, lanes[8], h[4];
    const int full = n / 32 * 32;
    for (int i = 0; i < full; i++) {
        const int j = (i % 32) / 8, l = i % 8;
        acc[j][l] = fmaf(h2f(x[i]), h2f(y[i]), acc[j][l]);
    }
    for (int l = 0; l < 8; l++) lanes[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    for (int l = 0; l < 4; l++) h[l] = lanes[l] + lanes[l + 4];
    double total = (h[0] + h[1]) + (h[2] + h[3]);
    for (int i = full; i < n; i++) total += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)total;
}

static float model_dot_f16_avx512(const ggml_fp16_t *x, const ggml_fp16_t *y, int n) {
    float sum[4][16] = {{0}}, a8[8], a4[4];
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) sum[j][l] = fmaf(h2f(x[i + 16 * j + l]), h2f(y[i + 16 * j + l]), sum[j][l]);
    for (int l = 0; l < 16; l++) sum[0][l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
    for (int l = 0; l < 8; l++) a8[l] = sum[0][l] + sum[0][l + 8];
    for (int l = 0; l < 4; l++) a4[l] = a8[l] + a8[l + 4];
    double total = (a4[0] + a4[2]) + (a4[1] + a4[3]);
    for (int i = np; i < n; i++) total += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)total;
}

/* The model's online softmax of query qh (head h of HQ = 4 on 2 K/V heads) over keys
 * [j0, j1) into acc, *M and *S. */
static void model_attend(int d, int nkv, const ggml_fp16_t *k, const ggml_fp16_t *v, const ggml_fp16_t *mrow,
                         const ggml_fp16_t *qh, int h, float scale, int j0, int j1, ggml_fp16_t *acc, float *M, float *S) {
    for (int j = j0; j < j1; j++) {
        const float mv = h2f(mrow[j]);
        if (mv == -INFINITY) continue;
        const ggml_fp16_t *kr = k + ((h / 2) * nkv + j) * d;
        const float s = (cpu_has_avx512() ? model_dot_f16_avx512(kr, qh, d) : model_dot_f16_avx2(kr, qh, d)) * scale + mv;
        float ms = 1.0f, vs = 1.0f;
        if (s > *M) {
            ms = expf(*M - s);
            *M = s;
            for (int e = 0; e < d; e++) acc[e] = f2h(h2f(acc[e]) * ms);
        } else {
            vs = expf(s - *M);
        }
        for (int e = 0; e < d; e++) acc[e] = f2h(fmaf(h2f(v[((h / 2) * nkv + j) * d + e]), vs, h2f(acc[e])));
        *S = fmaf(*S, ms, vs);
    }
}

/* FLASH_ATTN_EXT's inputs: q [dk, nq, hq] f32, K [dk, nkv, hkv] and V [dv, nkv, hkv] of
 * kv_type, the mask [nkv, nq] f16. */
static void attn_tensors(struct ggml_context *ctx, enum ggml_type kv_type, int dk, int dv, int nq,
                         int nkv, int hq, int hkv, struct ggml_tensor **q, struct ggml_tensor **k,
                         struct ggml_tensor **v, struct ggml_tensor **mask) {
    *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, dk, nq, hq);
    *k = ggml_new_tensor_3d(ctx, kv_type, dk, nkv, hkv);
    *v = ggml_new_tensor_3d(ctx, kv_type, dv, nkv, hkv);
    *mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, nkv, nq);
}

/* Attention of nq queries over nkv keys, head size d, 4 query heads on 2 K/V heads, a causal
 * mask; 1 and 2 threads against the model above.  One query over 512+ keys: ggml's split-KV
 * path, one chunk of keys per thread, the chunks' f32 partials combined in order. */
static void check_flash_attn(int d, int nq, int nkv, int n_threads) {
    enum { HQ = 4, HKV = 2 };
    const float scale = 1.0f / sqrtf((float)d);
    const bool split = nq == 1 && nkv >= 512;
    const int chunk = (nkv + n_threads - 1) / n_threads;
    float *q = malloc(sizeof(float) * d * nq * HQ), *want = malloc(sizeof(float) * d * nq * HQ);
    ggml_fp16_t *k = malloc(sizeof(ggml_fp16_t) * d * nkv * HKV), *v = malloc(sizeof(ggml_fp16_t) * d * nkv * HKV);
    ggml_fp16_t *mask = malloc(sizeof(ggml_fp16_t) * nkv * nq), *qh = malloc(sizeof(ggml_fp16_t) * d);
    ggml_fp16_t *acc = malloc(sizeof(ggml_fp16_t) * d);
    for (int i = 0; i < d * nq * HQ; i++) q[i] = test_normal() * 2.0f;
    for (int i = 0; i < d * nkv * HKV; i++) k[i] = f2h(test_normal()), v[i] = f2h(test_normal());
    for (int i = 0; i < nq; i++) /* causal; the split case also masks a run of keys (a chunk may lose all) */
        for (int j = 0; j < nkv; j++)
            mask[i * nkv + j] = f2h(j <= nkv - nq + i && !(split && j >= 100 && j < 140) ? 0.0f : -INFINITY);
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < HQ; h++) { /* q is [d, nq, HQ]; the output [d, HQ, nq] */
            for (int e = 0; e < d; e++) qh[e] = f2h(q[(h * nq + i) * d + e]);
            float *o = want + (i * HQ + h) * d;
            if (!split) {
                memset(acc, 0, sizeof(ggml_fp16_t) * d);
                float S = 0.0f, M = -INFINITY;
                model_attend(d, nkv, k, v, mask + i * nkv, qh, h, scale, 0, nkv, acc, &M, &S);
                for (int e = 0; e < d; e++) o[e] = h2f(acc[e]) * (1.0f / S);
                continue;
            }
            float M = -INFINITY, S = 0.0f;
            for (int e = 0; e < d; e++) o[e] = 0.0f;
            for (int j0 = 0; j0 < nkv; j0 += chunk) {
                float Mc = -INFINITY, Sc = 0.0f;
                memset(acc, 0, sizeof(ggml_fp16_t) * d);
                model_attend(d, nkv, k, v, mask, qh, h, scale, j0, j0 + chunk < nkv ? j0 + chunk : nkv, acc, &Mc, &Sc);
                if (Sc == 0.0f) continue;
                const float m_new = fmaxf(M, Mc), s_old = expf(M - m_new), s_new = expf(Mc - m_new);
                for (int e = 0; e < d; e++) o[e] = fmaf(o[e], s_old, h2f(acc[e]) * s_new);
                S = fmaf(S, s_old, Sc * s_new);
                M = m_new;
            }
            for (int e = 0; e < d; e++) o[e] *= 1.0f / S;
        }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    struct ggml_tensor *tq, *tk, *tv, *tm;
    attn_tensors(ctx, GGML_TYPE_F16, d, d, nq, nkv, HQ, HKV, &tq, &tk, &tv, &tm);
    memcpy(tq->data, q, ggml_nbytes(tq));
    memcpy(tk->data, k, ggml_nbytes(tk));
    memcpy(tv->data, v, ggml_nbytes(tv));
    memcpy(tm->data, mask, ggml_nbytes(tm));
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, tq, tk, tv, tm, scale, 0.0f, 0.0f);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, (size_t)d * nq * HQ) : -1;
    tap_ok(differ == 0, "flash_attn_ext f16 K/V, head %d, %d queries x %d keys, %d thread(s): ggml's rounding (%d differ)",
           d, nq, nkv, n_threads, differ);
    ggml_free(ctx);
    free(q), free(want), free(k), free(v), free(mask), free(qh), free(acc);
}

static float ggml_v_expf_model(float x) {
    const float n = fmaf(x, 0x1.715476p+0f, 0x1.8p23f) - 0x1.8p23f;
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x)), u = b * b;
    const float p = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(p, (int)n);
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ggml_v_expf of its AVX2 build: the same n and b, the polynomial less its 1, then
 * 2^n (1 + p) as one fma with 2^n from z's low bits put in the exponent; for |n| > 126 the
 * two factors s1 = 2^127 (n > 0) or 2^-125 (n <= 0) and s2 = 2^n / s1, s1 (s2 + s2 p);
 * for |n| > 192 s1 * s1 (infinity or 0). */
static float ggml_v_expf_avx2_model(float x) {
    const float z = fmaf(x, 0x1.715476p+0f, 0x1.8p23f), n = z - 0x1.8p23f;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x)), u = b * b;
    const float p = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         0x1.ffffecp-1f * b);
    uint32_t zb;
    memcpy(&zb, &z, sizeof zb);
    const uint32_t exp_bits = zb << 23;
    if (fabsf(n) <= 126.0f) {
        const float two_n = bits_float(exp_bits + 0x3f800000u);
        return fmaf(two_n, p, two_n);
    }
    const uint32_t low = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = bits_float(0x7f000000u + low), s2 = bits_float(exp_bits - low);
    return fabsf(n) > 192.0f ? s1 * s1 : fmaf(s2, p, s2) * s1;
}

/* ggml_vec_soft_max_f32's vector part over x[0..n) (n a multiple of the lanes): x = exp(x - max)
 * a vector at a time, each vector's lanes folded by halves to 4 and added (0+2)+(1+3), summed
 * in double. */
static double model_exp_sum_vectors(float *x, int n, float max, bool avx512) {
    const int lanes = avx512 ? 16 : 8;
    double sum = 0.0;
    for (int i0 = 0; i0 < n; i0 += lanes) {
        float v[16];
        for (int l = 0; l < lanes; l++) {
            const float a = x[i0 + l] - max;
            v[l] = x[i0 + l] = avx512 ? ggml_v_expf_model(a) : ggml_v_expf_avx2_model(a);
        }
        for (int half = lanes / 2; half >= 4; half /= 2)
            for (int l = 0; l < half; l++) v[l] = v[l] + v[l + half];
        sum += (double)((v[0] + v[2]) + (v[1] + v[3]));
    }
    return sum;
}

/* FLASH_ATTN_EXT on ggml's tiled path (64+ queries, f32 q, K and V both f32 or both f16, dv
 * a multiple of the f32 vector): per query row, keys in tiles of 64; a score the fused chain
 * acc = fma(k[e], q[e], acc) from 0 over the head, times scale, -inf past the last key, plus
 * the mask; a tile whose scores are all -inf passed over, else M = max(M, tile max), the
 * accumulator and S times expf(M_old - M) where M grew, the scores exp(s - M) with their sum
 * (model_exp_sum_vectors) added to S in double; acc[e] = fma(v_j[e], p_j, acc[e]) over the tile's
 * 64 keys (padding zeros included); the result acc * (1 / S).  K/V heads hkv < HQ (grouped);
 * the mask causal (the last query sees every key; with nq > nkv the first see none, and give
 * zeros), with keys [64, 128) masked for every row where nkv > 128 (a tile passed over by all). */
static void check_flash_attn_tiled(int dk, int dv, int nq, int nkv, enum ggml_type kv_type,
                                   int n_threads) {
    enum { HQ = 4, HKV = 2, T = 64 };
    const float scale = 1.0f / sqrtf((float)dk);
    const bool avx512 = cpu_has_avx512();
    float *q = malloc(sizeof(float) * dk * nq * HQ), *want = malloc(sizeof(float) * dv * nq * HQ);
    float *k = malloc(sizeof(float) * dk * nkv * HKV), *v = malloc(sizeof(float) * dv * nkv * HKV);
    ggml_fp16_t *mask = malloc(sizeof(ggml_fp16_t) * nkv * nq);
    float *acc = malloc(sizeof(float) * dv), s[T];
    for (int i = 0; i < dk * nq * HQ; i++) q[i] = test_normal() * 2.0f;
    for (int i = 0; i < dk * nkv * HKV; i++)
        k[i] = kv_type == GGML_TYPE_F16 ? h2f(f2h(test_normal())) : test_normal();
    for (int i = 0; i < dv * nkv * HKV; i++)
        v[i] = kv_type == GGML_TYPE_F16 ? h2f(f2h(test_normal())) : test_normal();
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nkv; j++) {
            const bool hidden = j > nkv - nq + i || (nkv > 128 && j >= 64 && j < 128);
            mask[i * nkv + j] = f2h(hidden ? -INFINITY : test_normal());
        }
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < HQ; h++) {
            const float *qr = q + (h * nq + i) * dk;
            const int hk = h / (HQ / HKV);
            float M = -INFINITY, S = 0.0f;
            for (int e = 0; e < dv; e++) acc[e] = 0.0f;
            for (int j0 = 0; j0 < nkv; j0 += T) {
                float m = -INFINITY;
                for (int j = 0; j < T; j++) {
                    if (j0 + j >= nkv) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    const float *kr = k + (hk * nkv + j0 + j) * dk;
                    float a = 0.0f;
                    for (int e = 0; e < dk; e++) a = fmaf(kr[e], qr[e], a);
                    s[j] = a * scale + h2f(mask[i * nkv + j0 + j]);
                    m = s[j] > m ? s[j] : m;
                }
                if (m == -INFINITY) continue;
                const float m_new = fmaxf(M, m);
                if (m_new > M) {
                    const float ms = expf(M - m_new);
                    for (int e = 0; e < dv; e++) acc[e] *= ms;
                    S *= ms;
                }
                M = m_new;
                S = (float)((double)S + model_exp_sum_vectors(s, T, M, avx512));
                for (int j = 0; j < T; j++) {
                    const float *vr = j0 + j < nkv ? v + (hk * nkv + j0 + j) * dv : NULL;
                    for (int e = 0; e < dv; e++) acc[e] = fmaf(vr ? vr[e] : 0.0f, s[j], acc[e]);
                }
            }
            float *o = want + (i * HQ + h) * dv; /* a row that sees no key: zeros */
            for (int e = 0; e < dv; e++) o[e] = acc[e] * (S == 0.0f ? 0.0f : 1.0f / S);
        }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){32 << 20, NULL, false});
    struct ggml_tensor *tq, *tk, *tv, *tm;
    attn_tensors(ctx, kv_type, dk, dv, nq, nkv, HQ, HKV, &tq, &tk, &tv, &tm);
    memcpy(tq->data, q, ggml_nbytes(tq));
    if (kv_type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(k, tk->data, (int64_t)dk * nkv * HKV);
        ggml_fp32_to_fp16_row(v, tv->data, (int64_t)dv * nkv * HKV);
    } else {
        memcpy(tk->data, k, ggml_nbytes(tk));
        memcpy(tv->data, v, ggml_nbytes(tv));
    }
    memcpy(tm->data, mask, ggml_nbytes(tm));
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, tq, tk, tv, tm, scale, 0.0f, 0.0f);
    const int differ =
        compute(ctx, out, n_threads) ? count_differ(out->data, want, (size_t)dv * nq * HQ) : -1;
    tap_ok(
        differ == 0,
        "flash_attn_ext tiled, %s K/V, heads %d/%d, %d queries x %d keys, %d thread(s): ggml's %s rounding (%d differ)",
        ggml_type_name(kv_type), dk, dv, nq, nkv, n_threads, avx512 ? "AVX-512" : "AVX2", differ);
    ggml_free(ctx);
    free(q), free(want), free(k), free(v), free(mask), free(acc);
}

/* SWIGLU (split form; gated false: SILU, ggml_vec_silu_f32, the same arithmetic without g) of
 * rows rows of width (1 row: 2 threads split its columns). */
static void check_swiglu(int width, int rows, bool gated, int n_threads) {
    float *x = malloc(sizeof(float) * rows * width), *g = malloc(sizeof(float) * rows * width);
    float *want = malloc(sizeof(float) * rows * width);
    const bool avx512 = cpu_has_avx512();
    const int lanes = avx512 ? 16 : 8;
    const float big[] = {-150.0f, 150.0f, -100.0f, 100.0f, -88.5f, 89.0f, 0.0f, -0.0f};
    for (int i = 0; i < rows * width; i++) {
        x[i] = i % 37 == 5 ? big[(i / 37) % 8] : test_normal() * 3.0f;
        g[i] = test_normal();
    }
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < width; i++) {
            const int e = r * width + i;
            const bool vector = i < width - width % lanes;
            const float ev = avx512 ? ggml_v_expf_model(0.0f - x[e]) : ggml_v_expf_avx2_model(0.0f - x[e]);
            const float silu = x[e] / (1.0f + (vector ? ev : expf(-x[e])));
            want[e] = gated ? silu * g[e] : silu;
        }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * sizeof(float) * rows * width + ggml_graph_overhead() + (1 << 16), NULL, false});
    struct ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, width, rows);
    struct ggml_tensor *tg = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, width, rows);
    memcpy(tx->data, x, sizeof(float) * rows * width);
    memcpy(tg->data, g, sizeof(float) * rows * width);
    struct ggml_tensor *out = gated ? ggml_swiglu_split(ctx, tx, tg) : ggml_silu(ctx, tx);
    int differ = -1;
    if (compute(ctx, out, n_threads)) differ = count_differ(out->data, want, (size_t)rows * width);
    tap_ok(differ == 0, "%s of %d row(s) of %d (%d values past the last %d), %d thread(s): ggml's %s rounding (%d differ)",
           gated ? "swiglu" : "silu", rows, width, width % lanes, lanes, n_threads, avx512 ? "AVX-512" : "AVX2", differ);
    ggml_free(ctx);
    free(x), free(g), free(want);
}

/* SOFT_MAX with an f16 mask and a scale, rows of width: ggml_vec_soft_max_f32's order.
 * causal: row r's mask is -inf past a point that differs per row (a causal mask's future,
 * which the kernel leaves out of its exponentials: the same bits must come out). */
static void check_soft_max(int width, bool causal, int n_threads) {
    enum { ROWS = 4 };
    const float scale = 0.125f;
    const bool avx512 = cpu_has_avx512();
    const int lanes = avx512 ? 16 : 8;
    float *x = malloc(sizeof(float) * ROWS * width), *want = malloc(sizeof(float) * ROWS * width);
    ggml_fp16_t *mask = malloc(sizeof(ggml_fp16_t) * ROWS * width);
    for (int i = 0; i < ROWS * width; i++) {
        const int r = i / width, live = 1 + r * width / ROWS + 3 * r; /* 1, 1/4 + 4, ... */
        x[i] = test_normal() * 20.0f;
        mask[i] = f2h(i % 11 == 3 || (causal && i % width >= live) ? -INFINITY : test_normal());
    }
    for (int r = 0; r < ROWS; r++) {
        float *o = want + r * width, max = -INFINITY;
        for (int i = 0; i < width; i++) {
            o[i] = fmaf(1.0f, h2f(mask[r * width + i]), x[r * width + i] * scale);
            max = o[i] > max ? o[i] : max;
        }
        const int vec_end = width - width % lanes;
        double sum = model_exp_sum_vectors(o, vec_end, max, avx512);
        for (int i = vec_end; i < width; i++) {
            o[i] = expf(o[i] - max);
            sum += (double)o[i];
        }
        const float inv = (float)(1.0 / sum);
        for (int i = 0; i < width; i++) o[i] *= inv;
    }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * sizeof(float) * ROWS * width + ggml_graph_overhead() + (1 << 16), NULL, false});
    struct ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, width, ROWS);
    struct ggml_tensor *tm = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, width, ROWS);
    memcpy(tx->data, x, sizeof(float) * ROWS * width);
    memcpy(tm->data, mask, sizeof(ggml_fp16_t) * ROWS * width);
    struct ggml_tensor *out = ggml_soft_max_ext(ctx, tx, tm, scale, 0.0f);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, (size_t)ROWS * width) : -1;
    tap_ok(differ == 0, "soft_max of %d rows of %d (%d values past the last %d)%s, %d thread(s): ggml's %s rounding (%d differ)",
           ROWS, width, width % lanes, lanes, causal ? ", causal mask" : "", n_threads, avx512 ? "AVX-512" : "AVX2", differ);
    ggml_free(ctx);
    free(x), free(want), free(mask);
}

int main(void) {
    test_seed(7);
    for (int t = 1; t <= 2; t++) {
        check_rms_norm(t);
        check_rope(t);
        check_flash_attn(64, 8, 20, t);
        check_flash_attn(128, 1, 37, t);
        check_flash_attn(40, 5, 9, t); /* AVX-512: the tail only; AVX2: one step of 32 and a tail */
        check_flash_attn(100, 2, 13, t); /* SIMD loops with partial vectors: 100 = 6 * 16 + 4 = 12 * 8 + 4 */
        check_flash_attn(64, 1, 600, t); /* ggml's split-KV path: a chunk of keys per thread */
        check_flash_attn(64, 1, 513, t);
        check_flash_attn(64, 63, 200, t); /* the last count of queries on ggml's one-row path */
        check_flash_attn_tiled(64, 64, 64, 200, GGML_TYPE_F16, t); /* the first on its tiled path */
        check_flash_attn_tiled(64, 64, 100, 200, GGML_TYPE_F32,
                               t); /* a partial last tile of queries */
        check_flash_attn_tiled(48, 32, 130, 64, GGML_TYPE_F16,
                               t); /* dk != dv, one tile of keys, 66 rows see none */
        check_flash_attn_tiled(128, 128, 70, 333, GGML_TYPE_F32, t);
        check_flash_attn_tiled(256, 256, 70, 2100, GGML_TYPE_F16,
                               t); /* keys past the 2048 a task keeps converted */
        check_swiglu(2048, 3, true, t);
        check_swiglu(1000 + 13, 3, true, t); /* 13 (AVX2: 5) values past the last vector, across two chunks of 512 */
        check_swiglu(1000 + 13, 3, false, t);
        check_swiglu(8192 + 13, 1, false, t); /* 2 threads split the row's columns at a multiple of 16 */
        check_soft_max(37, false, t);
        check_soft_max(1000 + 13, false, t);
        check_soft_max(37, true, t);
        check_soft_max(128, true, t);
        check_soft_max(1000 + 13, true, t);
    }
    return tap_done();
}
