#version 450
// conv_2d as an implicit GEMM in f32, for devices without cooperative matrices and for
// GGMLC_VK_CONV_CM=0: the product of conv2d-cm.comp (D[oc, j] = sum over k of A[oc, k] B[k, j],
// A the kernel as OC rows of K = IC*KH*KW values, B the im2col matrix of the data, gathered
// from the image slice by slice and never written out), with f32 slices in shared memory and
// f32 products.  A workgroup of 256 invocations computes a 64 x 64 tile (output channels x
// positions j = (ow, oh, n), ow fastest), each invocation 4 x 4 of it: channels tm + 16 r and
// positions tn + 16 q, so that neighbouring invocations store neighbouring positions.  Push
// constants and bindings are conv2d.comp's (struct vk_pc_conv2d, not depthwise); TRANSPOSED:
// conv_transpose_2d (conv-transpose-2d.comp's; conv-gemm.glsl).  A grid of several layers (z)
// splits k: each writes its partial tile (conv-gemm.glsl).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "conv-gemm.glsl"

const uint BM = 64, BN = 64, BK = 16, LDA = BM + 1; // LDA: the kernel slice's padded row (k)

shared float sa[BK * LDA]; // kernel slice, k-major
shared float sb[BK * BN];  // data slice, k-major

// The kernel slice at k0: invocations along k (the kernel's rows are contiguous in k).
void stage_kernel(uint k0, uint m0, uint K) {
    [[unroll]] for (uint i = 0; i < BM * BK / 256; i++) {
        const uint e = gl_LocalInvocationID.x + i * 256, m = e / BK, kk = e % BK, oc = m0 + m, k = k0 + kk;
        const float v = oc < p.OC && k < K ? TO_F32(A_TYPE, data_k[kernel_at(oc, k)]) : 0.0;
        sa[kk * LDA + m] = v;
    }
}

// The data slice at k0 for this invocation's position pos (j < P), its rows e / BN of each
// 256 (zeros in the padding, past K and P).
void stage_data(uint k0, uint K, bool inside, uvec3 pos) {
    [[unroll]] for (uint i = 0; i < BN * BK / 256; i++) {
        const uint e = gl_LocalInvocationID.x + i * 256, kk = e / BN, k = k0 + kk;
        sb[kk * BN + e % BN] = inside && k < K ? data_value(tap_of(k), pos) : 0.0;
    }
}

void main() {
    const uint K = p.IC * p.KH * p.KW, P = p.OW * p.OH * p.N;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint tn = gl_LocalInvocationID.x % 16, tm = gl_LocalInvocationID.x / 16;
    const uint jd = n0 + gl_LocalInvocationID.x % BN; // the position this invocation stages (256 % BN == 0)
    const uvec3 pos = position_of(min(jd, P - 1));
    float acc[4][4];
    [[unroll]] for (uint r = 0; r < 4; r++)
        [[unroll]] for (uint q = 0; q < 4; q++) acc[r][q] = 0.0;
    const uvec2 ks = layer_k_range(K, BK);
    for (uint k0 = ks.x; k0 < ks.y; k0 += BK) {
        stage_kernel(k0, m0, ks.y);
        stage_data(k0, ks.y, jd < P, pos);
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            float a[4], b[4];
            [[unroll]] for (uint r = 0; r < 4; r++) a[r] = sa[kk * LDA + tm + 16 * r];
            [[unroll]] for (uint q = 0; q < 4; q++) b[q] = sb[kk * BN + tn + 16 * q];
            [[unroll]] for (uint r = 0; r < 4; r++)
                [[unroll]] for (uint q = 0; q < 4; q++) acc[r][q] = fma(a[r], b[q], acc[r][q]);
        }
        barrier();
    }
    [[unroll]] for (uint q = 0; q < 4; q++) {
        const uint j = n0 + tn + 16 * q;
        if (j >= P) continue;
        const uvec3 o = position_of(j);
        [[unroll]] for (uint r = 0; r < 4; r++) {
            const uint oc = m0 + tm + 16 * r;
            if (oc < p.OC) data_d[p.off_d + layer_offset() + o.x * p.nd0 + o.y * p.nd1 + oc * p.nd2 + o.z * p.nd3] = acc[r][q];
        }
    }
}
