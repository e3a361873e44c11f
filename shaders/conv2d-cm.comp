#version 450
// conv_2d as an implicit GEMM on cooperative matrices (f16 fragments, f32 accumulators):
// D[oc, j] = sum over k of A[oc, k] B[k, j], where A is the kernel [KW, KH, IC, OC] read as
// OC rows of K = IC*KH*KW values (k = (ic * KH + kh) * KW + kw, im2col's order), and B the
// im2col matrix of the data, never written out: each k slice of its BN output positions
// j = (ow, oh, n) (ow fastest) is gathered from the image into shared memory as f16 (zeros in the
// padding), beside the matching slice of A.  A workgroup of WG / SG subgroups computes a BM x BN
// tile of D (output channels x positions), each subgroup a WM x WN part of whole fragments; the
// tile goes through shared memory to the result [OW, OH, OC, N] (any strides), positions fastest.
// A grid of several layers (z) splits k: each writes its partial tile (conv-gemm.glsl).
// Push constants and bindings are conv2d.comp's (struct vk_pc_conv2d, not depthwise); TRANSPOSED:
// conv_transpose_2d (conv-transpose-2d.comp's, the kernel [KW, KH, OC, IC]; conv-gemm.glsl).  Rounding:
// the kernel and data are rounded to f16 (the products and sums are f32), so results differ from
// the f32 direct kernel by about 2^-11 of the sum of |k x| (docs/vulkan.md).
// Written in GL_NV_cooperative_matrix syntax and rewritten into KHR instructions at build time
// (plugins/vulkan/spv-coopmat-khr.py), fragments of the device's shape FRM x FRN x FRK (16x16x16
// on an H200, 8x8x8 on lavapipe).  The host (conv_2d_cm_spec in ops-conv.c) checks the
// constants: (BM / WM) (BN / WN) subgroups of SG lanes, WM a multiple of FRM, WN of FRN and 8,
// BK of FRK and 8, and the shared memory.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "types.glsl"

layout(constant_id = 0) const uint WG = 128;  // (BM / WM) (BN / WN) subgroups
layout(constant_id = 1) const uint SG = 32;   // the device's subgroup size
layout(constant_id = 2) const uint FRM = 16;  // fragment rows
layout(constant_id = 3) const uint FRN = 16;  // fragment columns
layout(constant_id = 4) const uint FRK = 16;  // fragment depth
layout(constant_id = 5) const uint KB = 16;   // B fragments' rows: FRK (its own constant: see mm-coopmat-nv.comp)
layout(constant_id = 6) const uint BM = 64;   // output channels per tile
layout(constant_id = 7) const uint BN = 64;   // output positions per tile
layout(constant_id = 8) const uint BK = 32;   // k per slice
layout(constant_id = 9) const uint WM = 32;   // a subgroup's part
layout(constant_id = 10) const uint WN = 32;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "conv-gemm.glsl"

const uint CA = BK / 8, CB = BN / 8;    // 8-half chunks per row of the A and B slices
const uint LDA = CA + 1, LDB = CB + 1;  // their row strides (chunks), one of padding against bank conflicts
const uint FM = WM / FRM, FN = WN / FRN;

shared uvec4 sa[BM * LDA];  // A slice: BM rows (output channels) of BK values
shared uvec4 sb[BK * LDB];  // B slice: BK rows (k) of BN values (positions)
shared float sd[BM * BN];   // the finished tile, row-major

fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN> acc[FM][FN];

uvec4 pack8(const float v[8]) {
    return uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])),
                 packHalf2x16(vec2(v[6], v[7])));
}

// The A slice at k0: rows m0.., each thread a chunk of 8 k at a time (zeros past OC or K).
void stage_kernel(uint k0, uint m0, uint K) {
    for (uint c = gl_LocalInvocationID.x; c < BM * CA; c += WG) {
        const uint m = c / CA, kc = c % CA, oc = m0 + m, kb = k0 + kc * 8;
        float v[8];
        [[unroll]] for (uint t = 0; t < 8; t++)
            v[t] = oc < p.OC && kb + t < K ? TO_F32(A_TYPE, data_k[kernel_at(oc, kb + t)]) : 0.0;
        sa[m * LDA + kc] = pack8(v);
    }
}

// The B slice at k0: positions n0.., each thread 8 consecutive positions of one k, gathered
// from the image (zeros in the padding, past K and past the last position P).
void stage_data(uint k0, uint n0, uint K, uint P) {
    for (uint c = gl_LocalInvocationID.x; c < BK * CB; c += WG) {
        const uint r = c / CB, jc = c % CB, k = k0 + r;
        float v[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        const uint j = n0 + jc * 8;
        if (k < K && j < P) {
            const uvec3 tap = tap_of(k);
            uvec3 pos = position_of(j);
            [[unroll]] for (uint t = 0; t < 8; t++) {
                if (j + t < P) v[t] = data_value(tap, pos);
                if (++pos.x == p.OW) { // the next position
                    pos.x = 0;
                    if (++pos.y == p.OH) { pos.y = 0; pos.z++; }
                }
            }
        }
        sb[r * LDB + jc] = pack8(v);
    }
}

// The products of the staged slices into acc.
void multiply(uint wm, uint wn) {
    [[unroll]] for (uint kk = 0; kk < BK; kk += FRK) {
        fcoopmatNV<16, gl_ScopeSubgroup, FRM, FRK> fa[FM];
        fcoopmatNV<16, gl_ScopeSubgroup, KB, FRN> fb[FN];
        [[unroll]] for (uint i = 0; i < FM; i++) coopMatLoadNV(fa[i], sa, (wm + i * FRM) * LDA + kk / 8, LDA, false);
        [[unroll]] for (uint j = 0; j < FN; j++) coopMatLoadNV(fb[j], sb, kk * LDB + (wn + j * FRN) / 8, LDB, false);
        [[unroll]] for (uint i = 0; i < FM; i++)
            [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
}

// The tile from sd into d, consecutive lanes on consecutive positions.
void write_tile(uint m0, uint n0, uint P) {
    for (uint e = gl_LocalInvocationID.x; e < BM * BN; e += WG) {
        const uint oc = m0 + e / BN, j = n0 + e % BN;
        if (oc >= p.OC || j >= P) continue;
        const uvec3 o = position_of(j);
        data_d[p.off_d + layer_offset() + o.x * p.nd0 + o.y * p.nd1 + oc * p.nd2 + o.z * p.nd3] = sd[e];
    }
}

void main() {
    const uint K = p.IC * p.KH * p.KW, P = p.OW * p.OH * p.N;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint warp = gl_SubgroupID, wm = (warp % (BM / WM)) * WM, wn = (warp / (BM / WM)) * WN;
    [[unroll]] for (uint i = 0; i < FM; i++)
        [[unroll]] for (uint j = 0; j < FN; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN>(0.0);
    const uvec2 ks = layer_k_range(K, BK);
    for (uint k0 = ks.x; k0 < ks.y; k0 += BK) {
        stage_kernel(k0, m0, ks.y);
        stage_data(k0, n0, ks.y, P);
        barrier();
        multiply(wm, wn);
        barrier();
    }
    [[unroll]] for (uint i = 0; i < FM; i++)
        [[unroll]] for (uint j = 0; j < FN; j++) coopMatStoreNV(acc[i][j], sd, (wm + i * FRM) * BN + wn + j * FRN, BN, false);
    barrier();
    write_tile(m0, n0, P);
}
