#version 450
// The linear-attention recurrences, one workgroup per (head, sequence) and one
// invocation per state column (row for RWKV v7), the S x S state kept in the
// result after the outputs.  Operands are contiguous [S, H, T]; KIND selects:
//   0 gated linear attention: st = st * g[i] + k[i] v[j]; out[j] = sum_i st q[i] scale
//   6 RWKV v6: out[j] = sum_i r[i] (tf[i] k[i] v[j] + st); st = st * td[i] + k[i] v[j]
//   7 RWKV v7: row i: sa = sum_j a[j] st; st = st * w[j] + v[i] k[j] + sa b[j]; out[i] = sum_j st r[j]
// Sums run in the CPU's order, so results round alike.
#include "types.glsl"

layout(constant_id = 0) const uint S = 64;
layout(local_size_x_id = 0) in;

#if KIND == 0
#define N_VEC 4 // k, v, q, g
#elif KIND == 6
#define N_VEC 5 // k, v, r, tf, td
#else
#define N_VEC 6 // r, w, k, v, a, b
#endif
layout(binding = 0) readonly buffer V0 { float v0[]; };
layout(binding = 1) readonly buffer V1 { float v1[]; };
layout(binding = 2) readonly buffer V2 { float v2[]; };
layout(binding = 3) readonly buffer V3 { float v3[]; };
#if N_VEC >= 5
layout(binding = 4) readonly buffer V4 { float v4[]; };
#endif
#if N_VEC >= 6
layout(binding = 5) readonly buffer V5 { float v5[]; };
#endif
layout(binding = N_VEC) readonly buffer ST { float state_in[]; };
layout(binding = N_VEC + 1) buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_recurrence);

shared float sh[N_VEC][S];

float load(uint b, uint at) {
    switch (b) {
    case 0: return v0[p.off[0] + at];
    case 1: return v1[p.off[1] + at];
    case 2: return v2[p.off[2] + at];
    case 3: return v3[p.off[3] + at];
#if N_VEC >= 5
    case 4: return v4[p.off[4] + at];
#endif
#if N_VEC >= 6
    case 5: return v5[p.off[5] + at];
#endif
    default: return 0.0;
    }
}

void main() {
    const uint h = gl_WorkGroupID.x, q = gl_WorkGroupID.y, c = gl_LocalInvocationID.x;
    const uint per_seq = p.T / p.n_seqs, st0 = p.off[N_VEC + 1] + S * p.H * p.T + (q * p.H + h) * S * S;
    for (uint i = 0; i < S; i++) { // each invocation copies the part of the state it owns
        const uint e = KIND == 7 ? c * S + i : i * S + c;
        data_d[st0 + e] = state_in[p.off[N_VEC] + (q * p.H + h) * S * S + e];
    }
    for (uint t = q * per_seq; t < (q + 1) * per_seq; t++) {
        const uint at = (t * p.H + h) * S;
        barrier();
        for (uint b = 0; b < N_VEC; b++) sh[b][c] = KIND == 6 && b == 3 ? load(3, h * S + c) : load(b, at + c); // tf is [S, H]
        barrier();
        float acc = 0.0;
#if KIND == 0
        for (uint i = 0; i < S; i++) {
            const uint s = st0 + i * S + c;
            const float st = data_d[s] * sh[3][i] + sh[0][i] * sh[1][c];
            data_d[s] = st;
            acc += st * sh[2][i] * p.scale;
        }
#elif KIND == 6
        for (uint i = 0; i < S; i++) {
            const uint s = st0 + i * S + c;
            const float kv = sh[0][i] * sh[1][c];
            acc += sh[2][i] * (sh[3][i] * kv + data_d[s]);
            data_d[s] = data_d[s] * sh[4][i] + kv;
        }
#else
        float sa = 0.0;
        for (uint j = 0; j < S; j++) sa += sh[4][j] * data_d[st0 + c * S + j];
        for (uint j = 0; j < S; j++) {
            const uint s = st0 + c * S + j;
            const float st = data_d[s] * sh[1][j] + sh[3][c] * sh[2][j] + sa * sh[5][j];
            data_d[s] = st;
            acc += st * sh[0][j];
        }
#endif
        data_d[p.off[N_VEC + 1] + at + c] = acc;
    }
}
