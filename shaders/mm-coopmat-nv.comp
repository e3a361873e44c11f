#version 450
// f16 matrix product on tensor cores through GL_NV_cooperative_matrix:
// 16x16x16 f16 fragments with f32 accumulators.  A workgroup of 8 subgroups
// (32 lanes) computes a 128x128 tile of d; each subgroup a 64x32 part.  a is
// f16 (read 8 halves at a time), b f32 (B_F32) or f16, rounded to f16 in
// shared memory; K must be a multiple of 8.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#include "mm-push.glsl"

layout(local_size_x = 256) in;
const uint BM = 128, BN = 128, BK = 32, WM = 64, WN = 32, LDS = BK + 8;
const uint FM = WM / 16, FN = WN / 16;

layout(binding = 0) readonly buffer A { uvec4 data_a[]; };
#ifdef B_F32
layout(binding = 1) readonly buffer B { vec4 data_b[]; };
#else
layout(binding = 1) readonly buffer B { uvec4 data_b[]; };
#endif
layout(binding = 2) writeonly buffer D { float data_d[]; };

shared float16_t sa[BM * LDS];
shared float16_t sb[BN * LDS];
shared float sc[8 * 256];


void main() {
    const uint tid = gl_LocalInvocationID.x, warp = gl_SubgroupID;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;   // in uvec4 units
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;                     // in vec4/uvec4 units
    const uint wm = (warp % (BM / WM)) * WM, wn = (warp / (BM / WM)) * WN;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
    [[unroll]] for (uint i = 0; i < FM; i++)
        [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        // a: BM rows of BK halves = 4 uvec4 per row
        [[unroll]] for (uint r = 0; r < BM * BK / 8 / 256; r++) {
            const uint idx = tid + r * 256, row = idx / (BK / 8), c = idx % (BK / 8);
            const uint gm = m0 + row, gk = k0 + c * 8;
            uvec4 q = uvec4(0);
            if (gm < p.M && gk < p.K) q = data_a[a_base + gm * p.nb01 + gk / 8];
            const uint at = row * LDS + c * 8;
            [[unroll]] for (uint e = 0; e < 4; e++) {
                const vec2 h = unpackHalf2x16(q[e]);
                sa[at + 2 * e] = float16_t(h.x);
                sa[at + 2 * e + 1] = float16_t(h.y);
            }
        }
#ifdef B_F32
        // b: BN rows of BK floats = 8 vec4 per row
        [[unroll]] for (uint r = 0; r < BN * BK / 4 / 256; r++) {
            const uint idx = tid + r * 256, row = idx / (BK / 4), c = idx % (BK / 4);
            const uint gn = n0 + row, gk = k0 + c * 4;
            vec4 v = vec4(0.0);
            if (gn < p.N && gk < p.K) v = data_b[b_base + gn * p.nb11 + gk / 4];
            const uint at = row * LDS + c * 4;
            [[unroll]] for (uint e = 0; e < 4; e++) sb[at + e] = float16_t(v[e]);
        }
#else
        [[unroll]] for (uint r = 0; r < BN * BK / 8 / 256; r++) {
            const uint idx = tid + r * 256, row = idx / (BK / 8), c = idx % (BK / 8);
            const uint gn = n0 + row, gk = k0 + c * 8;
            uvec4 q = uvec4(0);
            if (gn < p.N && gk < p.K) q = data_b[b_base + gn * p.nb11 + gk / 8];
            const uint at = row * LDS + c * 8;
            [[unroll]] for (uint e = 0; e < 4; e++) {
                const vec2 h = unpackHalf2x16(q[e]);
                sb[at + 2 * e] = float16_t(h.x);
                sb[at + 2 * e + 1] = float16_t(h.y);
            }
        }
#endif
        barrier();
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
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
            coopMatStoreNV(acc[i][j], sc, warp * 256, 16, true); // column-major: (m, n) at n * 16 + m
            subgroupBarrier();
            for (uint e = lane; e < 256; e += 32) {
                const uint gm = m0 + wm + i * 16 + e % 16, gn = n0 + wn + j * 16 + e / 16;
                if (gm < p.M && gn < p.N) data_d[d_base + gn * p.nb1 + gm] = sc[warp * 256 + e];
            }
            subgroupBarrier();
        }
    }
}
