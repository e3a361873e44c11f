#version 450
// flash_attn_ext: one workgroup per (query, head, batch).  Keys are taken in
// chunks of WG: each thread scores one key (q.k * scale, soft-capped, plus
// slope * mask), then the chunk's softmax weights update a running maximum,
// normaliser and weighted sum of V (threads over the value dimension).
// d[:, head, query, batch] = softmax(scores) V; optional sinks join the
// normaliser only.  q, mask-less or sink-less bindings repeat q.
// K and V share a type (fattn-kv.glsl).  Many query rows take flash-attn-tile.comp instead.
// Split keys (flags >> 8 = chunks of WG keys per split, 0: none): the NS workgroups of a row
// (workgroup x = query * NS + split) each take their own run of keys and write, unnormalised,
// their sums of V with their maximum and normaliser, for fattn-combine.comp (which adds the sinks).
#include "types.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer Q { float data_q[]; };
layout(binding = 1) readonly buffer K { STORAGE_T(K_TYPE) data_k[]; };
layout(binding = 2) readonly buffer V { STORAGE_T(K_TYPE) data_v[]; };
layout(binding = 3) readonly buffer M { STORAGE_T(M_TYPE) data_m[]; };
layout(binding = 4) readonly buffer S { float data_s[]; };
layout(binding = 5) writeonly buffer D { float data_d[]; };
layout(binding = 6) writeonly buffer P { float data_p[]; }; // split keys: per (row, split) DV sums, maximum, normaliser

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_flash_attn);
#include "fattn-kv.glsl"

const uint WG = 128, DMAX = 576, VPT = 4; // head sizes: k up to 576, v up to VPT * WG = 512
shared float qs[DMAX];
shared float pw[WG];
shared float red[WG];

float block_reduce(float v, bool is_max) {
    const uint t = gl_LocalInvocationID.x;
    barrier();
    red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = is_max ? max(red[t], red[t + s]) : red[t] + red[t + s];
        barrier();
    }
    return red[0];
}

void main() {
    const uint chunks = p.flags >> 8, ns = chunks != 0 ? gl_NumWorkGroups.x / p.NQ : 1u;
    const uint iq = gl_WorkGroupID.x / ns, split = gl_WorkGroupID.x % ns, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint t = gl_LocalInvocationID.x;
    const uint j_begin = chunks != 0 ? min(p.NKV, split * chunks * WG) : 0u, j_end = chunks != 0 ? min(p.NKV, j_begin + chunks * WG) : p.NKV;
    const uint q0 = p.off_q + iq * p.nbq1 + h * p.nbq2 + b * p.nbq3;
    for (uint i = t; i < p.DK; i += WG) qs[i] = data_q[q0 + i];
    const uint k0 = p.off_k + (h / p.rk2) * p.nbk2 + (b / p.rk3) * p.nbk3;
    const uint v0 = p.off_v + (h / p.rk2) * p.nbv2 + (b / p.rk3) * p.nbv3;
    const uint m0i = p.off_m + ((b % p.mne3) * p.mne2 + (h % p.mne2)) * p.mne1 * p.mne0 + iq * p.mne0;
    const float slope = alibi_slope(h);
    const float NEG_INF = -1.0 / 0.0;
    float run_max = NEG_INF, run_sum = 0.0, acc[VPT] = float[VPT](0.0, 0.0, 0.0, 0.0);
    barrier();
    for (uint j0 = j_begin; j0 < j_end; j0 += WG) {
        const uint j = j0 + t;
        float s = NEG_INF;
        if (j < j_end) {
            const float mv = (p.flags & 1u) != 0 ? TO_F32(M_TYPE, data_m[m0i + j]) : 0.0;
            if (mv != NEG_INF) {
                float dot = 0.0;
                const uint kr = k0 + j * p.nbk1;
                for (uint i = 0; i < p.DK; i++) dot = fma(qs[i], KV_AT(data_k, kr, i), dot);
                s = dot * p.scale;
                if (p.softcap != 0.0) s = p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0));
                s += slope * mv;
            }
        }
        const float chunk_max = block_reduce(s, true);
        if (chunk_max == NEG_INF) continue; // every key of the chunk masked
        const float new_max = max(run_max, chunk_max);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        const float w = s == NEG_INF ? 0.0 : exp(s - new_max);
        pw[t] = w;
        run_sum = run_sum * shrink + block_reduce(w, false);
        run_max = new_max;
        // block_reduce ended with a barrier: pw is complete
        const uint n = min(WG, j_end - j0);
        float a[VPT] = float[VPT](0.0, 0.0, 0.0, 0.0);
        for (uint jj = 0; jj < n; jj++) {
            const float wj = pw[jj];
            if (wj == 0.0) continue;
            const uint vr = v0 + (j0 + jj) * p.nbv1;
            [[unroll]] for (uint c = 0; c < VPT; c++)
                if (t + c * WG < p.DV) a[c] = fma(wj, KV_AT(data_v, vr, t + c * WG), a[c]);
        }
        [[unroll]] for (uint c = 0; c < VPT; c++) acc[c] = acc[c] * shrink + a[c];
        barrier(); // pw is rewritten by the next chunk
    }
    if (chunks != 0) {
        const uint p0 = (((b * p.NQ + iq) * p.H + h) * ns + split) * (p.DV + 2);
        [[unroll]] for (uint c = 0; c < VPT; c++)
            if (t + c * WG < p.DV) data_p[p0 + t + c * WG] = acc[c];
        if (t == 0) {
            data_p[p0 + p.DV] = run_max;
            data_p[p0 + p.DV + 1] = run_sum;
        }
        return;
    }
    if ((p.flags & 2u) != 0) {
        const float sink = data_s[p.off_s + h];
        const float new_max = max(run_max, sink);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        run_sum = run_sum * shrink + exp(sink - new_max);
        [[unroll]] for (uint c = 0; c < VPT; c++) acc[c] *= shrink;
    }
    const float inv = run_sum > 0.0 ? 1.0 / run_sum : 0.0;
    const uint d0 = p.off_d + ((b * p.NQ + iq) * p.H + h) * p.DV;
    [[unroll]] for (uint c = 0; c < VPT; c++)
        if (t + c * WG < p.DV) data_d[d0 + t + c * WG] = acc[c] * inv;
}
