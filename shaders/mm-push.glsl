// Push constants shared by the matrix-product shaders (mm*.comp, mv*.comp):
// d[m, n, b2, b3] = sum_k a[k, m, b2 / r2, b3 / r3] * b[k, n, b2, b3].
// Strides are in elements of each binding's array type; ka and kb, the strides
// along k, are 1 except for out_prod (mm.comp only).  A shader needing more words
// defines MM_PUSH_EXTRA (members appended after kb) before including this file.
layout(push_constant) uniform PC {
    uint M, N, K;
    uint nb01, nb02, nb03;  // a
    uint nb11, nb12, nb13;  // b
    uint nb1, nb2, nb3;     // d (f32, unit stride along m)
    uint ne12, r2, r3;      // b's batch extent in dim 2; broadcast ratios of a
    uint off_a, off_b, off_d;
    uint ka, kb;
#ifdef MM_PUSH_EXTRA
    MM_PUSH_EXTRA
#endif
} p;
