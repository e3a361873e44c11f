// How a matrix-vector kernel stores d[at] (after the mm-push.glsl block and the
// binding of D, 2).  With FUSE_ADD the ADD that follows the product in the graph
// comes along (vk-fuse.c): o = d + e, e and o of d's shape and strides, bound at
// 3 and 4; d is still written, for any other reader of the product.
#ifdef FUSE_ADD
layout(binding = 3) readonly buffer E { float data_e[]; };
layout(binding = 4) writeonly buffer O { float data_o[]; };
#endif

void store_d(uint at, float v) {
    data_d[at] = v;
#ifdef FUSE_ADD
    data_o[p.off_o + (at - p.off_d)] = v + data_e[p.off_e + (at - p.off_d)];
#endif
}
