// conv-gemm.glsl - what the implicit-GEMM convolutions (conv2d-cm.comp, conv2d-gemm.comp) read:
// the push constants, the kernel's value (oc, k) of the product D[oc, j] = sum over k of
// A[oc, k] B[k, j] (k = (ic * KH + kh) * KW + kw), and the data position a kernel tap reads for an
// output position (outside the data where no tap reads it: the caller checks the range).
// conv_2d: kernel [KW, KH, IC, OC], x = ow * s0 - p0 + kw * d0 (struct vk_pc_conv2d).
// TRANSPOSED, conv_transpose_2d: kernel [KW, KH, OC, IC], output ox = ix * s + kw, so
// ix = (ox - kw) / s where that divides (struct vk_pc_conv_transpose_2d, no padding).
// The callers decode taps and positions once per group of values (integer division is slow).
// Split-k: a grid of gl_NumWorkGroups.z layers divides the k of every tile (layer_k_range); each
// layer writes its partial tile at layer_offset() of the result binding, which the host then
// points at scratch memory, contiguous, for mm-split-sum.comp to add the layers in order.
#include "push-constants.h"
#ifdef TRANSPOSED
VK_PUSH_BLOCK(vk_pc_conv_transpose_2d);
#else
VK_PUSH_BLOCK(vk_pc_conv2d);
#endif

// Tap k as (kw, kh, ic).
uvec3 tap_of(uint k) { return uvec3(k % p.KW, (k / p.KW) % p.KH, k / (p.KW * p.KH)); }

// Output position j as (ow, oh, n).
uvec3 position_of(uint j) { return uvec3(j % p.OW, (j / p.OW) % p.OH, j / (p.OW * p.OH)); }

#ifdef TRANSPOSED
uint kernel_at(uint oc, uint k) {
    const uvec3 t = tap_of(k);
    return p.off_k + t.x * p.nk0 + t.y * p.nk1 + oc * p.nk2 + t.z * p.nk3;
}

int tap_source(uint o, uint k, uint axis) {
    const int t = int(o) - int(k);
    if (p.s == 1) return t; // no division: the usual gradient of a stride-1 convolution
    return t >= 0 && t % int(p.s) == 0 ? t / int(p.s) : -1;
}
#else
// (a kernel contiguous in its first three dimensions, the usual case, needs no division)
uint kernel_at(uint oc, uint k) {
    if (p.nk0 == 1 && p.nk1 == p.KW && p.nk2 == p.KW * p.KH) return p.off_k + oc * p.nk3 + k;
    const uvec3 t = tap_of(k);
    return p.off_k + oc * p.nk3 + t.z * p.nk2 + t.y * p.nk1 + t.x * p.nk0;
}

int tap_source(uint o, uint k, uint axis) {
    return axis == 0 ? int(o) * p.s0 - p.p0 + int(k) * p.d0 : int(o) * p.s1 - p.p1 + int(k) * p.d1;
}
#endif

// The data value that tap (kw, kh, ic) reads for output position (ow, oh, n); zero outside the data.
float data_value(uvec3 tap, uvec3 pos) {
    const int x = tap_source(pos.x, tap.x, 0), y = tap_source(pos.y, tap.y, 1);
    if (x < 0 || x >= int(p.IW) || y < 0 || y >= int(p.IH)) return 0.0;
    return data_x[p.off_x + uint(x) * p.nx0 + uint(y) * p.nx1 + tap.z * p.nx2 + pos.z * p.nx3];
}

// This workgroup's share [x, y) of k in [0, K): whole slices of bk, layer by layer (all of k
// for a grid of one layer; a layer past the end gets none and writes zeros).
uvec2 layer_k_range(uint K, uint bk) {
    const uint slices = (K + bk - 1) / bk, per = (slices + gl_NumWorkGroups.z - 1) / gl_NumWorkGroups.z;
    const uint first = min(K, gl_WorkGroupID.z * per * bk);
    return uvec2(first, min(K, first + per * bk));
}

// Where this workgroup's layer of partial results starts in the result binding (0 unsplit).
uint layer_offset() { return gl_WorkGroupID.z * (p.OW * p.OH * p.OC * p.N); }
