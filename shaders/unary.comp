#version 450
// d = f(a) elementwise, f by op (VK_UN_*), and where each element of d reads a
// by mode (VK_UN_MODE_*): flat (cpy/cont/reshape: element k of a goes to
// element k of d, shapes may differ), repeat (repeat, diag), roll, reflection
// padding.  Position-dependent ops (diag masks, tri, diag, arange) look at the
// element's index.  MOVE (integer data: A_TYPE = D_TYPE, 3 for 32-bit words, 2 for
// 16-bit ones): the copy modes only, each value moved as it is, never through f32.
#include "types.glsl"
#include "op-codes.h"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_unary);

bool tri_keeps(uint i0, uint i1) {
    switch (p.n_past) {
    case 3: return i0 < i1;    // GGML_TRI_TYPE_LOWER
    case 2: return i0 <= i1;   // LOWER_DIAG
    case 1: return i0 > i1;    // UPPER
    default: return i0 >= i1;  // UPPER_DIAG
    }
}

uint reflect_index(int j, int n) {
    if (j < 0) j = -j;                 // mirror at the first element, which is not repeated
    if (j >= n) j = 2 * (n - 1) - j;   // and at the last
    return uint(j);
}

float apply(float x) {
    switch (p.op) {
    case VK_UN_COPY: return x;
    case VK_UN_NEG: return -x;
    case VK_UN_ABS: return abs(x);
    case VK_UN_SGN: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    case VK_UN_STEP: return x > 0.0 ? 1.0 : 0.0;
    case VK_UN_TANH: return tanh(clamp(x, -15.0, 15.0));
    case VK_UN_ELU: return x > 0.0 ? x : exp(x) - 1.0;
    case VK_UN_RELU: return max(x, 0.0);
    case VK_UN_SIGMOID: return sigmoid(x);
    case VK_UN_GELU: return gelu_tanh(x);
    case VK_UN_GELU_QUICK: return x / (1.0 + exp(-1.702 * x));
    case VK_UN_SILU: return x / (1.0 + exp(-x));
    case VK_UN_HARDSWISH: return x * clamp((x + 3.0) / 6.0, 0.0, 1.0);
    case VK_UN_HARDSIGMOID: return clamp((x + 3.0) / 6.0, 0.0, 1.0);
    case VK_UN_EXP: return exp(x);
    case VK_UN_EXPM1: return expm1_f(x);
    case VK_UN_SOFTPLUS: return x > 20.0 ? x : log(1.0 + exp(x));
    case VK_UN_GELU_ERF: return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476));
    case VK_UN_FLOOR: return floor(x);
    case VK_UN_CEIL: return ceil(x);
    case VK_UN_ROUND: return sign(x) * floor(abs(x) + 0.5);
    case VK_UN_TRUNC: return trunc(x);
    case VK_UN_SQR: return x * x;
    case VK_UN_SQRT: return sqrt(x);
    case VK_UN_LOG: return log(x);
    case VK_UN_SIN: return sin(x);
    case VK_UN_COS: return cos(x);
    case VK_UN_SCALE: return x * p.p0 + p.p1;
    case VK_UN_CLAMP: return min(max(x, p.p0), p.p1);
    case VK_UN_LEAKY_RELU: return x > 0.0 ? x : p.p0 * x;
    case VK_UN_XIELU: return xielu(x, p.p0, p.p1, p.p2, p.p3);
    default: return p.p0; // VK_UN_FILL
    }
}

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    uint j0, j1, j2, j3;
    if (p.mode == VK_UN_MODE_FLAT) {
        r = idx / p.ne00;
        j0 = idx % p.ne00; j1 = r % p.ne01; j2 = (r / p.ne01) % p.ne02; j3 = r / (p.ne01 * p.ne02);
    } else if (p.mode == VK_UN_MODE_ROLL) {
        j0 = (i0 + p.ne0 - p.shift0) % p.ne0; j1 = (i1 + p.ne1 - p.shift1) % p.ne1;
        j2 = (i2 + p.ne2 - p.shift2) % p.ne2; j3 = (i3 + p.ne3 - p.shift3) % p.ne3;
    } else if (p.mode == VK_UN_MODE_REFLECT) {
        j0 = reflect_index(int(i0) - int(p.shift0), int(p.ne00)); j1 = i1; j2 = i2; j3 = i3;
    } else {
        j0 = i0 % p.ne00; j1 = i1 % p.ne01; j2 = i2 % p.ne02; j3 = i3 % p.ne03;
    }
#ifdef MOVE
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = data_a[p.off_a + j0 * p.nb00 + j1 * p.nb01 + j2 * p.nb02 + j3 * p.nb03];
    return;
#endif
    const bool reads = p.op != VK_UN_FILL && p.op != VK_UN_ARANGE;
    const float x = reads ? TO_F32(A_TYPE, data_a[p.off_a + j0 * p.nb00 + j1 * p.nb01 + j2 * p.nb02 + j3 * p.nb03]) : 0.0;
    float v;
    switch (p.op) {
    case VK_UN_DIAG_MASK: v = int(i0) > int(i1) + p.n_past ? p.p0 : x; break;
    case VK_UN_TRI: v = tri_keeps(i0, i1) ? x : 0.0; break;
    case VK_UN_DIAG: v = i0 == i1 ? x : 0.0; break;
    case VK_UN_ARANGE: v = p.p0 + p.p2 * float(i0); break;
    default: v = apply(x); break;
    }
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(D_TYPE, v);
}
