#version 450
// flash_attn_ext for few query rows (decoding): a workgroup per R rows of one K/V head group and
// batch (workgroup x: row block * NS + key split; y: K/V head; z: batch); its rows run over
// (query, head of the group), head fastest, so the query heads that share a K/V head (GQA) share
// each read of K and V.  The workgroup's WG / 8 lane groups each own a share of the keys (key j0 +
// u * groups + group of every step of groups * B keys) and keep their own running maximum,
// normaliser and weighted sum of V per row, so the key loop has no barrier:
// 1. the mask (slope * mask, -inf past the keys) of the group's B keys for its R rows, and their
//    rows of K and V in chunks of 8 values (lane c: chunks c, c + 8, ...; 16 bytes at a time for
//    aligned f16), all loads in flight at once (a step costs one memory latency);
// 2. K . q over the lanes' chunks, added across the 8 lanes by shuffles;
// 3. one online-softmax update per row and step: sum = sum * shrink + weights, o likewise with the
//    weighted V chunks.
// Then the groups' states meet in shared memory: each (row, value) thread rescales the groups' sums
// to the largest maximum and adds them.  Unsplit: d = o / sum, the sinks joining the normaliser
// only, a row without a finite score 0, as flash-attn.comp does; split (flags >> 8 = keys per
// split): the unnormalised o with its maximum and normaliser, for fattn-combine.comp, in
// flash-attn.comp's layout.  Bindings and push constants as flash-attn.comp's; FUSE_Q8
// (fattn_vec_*_q8, unsplit) also quantizes d for the integer-dot products that read it, quants
// into binding 7 and pairs into binding 8 (q8-lanes.glsl, d's values in order).  The host
// (attn_vec_fits in ops-nn.c) checks that lane groups of 8 lie in a subgroup (subgroups of 8
// lanes or more), R * max(CK, CV) <= 4, and the shared memory (groups * R * 64 * CV floats).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "types.glsl"

layout(constant_id = 0) const uint WG = 256; // threads: lane groups of 8
layout(constant_id = 1) const uint R = 4;    // rows per workgroup
layout(constant_id = 2) const uint CK = 1;   // K chunks of 8 per lane: DK <= 64 * CK
layout(constant_id = 3) const uint CV = 1;   // V chunks of 8 per lane: DV <= 64 * CV
layout(constant_id = 4) const uint B = 8;    // keys per lane group and step
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Q { float data_q[]; };
layout(binding = 1) readonly buffer K { STORAGE_T(K_TYPE) data_k[]; };
layout(binding = 2) readonly buffer V { STORAGE_T(K_TYPE) data_v[]; };
layout(binding = 3) readonly buffer M { STORAGE_T(M_TYPE) data_m[]; };
layout(binding = 4) readonly buffer S { float data_s[]; };
layout(binding = 5) writeonly buffer D { float data_d[]; };
layout(binding = 6) writeonly buffer P { float data_p[]; }; // split keys: per (row, split) DV sums, maximum, normaliser
#ifdef FUSE_Q8
layout(binding = 7) writeonly buffer Q8 { uint data_q8[]; };
layout(binding = 8) writeonly buffer S8 { vec2 data_s8[]; };
#endif
#if K_TYPE == 1
layout(binding = 1) readonly buffer K4 { uvec4 data_k4[]; };
layout(binding = 2) readonly buffer V4 { uvec4 data_v4[]; };
#endif

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_flash_attn);
#include "fattn-kv.glsl"
#ifdef FUSE_Q8
#define Q8_QUANTS data_q8 // data_q and data_s are the queries and the sinks here
#define Q8_PAIRS data_s8
#include "q8-lanes.glsl"
#endif

const uint G = WG / 8, DVP = 64 * CV;
const float NEG_INF = -1.0 / 0.0;

shared float sh_o[G * R * DVP]; // each group's weighted sums of V per row
shared float sh_m[G * R], sh_l[G * R]; // ... their maximum and normaliser

// Chunk c (values 8c .. 8c + 7, zeros from n on) of the row at word `row` of K (v false) or V as f32
void chunk8(bool v, bool chunked, uint row, uint c, uint n, out vec4 lo, out vec4 hi) {
    lo = vec4(0.0);
    hi = vec4(0.0);
    if (c * 8 >= n) return;
#if K_TYPE == 1
    if (chunked) {
        const uvec4 w = v ? data_v4[row / 8 + c] : data_k4[row / 8 + c];
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
        return;
    }
#endif
    [[unroll]] for (uint e = 0; e < 4; e++) {
        const uint i = c * 8 + e;
        if (i < n) lo[e] = v ? KV_AT(data_v, row, i) : KV_AT(data_k, row, i);
        if (i + 4 < n) hi[e] = v ? KV_AT(data_v, row, i + 4) : KV_AT(data_k, row, i + 4);
    }
}

// x added over the 8 lanes of a group, which are adjacent in a subgroup
float group_sum(float x) {
    x += subgroupShuffleXor(x, 1);
    x += subgroupShuffleXor(x, 2);
    return x + subgroupShuffleXor(x, 4);
}

// The largest of the lane groups' maxima of row r (shared memory, after the key loop)
float groups_max(uint r) {
    float m = NEG_INF;
    for (uint k = 0; k < G; k++) m = max(m, sh_m[k * R + r]);
    return m;
}

// Lane group k's factor on its sums of row r, rescaled to the row's maximum m (0: it saw no key)
float group_weight(uint k, uint r, float m) { return sh_m[k * R + r] == NEG_INF ? 0.0 : exp(sh_m[k * R + r] - m); }

// With sinks, head h's sink joins the normaliser l of a row at maximum m; the factor on the row's
// sums (1 without sinks)
float sink_join(uint h, float m, inout float l) {
    if ((p.flags & 2u) == 0) return 1.0;
    const float sink = data_s[p.off_s + h];
    const float new_max = max(m, sink);
    const float keep = m == NEG_INF ? 0.0 : exp(m - new_max);
    l = l * keep + exp(sink - new_max);
    return keep;
}

void main() {
    const uint t = gl_LocalInvocationID.x, lane = t % 8, grp = t / 8;
    const uint rows = p.NQ * p.rk2, blocks = (rows + R - 1) / R, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint per_split = p.flags >> 8, ns = per_split != 0 ? gl_NumWorkGroups.x / blocks : 1u;
    const uint block = gl_WorkGroupID.x / ns, split = gl_WorkGroupID.x % ns, g0 = block * R;
    const uint j_begin = per_split != 0 ? min(p.NKV, split * per_split) : 0u;
    const uint j_end = per_split != 0 ? min(p.NKV, j_begin + per_split) : p.NKV;
    const uint k0 = p.off_k + kvh * p.nbk2 + (b / p.rk3) * p.nbk3, v0 = p.off_v + kvh * p.nbv2 + (b / p.rk3) * p.nbv3;
    const bool k_chunked = kv_chunked(false), v_chunked = kv_chunked(true);

    // the rows' queries (this lane's chunks), mask rows and slopes
    vec4 q_lo[R * CK], q_hi[R * CK];
    uint mrow[R];
    float slope[R];
    bool row_ok[R];
    [[unroll]] for (uint r = 0; r < R; r++) {
        const uint g = g0 + r, iq = g / p.rk2, h = kvh * p.rk2 + g % p.rk2;
        row_ok[r] = g < rows;
        slope[r] = alibi_slope(h);
        mrow[r] = p.off_m + ((b % p.mne3) * p.mne2 + h % p.mne2) * p.mne1 * p.mne0 + iq * p.mne0;
        const uint q0 = p.off_q + iq * p.nbq1 + h * p.nbq2 + b * p.nbq3;
        [[unroll]] for (uint i = 0; i < CK; i++) {
            const uint e0 = (lane + 8 * i) * 8;
            [[unroll]] for (uint e = 0; e < 4; e++) {
                q_lo[r * CK + i][e] = row_ok[r] && e0 + e < p.DK ? data_q[q0 + e0 + e] : 0.0;
                q_hi[r * CK + i][e] = row_ok[r] && e0 + e + 4 < p.DK ? data_q[q0 + e0 + e + 4] : 0.0;
            }
        }
    }

    float run_max[R], run_sum[R];
    vec4 o_lo[R * CV], o_hi[R * CV];
    [[unroll]] for (uint r = 0; r < R; r++) {
        run_max[r] = NEG_INF;
        run_sum[r] = 0.0;
        [[unroll]] for (uint i = 0; i < CV; i++) {
            o_lo[r * CV + i] = vec4(0.0);
            o_hi[r * CV + i] = vec4(0.0);
        }
    }

    for (uint jb = j_begin; jb < j_end; jb += G * B) {
        // 1. the group's keys: their mask, K and V rows, every load issued before any is used (past
        //    the keys, the last key's rows, masked)
        float s[B * R];
        vec4 k_lo[B * CK], k_hi[B * CK], v_lo[B * CV], v_hi[B * CV];
        [[unroll]] for (uint u = 0; u < B; u++) {
            const uint j = jb + u * G + grp, jr = min(j, j_end - 1);
            [[unroll]] for (uint r = 0; r < R; r++) {
                float mv = NEG_INF;
                if (j < j_end && row_ok[r]) mv = (p.flags & 1u) != 0 ? slope[r] * TO_F32(M_TYPE, data_m[mrow[r] + j]) : 0.0;
                s[u * R + r] = mv;
            }
            [[unroll]] for (uint i = 0; i < CK; i++)
                chunk8(false, k_chunked, k0 + jr * p.nbk1, lane + 8 * i, p.DK, k_lo[u * CK + i], k_hi[u * CK + i]);
            [[unroll]] for (uint i = 0; i < CV; i++)
                chunk8(true, v_chunked, v0 + jr * p.nbv1, lane + 8 * i, p.DV, v_lo[u * CV + i], v_hi[u * CV + i]);
        }
        // 2. the scores: K . q over the lane's chunks, added across the group's lanes
        [[unroll]] for (uint u = 0; u < B; u++) {
            [[unroll]] for (uint r = 0; r < R; r++) {
                float d = 0.0;
                [[unroll]] for (uint i = 0; i < CK; i++) d += dot(q_lo[r * CK + i], k_lo[u * CK + i]) + dot(q_hi[r * CK + i], k_hi[u * CK + i]);
                float x = group_sum(d) * p.scale;
                if (p.softcap != 0.0) x = p.softcap * tanh(clamp(x / p.softcap, -15.0, 15.0));
                s[u * R + r] = s[u * R + r] == NEG_INF ? NEG_INF : x + s[u * R + r];
            }
        }
        // 3. the online softmax, a step at a time
        [[unroll]] for (uint r = 0; r < R; r++) {
            float step_max = NEG_INF;
            [[unroll]] for (uint u = 0; u < B; u++) step_max = max(step_max, s[u * R + r]);
            if (step_max == NEG_INF) continue;
            const float new_max = max(run_max[r], step_max);
            const float shrink = run_max[r] == NEG_INF ? 0.0 : exp(run_max[r] - new_max);
            run_max[r] = new_max;
            float sum = 0.0;
            [[unroll]] for (uint i = 0; i < CV; i++) {
                o_lo[r * CV + i] *= shrink;
                o_hi[r * CV + i] *= shrink;
            }
            [[unroll]] for (uint u = 0; u < B; u++) {
                const float w = s[u * R + r] == NEG_INF ? 0.0 : exp(s[u * R + r] - new_max);
                sum += w;
                [[unroll]] for (uint i = 0; i < CV; i++) { // masked keys' rows (whatever they hold) add nothing
                    o_lo[r * CV + i] += w != 0.0 ? w * v_lo[u * CV + i] : vec4(0.0);
                    o_hi[r * CV + i] += w != 0.0 ? w * v_hi[u * CV + i] : vec4(0.0);
                }
            }
            run_sum[r] = run_sum[r] * shrink + sum;
        }
    }

    // the groups' states into shared memory
    [[unroll]] for (uint r = 0; r < R; r++) {
        const uint at = grp * R + r;
        if (lane == 0) {
            sh_m[at] = run_max[r];
            sh_l[at] = run_sum[r];
        }
        [[unroll]] for (uint i = 0; i < CV; i++) {
            const uint col = (lane + 8 * i) * 8;
            [[unroll]] for (uint e = 0; e < 4; e++) {
                sh_o[at * DVP + col + e] = o_lo[r * CV + i][e];
                sh_o[at * DVP + col + e + 4] = o_hi[r * CV + i][e];
            }
        }
    }
    barrier();
#ifdef FUSE_Q8
    // unsplit (the host checks), 4 consecutive values of a row a thread, as below, and quantized
    // too for the products that read the output (q8-lanes.glsl: DV a multiple of 32, so a row's
    // threads, whole lane groups of 8, skip together)
    for (uint e = t; e < R * p.DV / 4; e += WG) {
        const uint r = e / (p.DV / 4), col = 4 * (e % (p.DV / 4)), g = g0 + r;
        if (g >= rows) continue;
        const float m = groups_max(r);
        float l = 0.0;
        vec4 acc = vec4(0.0);
        if (m != NEG_INF) {
            for (uint k = 0; k < G; k++) {
                const float w = group_weight(k, r, m);
                const uint at = (k * R + r) * DVP + col;
                l += w * sh_l[k * R + r];
                acc += w * vec4(sh_o[at], sh_o[at + 1], sh_o[at + 2], sh_o[at + 3]);
            }
        }
        const uint iq = g / p.rk2, h = kvh * p.rk2 + g % p.rk2, at = ((b * p.NQ + iq) * p.H + h) * p.DV + col;
        const float keep = sink_join(h, m, l);
        const vec4 o = l > 0.0 ? acc * keep / l : vec4(0.0);
        [[unroll]] for (uint i = 0; i < 4; i++) data_d[p.off_d + at + i] = o[i];
        q8_store4(o, 0, 0, at / 4);
    }
#else
    // each (row, value) of the workgroup: the groups' sums at the largest maximum
    for (uint e = t; e < R * p.DV; e += WG) {
        const uint r = e / p.DV, col = e % p.DV, g = g0 + r;
        if (g >= rows) continue;
        const float m = groups_max(r);
        float l = 0.0, acc = 0.0;
        if (m != NEG_INF) {
            for (uint k = 0; k < G; k++) {
                const float w = group_weight(k, r, m);
                l += w * sh_l[k * R + r];
                acc += w * sh_o[(k * R + r) * DVP + col];
            }
        }
        const uint iq = g / p.rk2, h = kvh * p.rk2 + g % p.rk2, out_row = (b * p.NQ + iq) * p.H + h;
        if (per_split != 0) {
            const uint p0 = (out_row * ns + split) * (p.DV + 2);
            data_p[p0 + col] = acc;
            if (col == 0) {
                data_p[p0 + p.DV] = m;
                data_p[p0 + p.DV + 1] = l;
            }
            continue;
        }
        acc *= sink_join(h, m, l);
        data_d[p.off_d + out_row * p.DV + col] = l > 0.0 ? acc / l : 0.0;
    }
#endif
}
