// conv-gemm.glsl - what the implicit-GEMM convolutions (conv2d-cm.comp, conv2d-gemm.comp) read:
// the push constants, the kernel's value (oc, k) of the product D[oc, j] = sum over k of
// A[oc, k] B[k, j] (k = (ic * KH + kh) * KW + kw), and the data position a kernel tap reads for an
// output position (outside the data where no tap reads it: the caller checks the range).
// conv_2d: kernel [KW, KH, IC, OC], x = ow * s0 - p0 + kw * d0 (struct vk_pc_conv2d).
// TRANSPOSED, conv_transpose_2d: kernel [KW, KH, OC, IC], output ox = ix * s + kw, so
// ix = (ox - kw) / s where that divides (struct vk_pc_conv_transpose_2d, no padding).
#include "push-constants.h"
#ifdef TRANSPOSED
VK_PUSH_BLOCK(vk_pc_conv_transpose_2d);

uint kernel_at(uint oc, uint k) {
    const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, ic = k / (p.KW * p.KH);
    return p.off_k + kw * p.nk0 + kh * p.nk1 + oc * p.nk2 + ic * p.nk3;
}

int tap_source(uint o, uint k, uint axis) {
    const int t = int(o) - int(k);
    return t >= 0 && t % int(p.s) == 0 ? t / int(p.s) : -1;
}
#else
VK_PUSH_BLOCK(vk_pc_conv2d);

// (a kernel contiguous in its first three dimensions, the usual case, needs no division)
uint kernel_at(uint oc, uint k) {
    if (p.nk0 == 1 && p.nk1 == p.KW && p.nk2 == p.KW * p.KH) return p.off_k + oc * p.nk3 + k;
    const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, ic = k / (p.KW * p.KH);
    return p.off_k + oc * p.nk3 + ic * p.nk2 + kh * p.nk1 + kw * p.nk0;
}

int tap_source(uint o, uint k, uint axis) {
    return axis == 0 ? int(o) * p.s0 - p.p0 + int(k) * p.d0 : int(o) * p.s1 - p.p1 + int(k) * p.d1;
}
#endif

// The data value of tap k for output position (ow, oh, n); zero where it reads outside.
float data_value(uint k, uint ow, uint oh, uint n) {
    const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, ic = k / (p.KW * p.KH);
    const int x = tap_source(ow, kw, 0), y = tap_source(oh, kh, 1);
    if (x < 0 || x >= int(p.IW) || y < 0 || y >= int(p.IH)) return 0.0;
    return data_x[p.off_x + uint(x) * p.nx0 + uint(y) * p.nx1 + ic * p.nx2 + n * p.nx3];
}
