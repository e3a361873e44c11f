// iq4-levels.glsl - ggml's 16 non-linear levels of IQ4_NL and IQ4_XS (core/quants.h's
// ggmlc_kvalues_iq4nl), for the shaders that decode, encode or multiply those formats.
#ifndef IQ4_LEVELS_GLSL
#define IQ4_LEVELS_GLSL
const float IQ4_LEVELS[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0,
                                       89.0, 113.0);
#endif
