// quant-float.glsl - small unsigned integers (quants) to floats, in one of two
// ways chosen by CONVERT, a constant the includer defines: 0 without
// int-to-float instructions (a value v < 2^23 OR-ed into the bits of 2^23 is
// the float 2^23 + v, and subtracting 2^23 + offset is exact: it runs on the
// integer and FMA pipes), 1 with them (fewer instructions, but they run at a
// fraction of the FMA rate).

// the float 2^23 + v for v < 2^23
float magic(uint v) { return uintBitsToFloat(v | 0x4b000000u); }

const float TWO23 = 8388608.0;

// the unsigned quant v (< 2^23) minus offset, as a float
float quant_f(uint v, float offset) { return CONVERT == 1 ? float(v) - offset : magic(v) - (TWO23 + offset); }
