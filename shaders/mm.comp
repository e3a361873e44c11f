#version 450
// Tiled matrix product with shared memory: a workgroup computes a BM x BN
// tile of d, each thread TM x TN of it in registers (f32 accumulation).
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(local_size_x_id = 0) in;

#ifdef QTYPE
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };
#else
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#endif
layout(binding = 1) readonly buffer B { STORAGE_T(B_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
#ifdef QTYPE
#include "quant.glsl"
#define LOAD_A(row, k) dq((row) + ((k) / QK) * QWORDS, (k) % QK)
#else
#define LOAD_A(row, k) TO_F32(A_TYPE, data_a[(row) + (k) * p.ka])
#endif

shared float sa[BK * BM];
shared float sb[BK * BN];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint RM = BM / TM;             // threads along m
    const uint tm = tid % RM, tn = tid / RM;

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    float ra[TM], rb[TN];

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        for (uint i = tid; i < BM * BK; i += WG) {
            const uint kk = i % BK, mm = i / BK, gm = m0 + mm, gk = k0 + kk;
            sa[kk * BM + mm] = (gm < p.M && gk < p.K) ? LOAD_A(a_base + gm * p.nb01, gk) : 0.0;
        }
        for (uint i = tid; i < BN * BK; i += WG) {
            const uint kk = i % BK, nn = i / BK, gn = n0 + nn, gk = k0 + kk;
            sb[kk * BN + nn] = (gn < p.N && gk < p.K) ? TO_F32(B_TYPE, data_b[b_base + gn * p.nb11 + gk * p.kb]) : 0.0;
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            [[unroll]] for (uint i = 0; i < TM; i++) ra[i] = sa[kk * BM + tm + i * RM];
            [[unroll]] for (uint j = 0; j < TN; j++) rb[j] = sb[kk * BN + tn + j * (WG / RM)];
            [[unroll]] for (uint j = 0; j < TN; j++)
                [[unroll]] for (uint i = 0; i < TM; i++) acc[j * TM + i] = fma(ra[i], rb[j], acc[j * TM + i]);
        }
        barrier();
    }
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3;
    [[unroll]] for (uint j = 0; j < TN; j++) {
        const uint gn = n0 + tn + j * (WG / RM);
        [[unroll]] for (uint i = 0; i < TM; i++) {
            const uint gm = m0 + tm + i * RM;
            if (gm < p.M && gn < p.N) data_d[d_base + gn * p.nb1 + gm] = acc[j * TM + i];
        }
    }
}
