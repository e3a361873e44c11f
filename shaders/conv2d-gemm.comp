#version 450
// conv_2d as an implicit GEMM in f32, for devices without cooperative matrices and for
// GGMLC_VK_CONV_CM=0: the product of conv2d-cm.comp (D[oc, j] = sum over k of A[oc, k] B[k, j],
// A the kernel as OC rows of K = IC*KH*KW values, B the im2col matrix of the data, gathered
// from the image slice by slice and never written out), with f32 slices in shared memory and
// f32 products.  A workgroup of 256 invocations computes a 64 x 64 tile (output channels x
// positions j = (ow, oh, n), ow fastest), each invocation 4 x 4 of it: channels tm + 16 r and
// positions tn + 16 q, so that neighbouring invocations store neighbouring positions.  Push
// constants and bindings are conv2d.comp's (struct vk_pc_conv2d, not depthwise).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_conv2d);

const uint BM = 64, BN = 64, BK = 16, LDA = BM + 1; // LDA: the kernel slice's padded row (k)

shared float sa[BK * LDA]; // kernel slice, k-major
shared float sb[BK * BN];  // data slice, k-major

// The kernel slice at k0: invocations along k (the kernel's rows are contiguous in k).
void stage_kernel(uint k0, uint m0, uint K) {
    const bool dense = p.nk0 == 1 && p.nk1 == p.KW && p.nk2 == p.KW * p.KH;
    [[unroll]] for (uint i = 0; i < BM * BK / 256; i++) {
        const uint e = gl_LocalInvocationID.x + i * 256, m = e / BK, kk = e % BK, oc = m0 + m, k = k0 + kk;
        float v = 0.0;
        if (oc < p.OC && k < K) {
            const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, ic = k / (p.KW * p.KH);
            const uint at = dense ? oc * p.nk3 + k : oc * p.nk3 + ic * p.nk2 + kh * p.nk1 + kw * p.nk0;
            v = TO_F32(A_TYPE, data_k[p.off_k + at]);
        }
        sa[kk * LDA + m] = v;
    }
}

// The data slice at k0: invocations along the positions (zeros in the padding, past K and P).
void stage_data(uint k0, uint n0, uint K, uint P) {
    [[unroll]] for (uint i = 0; i < BN * BK / 256; i++) {
        const uint e = gl_LocalInvocationID.x + i * 256, jj = e % BN, kk = e / BN, j = n0 + jj, k = k0 + kk;
        float v = 0.0;
        if (k < K && j < P) {
            const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, ic = k / (p.KW * p.KH);
            const uint ow = j % p.OW, oh = (j / p.OW) % p.OH, n = j / (p.OW * p.OH);
            const int x = int(ow) * p.s0 - p.p0 + int(kw) * p.d0, y = int(oh) * p.s1 - p.p1 + int(kh) * p.d1;
            if (x >= 0 && x < int(p.IW) && y >= 0 && y < int(p.IH))
                v = data_x[p.off_x + uint(x) * p.nx0 + uint(y) * p.nx1 + ic * p.nx2 + n * p.nx3];
        }
        sb[kk * BN + jj] = v;
    }
}

void main() {
    const uint K = p.IC * p.KH * p.KW, P = p.OW * p.OH * p.N;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint tn = gl_LocalInvocationID.x % 16, tm = gl_LocalInvocationID.x / 16;
    float acc[4][4];
    [[unroll]] for (uint r = 0; r < 4; r++)
        [[unroll]] for (uint q = 0; q < 4; q++) acc[r][q] = 0.0;
    for (uint k0 = 0; k0 < K; k0 += BK) {
        stage_kernel(k0, m0, K);
        stage_data(k0, n0, K, P);
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
        const uint ow = j % p.OW, oh = (j / p.OW) % p.OH, n = j / (p.OW * p.OH);
        [[unroll]] for (uint r = 0; r < 4; r++) {
            const uint oc = m0 + tm + 16 * r;
            if (oc < p.OC) data_d[p.off_d + ow * p.nd0 + oh * p.nd1 + oc * p.nd2 + n * p.nd3] = acc[r][q];
        }
    }
}
