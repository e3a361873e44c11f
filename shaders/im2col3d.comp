#version 450
// im2col_3d: d[c, ow, oh, n*OD + od] with c = ((ic*KD + kd)*KH + kh)*KW + kw is
// x[iw, ih, id, n*IC + ic] at i = o*s - p + k*dil per axis, 0 outside x.
// Data and result f32 or f16 (A_TYPE, D_TYPE), unit stride along dimension 0;
// strides, paddings and dilations packed two to a word (16 bits each).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer X { STORAGE_T(A_TYPE) data_x[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_im2col3d);

int param(uint i) { return int((p.spd[i / 2] >> (16 * (i % 2))) & 0xffffu); }

void main() {
    const uint idx = linear_id(256);
    const uint K = p.KW * p.KH * p.KD * p.IC;
    if (idx >= K * p.OW * p.OH * p.OD * p.N) return;
    const uint c = idx % K, r = idx / K;
    const uint ow = r % p.OW, oh = (r / p.OW) % p.OH, q = r / (p.OW * p.OH); // q = n*OD + od
    const uint od = q % p.OD, n = q / p.OD;
    const uint kw = c % p.KW, kh = (c / p.KW) % p.KH, kd = (c / (p.KW * p.KH)) % p.KD, ic = c / (p.KW * p.KH * p.KD);
    const int iw = int(ow) * param(0) - param(3) + int(kw) * param(6);
    const int ih = int(oh) * param(1) - param(4) + int(kh) * param(7);
    const int id = int(od) * param(2) - param(5) + int(kd) * param(8);
    float v = 0.0;
    if (iw >= 0 && iw < int(p.W) && ih >= 0 && ih < int(p.H) && id >= 0 && id < int(p.D))
        v = TO_F32(A_TYPE, data_x[p.off_x + uint(iw) + uint(ih) * p.nx1 + uint(id) * p.nx2 + (n * p.IC + ic) * p.nx3]);
    data_d[p.off_d + c + ow * p.nd1 + oh * p.nd2 + q * p.nd3] = FROM_F32(D_TYPE, v);
}
