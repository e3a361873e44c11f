#version 450
// conv_3d (direct): d[ow, oh, od, n*OC + oc] = sum over ic, kd, kh, kw of
// k[kw, kh, kd, oc*IC + ic] * x[iw, ih, id, n*IC + ic], i = o*s - p + k*dil per axis
// (positions outside x count as zero).  Kernel f32 or f16 (A_TYPE), data and
// result f32, all with unit stride along dimension 0.  Strides, paddings and
// dilations come packed two to a word (16 bits each).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_conv3d);

int param(uint i) { return int((p.spd[i / 2] >> (16 * (i % 2))) & 0xffffu); }

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.OW * p.OH * p.OD * p.NQ) return;
    const uint ow = idx % p.OW, oh = (idx / p.OW) % p.OH, od = (idx / (p.OW * p.OH)) % p.OD, q = idx / (p.OW * p.OH * p.OD);
    const uint oc = q % p.OC, n = q / p.OC;
    const int s0 = param(0), s1 = param(1), s2 = param(2), p0 = param(3), p1 = param(4), p2 = param(5);
    const int d0 = param(6), d1 = param(7), d2 = param(8);
    float sum = 0.0;
    for (uint kd = 0; kd < p.KD; kd++) {
        const int id = int(od) * s2 - p2 + int(kd) * d2;
        if (id < 0 || id >= int(p.D)) continue;
        for (uint kh = 0; kh < p.KH; kh++) {
            const int ih = int(oh) * s1 - p1 + int(kh) * d1;
            if (ih < 0 || ih >= int(p.H)) continue;
            for (uint kw = 0; kw < p.KW; kw++) {
                const int iw = int(ow) * s0 - p0 + int(kw) * d0;
                if (iw < 0 || iw >= int(p.W)) continue;
                for (uint ic = 0; ic < p.IC; ic++)
                    sum += TO_F32(A_TYPE, data_k[p.off_k + kw + kh * p.nk1 + kd * p.nk2 + (oc * p.IC + ic) * p.nk3]) *
                           data_x[p.off_x + uint(iw) + uint(ih) * p.nx1 + uint(id) * p.nx2 + (n * p.IC + ic) * p.nx3];
            }
        }
    }
    data_d[p.off_d + ow + oh * p.nd1 + od * p.nd2 + q * p.nd3] = sum;
}
