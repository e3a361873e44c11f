// mxfp4-levels.glsl - MXFP4's values (OCP microscaling; ggml's block_mxfp4): each nibble an
// E2M1 value doubled (0, 0.5, 1, 1.5, 2, 3, 4, 6 as 0 ... 12; the top bit the sign), each
// 32-value block's E8M0 exponent byte e halved to match, 2^(e - 128).  For the decoder
// (quant.glsl) and the integer-dot kernel (mvq-dot-mxfp4.comp); the C copy is core/quants.h's.
#ifndef MXFP4_LEVELS_GLSL
#define MXFP4_LEVELS_GLSL
const float MXFP4_LEVELS[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);

// 2^(e - 128) from its bits, as exact as the CPU's (e < 2 gives subnormals, which a device
// may flush to zero)
float mxfp4_scale(uint e) {
    return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
}
#endif
