#version 450
// mul_mat_id for many tokens: workgroup (m tile, expert e) scans the ids once,
// gathering the (slot, token) pairs routed to e into a shared list, and each
// time BN of them are listed multiplies the BM rows of expert e with their
// activation rows as a tiled GEMM (f32 accumulation, as in mm.comp).  So every
// expert's weights are read once per m tile whatever the number of tokens,
// and an expert nobody uses costs only the scan.  Pairs with an out-of-range
// expert id get zero rows.
#include "types.glsl"
#include "mm-id-push.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(local_size_x_id = 0) in;

#ifdef QTYPE
#define LOAD_A(w, k) dq((w) + ((k) / QK) * QWORDS, (k) % QK)
#else
#define LOAD_A(w, k) TO_F32(A_TYPE, data_a[(w) + (k)])
#endif

shared float sa[BK * BM];
shared float sb[BK * BN];
shared uint pairs[2 * BN]; // listed pairs: a scan step adds at most BN to fewer than BN
shared uint n_listed;

// d rows of pairs[0..n) = the expert's BM x K tile times their activation rows
void tile_product(uint a_base, uint m0, uint n) {
    const uint tid = gl_LocalInvocationID.x, RM = BM / TM, tm = tid % RM, tn = tid / RM;
    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    float ra[TM], rb[TN];
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        for (uint i = tid; i < BM * BK; i += WG) {
            const uint kk = i % BK, mm = i / BK, gm = m0 + mm, gk = k0 + kk;
            sa[kk * BM + mm] = (gm < p.M && gk < p.K) ? LOAD_A(a_base + gm * p.nb01, gk) : 0.0;
        }
        for (uint i = tid; i < BN * BK; i += WG) {
            const uint kk = i % BK, nn = i / BK, gk = k0 + kk;
            sb[kk * BN + nn] = (nn < n && gk < p.K) ? data_b[b_row_of(pairs[nn]) + gk] : 0.0;
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
    [[unroll]] for (uint j = 0; j < TN; j++) {
        const uint nn = tn + j * (WG / RM);
        if (nn >= n) continue;
        const uint d_row = d_row_of(pairs[nn]);
        [[unroll]] for (uint i = 0; i < TM; i++) {
            const uint gm = m0 + tm + i * RM;
            if (gm < p.M) data_d[d_row + gm] = acc[j * TM + i];
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, m0 = gl_WorkGroupID.x * BM, e = gl_WorkGroupID.z;
    const uint a_base = p.off_a + e * p.nb02, n_pairs = p.n_used * p.n_tokens;
    if (tid == 0) n_listed = 0;
    barrier();
    // The order of a listed pair does not matter: this workgroup computes all of
    // expert e's pairs for its rows, each exactly once.  One call site of the tile
    // product (a full tile while scanning, the rest after) keeps the shader small.
    for (uint q0 = 0;; q0 += BN) {
        const bool scanned = q0 >= n_pairs;
        for (uint i = tid; i < BN && !scanned; i += WG) {
            const uint q = q0 + i, id = q < n_pairs ? expert_of(q) : p.n_as;
            if (id == e) pairs[atomicAdd(n_listed, 1u)] = q;
            if (id >= p.n_as && q < n_pairs && e == 0) // out of range: expert 0's workgroups write zeros
                for (uint gm = m0; gm < min(m0 + BM, p.M); gm++) data_d[d_row_of(q) + gm] = 0.0;
        }
        barrier();
        const uint n = n_listed, take = min(n, BN);
        if (n >= BN || (scanned && n > 0)) {
            tile_product(a_base, m0, take);
            barrier(); // the tile's last reads of pairs[] before they move
            for (uint i = tid; i < n - take; i += WG) pairs[i] = pairs[take + i];
            barrier();
            if (tid == 0) n_listed = n - take;
        }
        barrier();
        if (scanned) break;
    }
}
