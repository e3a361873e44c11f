#version 450
// f16 matrix product on tensor cores through GL_NV_cooperative_matrix:
// 16x16x16 f16 fragments with f32 accumulators.  A workgroup of WG/32
// subgroups computes a BM x BN tile of d, each subgroup a WM x WN part; the
// next BK-slice of a and b is fetched into registers while the current one
// is multiplied from shared memory.  a is f16 (read 8 halves at a time), b
// f32 (B_F32) or f16, rounded to f16 in shared memory; K must be a multiple
// of 8.  Tile sizes are specialization constants.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 64;
layout(constant_id = 4) const uint WM = 64;
layout(constant_id = 5) const uint WN = 32;
layout(local_size_x_id = 0) in;
const uint LDS = BK + 8, FM = WM / 16, FN = WN / 16;
const uint A_LOADS = BM * BK / 8 / WG;   // uvec4 (8 halves) per thread and tile
#ifdef B_F32
const uint B_LOADS = BN * BK / 4 / WG;   // vec4 per thread and tile
#define B_VEC vec4
#define B_PER 4
#else
const uint B_LOADS = BN * BK / 8 / WG;
#define B_VEC uvec4
#define B_PER 8
#endif

layout(binding = 0) readonly buffer A { uvec4 data_a[]; };
layout(binding = 1) readonly buffer B { B_VEC data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

shared float16_t sa[BM * LDS];
shared float16_t sb[BN * LDS];
shared float sc[WG / 32 * 256];

uvec4 ra[A_LOADS];
B_VEC rb[B_LOADS];

// global -> registers for the tile at k0 (zeros outside the matrices)
void fetch(uint k0, uint m0, uint n0, uint a_base, uint b_base) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < A_LOADS; r++) {
        const uint idx = tid + r * WG, row = idx / (BK / 8), gm = m0 + row, gk = k0 + (idx % (BK / 8)) * 8;
        ra[r] = (gm < p.M && gk < p.K) ? data_a[a_base + gm * p.nb01 + gk / 8] : uvec4(0);
    }
    [[unroll]] for (uint r = 0; r < B_LOADS; r++) {
        const uint idx = tid + r * WG, row = idx / (BK / B_PER), gn = n0 + row, gk = k0 + (idx % (BK / B_PER)) * B_PER;
        rb[r] = (gn < p.N && gk < p.K) ? data_b[b_base + gn * p.nb11 + gk / B_PER] : B_VEC(0);
    }
}

// registers -> shared memory as f16
void stash() {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < A_LOADS; r++) {
        const uint idx = tid + r * WG, at = (idx / (BK / 8)) * LDS + (idx % (BK / 8)) * 8;
        [[unroll]] for (uint e = 0; e < 4; e++) {
            const vec2 h = unpackHalf2x16(ra[r][e]);
            sa[at + 2 * e] = float16_t(h.x);
            sa[at + 2 * e + 1] = float16_t(h.y);
        }
    }
    [[unroll]] for (uint r = 0; r < B_LOADS; r++) {
        const uint idx = tid + r * WG, at = (idx / (BK / B_PER)) * LDS + (idx % (BK / B_PER)) * B_PER;
#ifdef B_F32
        [[unroll]] for (uint e = 0; e < 4; e++) sb[at + e] = float16_t(rb[r][e]);
#else
        [[unroll]] for (uint e = 0; e < 4; e++) {
            const vec2 h = unpackHalf2x16(rb[r][e]);
            sb[at + 2 * e] = float16_t(h.x);
            sb[at + 2 * e + 1] = float16_t(h.y);
        }
#endif
    }
}

void main() {
    const uint warp = gl_SubgroupID;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;   // in uvec4 units
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;                     // in 16-byte units
    const uint wm = (warp % (BM / WM)) * WM, wn = (warp / (BM / WM)) * WN;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
    [[unroll]] for (uint i = 0; i < FM; i++)
        [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

    fetch(0, m0, n0, a_base, b_base);
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        stash();
        barrier();
        if (k0 + BK < p.K) fetch(k0 + BK, m0, n0, a_base, b_base); // in flight during the products below
        [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM], fb[FN];
            [[unroll]] for (uint i = 0; i < FM; i++) coopMatLoadNV(fa[i], sa, (wm + i * 16) * LDS + kk, LDS, false);
            [[unroll]] for (uint j = 0; j < FN; j++) coopMatLoadNV(fb[j], sb, (wn + j * 16) * LDS + kk, LDS, true);
            [[unroll]] for (uint i = 0; i < FM; i++)
                [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
        barrier();
    }

    // through shared memory, so that partial tiles at the edges are clipped
    const uint d_base = p.off_d + b2 * p.nb2 + b3 * p.nb3, lane = gl_SubgroupInvocationID;
    const bool full = m0 + BM <= p.M && n0 + BN <= p.N;
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
            const uint tm = m0 + wm + i * 16, tn = n0 + wn + j * 16;
            if (full && p.nb1 % 4 == 0 && d_base % 4 == 0) { // 16-byte aligned; column-major: (m, n) at n * nb1 + m
                coopMatStoreNV(acc[i][j], data_d, d_base + tn * p.nb1 + tm, p.nb1, true);
                continue;
            }
            coopMatStoreNV(acc[i][j], sc, warp * 256, 16, true);
            subgroupBarrier();
            for (uint e = lane; e < 256; e += 32) {
                const uint gm = tm + e % 16, gn = tn + e / 16;
                if (gm < p.M && gn < p.N) data_d[d_base + gn * p.nb1 + gm] = sc[warp * 256 + e];
            }
            subgroupBarrier();
        }
    }
}
