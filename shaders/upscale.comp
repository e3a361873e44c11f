#version 450
// upscale / interpolate: dimensions 0 and 1 resampled nearest, bilinear or
// bicubic (Keys, a = -0.75), PyTorch's source coordinates (align-corners
// optional); dimensions 2 and 3 nearest.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_upscale);

uint nearest(uint i, uint n_in, uint n_out) { return min(uint(floor(float(i) * float(n_in) / float(n_out))), n_in - 1); }

int clampi(int i, uint n) { return clamp(i, 0, int(n) - 1); }

// taps of output position i along a dimension: indices and weights, returns the count
int taps(uint i, uint n_in, uint n_out, out int idx[4], out float w[4]) {
    if (p.mode == 0) { idx[0] = int(nearest(i, n_in, n_out)); w[0] = 1.0; return 1; }
    float x;
    if (p.align != 0) x = n_out > 1 ? float(i) * float(n_in - 1) / float(n_out - 1) : 0.0;
    else {
        x = (float(i) + 0.5) * float(n_in) / float(n_out) - 0.5;
        if (p.mode == 1 && x < 0.0) x = 0.0;
    }
    const float x0 = floor(x), t = x - x0;
    if (p.mode == 1) {
        idx[0] = clampi(int(x0), n_in); idx[1] = clampi(int(x0) + 1, n_in);
        w[0] = 1.0 - t; w[1] = t;
        return 2;
    }
    const float A = -0.75, n0 = t, n1 = 1.0 - t, f0 = t + 1.0, f1 = 2.0 - t;
    w[1] = ((A + 2.0) * n0 - (A + 3.0)) * n0 * n0 + 1.0;
    w[2] = ((A + 2.0) * n1 - (A + 3.0)) * n1 * n1 + 1.0;
    w[0] = ((A * f0 - 5.0 * A) * f0 + 8.0 * A) * f0 - 4.0 * A;
    w[3] = ((A * f1 - 5.0 * A) * f1 + 8.0 * A) * f1 - 4.0 * A;
    for (int k = 0; k < 4; k++) idx[k] = clampi(int(x0) - 1 + k, n_in);
    return 4;
}

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint base = p.off_a + nearest(i2, p.ne02, p.ne2) * p.nb02 + nearest(i3, p.ne03, p.ne3) * p.nb03;
    int ix[4], iy[4];
    float wx[4], wy[4];
    const int nx = taps(i0, p.ne00, p.ne0, ix, wx), ny = taps(i1, p.ne01, p.ne1, iy, wy);
    float sum = 0.0;
    for (int a = 0; a < ny; a++) {
        float row = 0.0;
        for (int b = 0; b < nx; b++) row += wx[b] * data_a[base + uint(iy[a]) * p.nb01 + uint(ix[b]) * p.nb00];
        sum += wy[a] * row;
    }
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = sum;
}
