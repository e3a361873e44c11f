#version 450
// f16 matrix product on tensor cores through GL_NV_cooperative_matrix:
// 16x16x16 f16 fragments with f32 accumulators.  A workgroup of WG / S
// subgroups (S the device's subgroup size) computes a BM x BN tile of d, each
// subgroup a WM x WN part.
// Operands travel in chunks of 8 values along k (16 bytes of f16): a is f16,
// b f32 (B_F32, two vec4 per chunk, rounded to f16 when stored to shared
// memory) or f16; K must be a multiple of 8.  Shared memory holds one slice
// of BK along k, rows padded by one chunk so that neither the chunk stores
// nor the fragment loads (8 rows of 16 bytes) hit the same bank twice.  The
// next slice is fetched into registers while the current one is multiplied;
// with STAGES = 2 it is also stored into a second shared slice before the
// barrier, so one barrier per slice instead of two.  Tile sizes and stages are
// specialization constants.
// FLEX: each subgroup's WM x WN part is one accumulator, multiplied by WM x FK and
// FK x WN operands (the flexible sizes of VK_NV_cooperative_matrix2, so the driver
// picks the instruction sequence); written in NV syntax, rewritten into KHR
// instructions at build time (plugins/vulkan/spv-coopmat-khr.py).  Whole tiles
// only, 16-byte aligned d: the host checks.
// Split k (k_split > 0, for products of too few tiles to fill the GPU; the host splits
// unbatched products only): workgroup layer z takes k from z * k_split on (a multiple of BK)
// and writes its partial d nb3 floats apart, for mm-split-sum.comp to add up.
// KHR: the fragments on VK_KHR_cooperative_matrix, rewritten the same way, of the
// device's shape FRM x FRN x FRK (16x16x16 on an H200, 8x8x8 on lavapipe), all
// specialization constants; B's rows (KB = FRK) are a constant of their own so that
// A's and B's types differ, as KHR types must (by their use).
// QTYPE (a ggml block format, quant.glsl): a holds the weights' blocks themselves, read
// as 16-bit words (strides and offset in words), each thread's chunks of 8 values
// decoded into f16 as they go to shared memory, so the product needs no f16 copy of
// the weights.  Q8_0 and Q4_0 keep a chunk's raw words (its block's scale and the 4
// words holding its 8 quants) in registers while the slice before is multiplied and
// decode them when storing; the other formats decode at the fetch (quant.glsl's dq).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#ifdef QTYPE
#include "types.glsl"
#endif
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 64;
layout(constant_id = 4) const uint WM = 64;
layout(constant_id = 5) const uint WN = 32;
layout(constant_id = 6) const uint FK = 16;      // FLEX: k per product (a multiple of 16 dividing BK)
#ifdef KHR
layout(constant_id = 7) const uint KB = 16;      // B fragments' rows: FRK
layout(constant_id = 9) const uint FRM = 16;     // fragment rows (m)
layout(constant_id = 10) const uint FRN = 16;    // fragment columns (n)
layout(constant_id = 11) const uint FRK = 16;    // fragment depth (k): a multiple of 8
#define B_ROWS KB
#else
const uint FRM = 16, FRN = 16, FRK = 16;
#define B_ROWS 16
#endif
layout(constant_id = 8) const uint STAGES = 1;   // shared slices: 1 or 2
layout(local_size_x_id = 0) in;
const uint CK = BK / 8, LDV = CK + 1;             // chunks per row of a slice, row stride in chunks
const uint FM = WM / FRM, FN = WN / FRN;
const uint A_LOADS = BM * CK / WG, B_LOADS = BN * CK / WG; // chunks per thread and slice
#ifdef B_F32
#define B_VEC vec4
const uint B_VECS = 2;                            // vec4 per chunk
#else
#define B_VEC uvec4
const uint B_VECS = 1;
#endif

#ifdef QTYPE
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };
#else
layout(binding = 0) readonly buffer A { uvec4 data_a[]; };
#endif
layout(binding = 1) readonly buffer B { B_VEC data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
#ifdef QTYPE
#include "quant.glsl"
#if QTYPE == 2 || QTYPE == 8
#define A_RAW
#endif
#endif

shared uvec4 sa[STAGES * BM * LDV];               // 8 halves per element; at the end, 16x16 f32 per subgroup
shared uvec4 sb[STAGES * BN * LDV];

#ifdef A_RAW
uint ra_d[A_LOADS];     // the chunk's block scale (f16 bits; 0 outside a)
uint ra_q[A_LOADS][4];  // the 16-bit words holding its 8 quants (Q4_0: low or high nibbles)
uint ra_k0;             // k of the fetched slice
#else
uvec4 ra[A_LOADS];
#endif
B_VEC rb[B_LOADS * B_VECS];

#ifdef QTYPE
// the 16-bit word where the block holding value gk of row gm starts
uint block_word(uint a_base, uint gm, uint gk) { return a_base + gm * p.nb01 + (gk / QK) * QWORDS; }
#endif

#if defined(QTYPE) && !defined(A_RAW)
// values j0..j0+7 of the block at word w, in f16
uvec4 decode_chunk(uint w, uint j0) {
    uvec4 h;
    [[unroll]] for (uint i = 0; i < 4; i++) h[i] = packHalf2x16(vec2(dq(w, j0 + 2 * i), dq(w, j0 + 2 * i + 1)));
    return h;
}
#endif

// a's chunks of the slice at k0 into registers (zeros outside a)
void fetch_a(uint k0, uint m0, uint a_base) {
    const uint tid = gl_LocalInvocationID.x;
#ifdef A_RAW
    ra_k0 = k0;
#endif
    [[unroll]] for (uint r = 0; r < A_LOADS; r++) {
        const uint idx = tid + r * WG, gm = m0 + idx / CK, gk = k0 + (idx % CK) * 8;
        const bool inside = gm < p.M && gk < p.K;
#ifdef A_RAW
        // Q8_0: quant bytes j0.. of the block (after its scale word); Q4_0: bytes j0 % 16..
        const uint w = inside ? block_word(a_base, gm, gk) : 0, q0 = w + 1 + (QTYPE == 8 ? gk % QK : gk % 16) / 2;
        ra_d[r] = inside ? uint(data_a[w]) : 0u;
        [[unroll]] for (uint i = 0; i < 4; i++) ra_q[r][i] = inside ? uint(data_a[q0 + i]) : 0u;
#elif defined(QTYPE)
        ra[r] = inside ? decode_chunk(block_word(a_base, gm, gk), gk % QK) : uvec4(0);
#else
        ra[r] = inside ? data_a[a_base + gm * p.nb01 + gk / 8] : uvec4(0);
#endif
    }
}

#ifdef A_RAW
// chunk r of the fetched slice in f16: the block's scale times each quant (Q4_0: minus 8), in
// f32 and then rounded, as dequantizing into f16 does
uvec4 decode_raw(uint r) {
    const float d = unpackHalf2x16(ra_d[r]).x;
    uvec4 h;
#if QTYPE == 2
    const uint idx = gl_LocalInvocationID.x + r * WG, shift = ((ra_k0 + (idx % CK) * 8) % 32) >= 16 ? 4 : 0;
#endif
    [[unroll]] for (uint i = 0; i < 4; i++) {
        const uint w = ra_q[r][i];
#if QTYPE == 8
        const vec2 q = vec2(float(int(w << 24) >> 24), float(int(w << 16) >> 24));
#else
        const vec2 q = vec2(float((w >> shift) & 0xfu), float((w >> (8 + shift)) & 0xfu)) - 8.0;
#endif
        h[i] = packHalf2x16(d * q);
    }
    return h;
}
#endif

// global -> registers for the slice at k0 (zeros outside the matrices); the
// loads are left in flight, nothing here waits for them (but the decoding of
// block formats other than Q8_0 and Q4_0)
void fetch(uint k0, uint m0, uint n0, uint a_base, uint b_base) {
    const uint tid = gl_LocalInvocationID.x;
    fetch_a(k0, m0, a_base);
    [[unroll]] for (uint r = 0; r < B_LOADS; r++) {
        const uint idx = tid + r * WG, gn = n0 + idx / CK, gk = k0 + (idx % CK) * 8;
        const bool inside = gn < p.N && gk < p.K;
        const uint at = b_base + gn * p.nb11 + gk / (8 / B_VECS);
        [[unroll]] for (uint v = 0; v < B_VECS; v++) rb[r * B_VECS + v] = inside ? data_b[at + v] : B_VEC(0);
    }
}

// registers -> shared slice s, one 16-byte store per chunk
void stash(uint s) {
    const uint tid = gl_LocalInvocationID.x, a0 = s * BM * LDV, b0 = s * BN * LDV;
    [[unroll]] for (uint r = 0; r < A_LOADS; r++) {
        const uint idx = tid + r * WG;
#ifdef A_RAW
        sa[a0 + (idx / CK) * LDV + idx % CK] = decode_raw(r);
#else
        sa[a0 + (idx / CK) * LDV + idx % CK] = ra[r];
#endif
    }
    [[unroll]] for (uint r = 0; r < B_LOADS; r++) {
        const uint idx = tid + r * WG;
#ifdef B_F32
        const vec4 lo = rb[2 * r], hi = rb[2 * r + 1];
        const uvec4 h = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
#else
        const uvec4 h = rb[r];
#endif
        sb[b0 + (idx / CK) * LDV + idx % CK] = h;
    }
}

#ifdef FLEX
fcoopmatNV<32, gl_ScopeSubgroup, WM, WN> acc;

// the products of shared slice s into acc
void multiply(uint wm, uint wn, uint s) {
    const uint a0 = s * BM * LDV, b0 = s * BN * LDV;
    [[unroll]] for (uint kk = 0; kk < CK; kk += FK / 8) {
        fcoopmatNV<16, gl_ScopeSubgroup, WM, FK> fa;
        fcoopmatNV<16, gl_ScopeSubgroup, FK, WN> fb;
        coopMatLoadNV(fa, sa, a0 + wm * LDV + kk, LDV, false);
        coopMatLoadNV(fb, sb, b0 + wn * LDV + kk, LDV, true);
        acc = coopMatMulAddNV(fa, fb, acc);
    }
}
#else
fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN> acc[FM][FN];

// the products of shared slice s into acc
void multiply(uint wm, uint wn, uint s) {
    const uint a0 = s * BM * LDV, b0 = s * BN * LDV;
    [[unroll]] for (uint kk = 0; kk < CK; kk += FRK / 8) {
        fcoopmatNV<16, gl_ScopeSubgroup, FRM, FRK> fa[FM];
        fcoopmatNV<16, gl_ScopeSubgroup, B_ROWS, FRN> fb[FN];
        [[unroll]] for (uint i = 0; i < FM; i++) coopMatLoadNV(fa[i], sa, a0 + (wm + i * FRM) * LDV + kk, LDV, false);
        [[unroll]] for (uint j = 0; j < FN; j++) coopMatLoadNV(fb[j], sb, b0 + (wn + j * FRN) * LDV + kk, LDV, true);
        [[unroll]] for (uint i = 0; i < FM; i++)
            [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
}
#endif

void main() {
    const uint warp = gl_SubgroupID;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const bool split = p.k_split != 0;
    const uint z = split ? 0 : gl_WorkGroupID.z, b2 = z % p.ne12, b3 = z / p.ne12;
    const uint k_begin = split ? gl_WorkGroupID.z * p.k_split : 0, k_end = split ? min(p.K, k_begin + p.k_split) : p.K;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;   // in uvec4 units (QTYPE: words)
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;                     // in 16-byte units
    const uint wm = (warp % (BM / WM)) * WM, wn = (warp / (BM / WM)) * WN;

#ifdef FLEX
    acc = fcoopmatNV<32, gl_ScopeSubgroup, WM, WN>(0.0);
#else
    [[unroll]] for (uint i = 0; i < FM; i++)
        [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN>(0.0);
#endif

    fetch(k_begin, m0, n0, a_base, b_base);
    uint s = 0;
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        if (STAGES == 1 || k0 == k_begin) {
            stash(s);
            barrier();
        }
        const bool more = k0 + BK < k_end;
        if (more) fetch(k0 + BK, m0, n0, a_base, b_base); // in flight during the products below
        multiply(wm, wn, s);
        if (STAGES == 2 && more) {
            s ^= 1;
            stash(s); // the other slice: its readers finished before the last barrier
        }
        barrier();
    }

    const uint d_base = p.off_d + (split ? gl_WorkGroupID.z * p.nb3 : b2 * p.nb2 + b3 * p.nb3), lane = gl_SubgroupInvocationID;
#ifdef FLEX
    coopMatStoreNV(acc, data_d, d_base + (n0 + wn) * p.nb1 + m0 + wm, p.nb1, true);
#else
    // partial tiles at the edges through shared memory (free after the last barrier), to be clipped
    const bool full = m0 + BM <= p.M && n0 + BN <= p.N;
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
            const uint tm = m0 + wm + i * FRM, tn = n0 + wn + j * FRN;
            if (full && p.nb1 % 4 == 0 && d_base % 4 == 0) { // 16-byte aligned; column-major: (m, n) at n * nb1 + m
                coopMatStoreNV(acc[i][j], data_d, d_base + tn * p.nb1 + tm, p.nb1, true);
                continue;
            }
            const uint stage = warp * (FRM * FRN / 4); // this subgroup's fragment of f32 in sa
            coopMatStoreNV(acc[i][j], sa, stage, FRM / 4, true); // FRM floats = FRM / 4 chunks per column
            subgroupBarrier();
            for (uint e = lane; e < FRM * FRN; e += gl_SubgroupSize) {
                const uint gm = tm + e % FRM, gn = tn + e / FRM;
                if (gm < p.M && gn < p.N) data_d[d_base + gn * p.nb1 + gm] = uintBitsToFloat(sa[stage + e / 4][e % 4]);
            }
            subgroupBarrier();
        }
    }
#endif
}
