#version 450
// Tiled matrix product with shared memory: a workgroup computes a BM x BN
// tile of d, each thread TM x TN of it in registers (f32 accumulation).
// TM and TN are multiples of 4: a thread's rows (and columns) come in runs
// of 4 adjacent ones, read from shared memory as one vec4; neighbouring
// threads own neighbouring runs, so those reads do not conflict.  Shared rows
// are padded by 4 floats so that the k-major stores of the staging do not
// conflict either.
// Split k (k_split > 0: products of too few tiles to fill the GPU, unbatched only): workgroup
// layer z takes k in [z * k_split, (z + 1) * k_split) and writes its partial d nb3 floats
// apart, for mm-split-sum.comp to add up.
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
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };
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
// a[k, m] of the tile; ALONG_M: out_prod of a block-format a, whose blocks run along m
// while k steps whole rows of p.ka words
#if defined(QTYPE) && defined(ALONG_M)
#define LOAD_A_AT(base, m, k) dq((base) + (k) * p.ka + ((m) / QK) * QWORDS, (m) % QK)
#else
#define LOAD_A_AT(base, m, k) LOAD_A((base) + (m) * p.nb01, k)
#endif

const uint LA = BM + 4, LB = BN + 4;  // padded shared row lengths (floats)
shared vec4 sa[BK * LA / 4];
shared vec4 sb[BK * LB / 4];

// The next k-slice is loaded into registers while the current one is
// multiplied from shared memory (BM * BK and BN * BK are multiples of WG).
const uint PA = BM * BK / WG, PB = BN * BK / WG;
float pa[PA], pb[PB];
uint k_end; // the end of this workgroup's k range

void fetch(uint k0, uint m0, uint n0, uint a_base, uint b_base) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < PA; r++) {
        const uint i = tid + r * WG, gm = m0 + i / BK, gk = k0 + i % BK;
        pa[r] = (gm < p.M && gk < k_end) ? LOAD_A_AT(a_base, gm, gk) : 0.0;
    }
    [[unroll]] for (uint r = 0; r < PB; r++) {
        const uint i = tid + r * WG, gn = n0 + i / BK, gk = k0 + i % BK;
        pb[r] = (gn < p.N && gk < k_end) ? TO_F32(B_TYPE, data_b[b_base + gn * p.nb11 + gk * p.kb]) : 0.0;
    }
}

void stash() {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < PA; r++) {
        const uint i = tid + r * WG, at = (i % BK) * LA + i / BK;
        sa[at / 4][at % 4] = pa[r];
    }
    [[unroll]] for (uint r = 0; r < PB; r++) {
        const uint i = tid + r * WG, at = (i % BK) * LB + i / BK;
        sb[at / 4][at % 4] = pb[r];
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const bool split = p.k_split != 0;
    const uint z = split ? 0 : gl_WorkGroupID.z, b2 = z % p.ne12, b3 = z / p.ne12;
    const uint k_begin = split ? gl_WorkGroupID.z * p.k_split : 0;
    k_end = split ? min(p.K, k_begin + p.k_split) : p.K;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    const uint RM = BM / TM, RN = BN / TN; // threads along m and n
    const uint tm = tid % RM, tn = tid / RM;

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    vec4 ra[TM / 4], rb[TN / 4];

    fetch(k_begin, m0, n0, a_base, b_base);
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        stash();
        barrier();
        if (k0 + BK < k_end) fetch(k0 + BK, m0, n0, a_base, b_base);
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            [[unroll]] for (uint i = 0; i < TM / 4; i++) ra[i] = sa[kk * (LA / 4) + i * RM + tm];
            [[unroll]] for (uint j = 0; j < TN / 4; j++) rb[j] = sb[kk * (LB / 4) + j * RN + tn];
            [[unroll]] for (uint j = 0; j < TN; j++)
                [[unroll]] for (uint i = 0; i < TM; i++) acc[j * TM + i] = fma(ra[i / 4][i % 4], rb[j / 4][j % 4], acc[j * TM + i]);
        }
        barrier();
    }
    const uint d_base = p.off_d + (split ? gl_WorkGroupID.z * p.nb3 : b2 * p.nb2 + b3 * p.nb3);
    [[unroll]] for (uint j = 0; j < TN; j++) {
        const uint gn = n0 + (j / 4) * 4 * RN + tn * 4 + j % 4;
        [[unroll]] for (uint i = 0; i < TM; i++) {
            const uint gm = m0 + (i / 4) * 4 * RM + tm * 4 + i % 4;
            if (gm < p.M && gn < p.N) data_d[d_base + gn * p.nb1 + gm] = acc[j * TM + i];
        }
    }
}
