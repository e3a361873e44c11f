// qblock.glsl - the size of one block of ggml's block formats, for the shaders that read
// (quant.glsl) or write (quantize.glsl) them as 16-bit words.  QTYPE is the ggml type id;
// QK is the number of values in a block, QWORDS its size in 16-bit words (every block
// size but MXFP4's is even, so a block starts on a word); MXFP4's blocks are read as
// bytes (QUNIT_T, types.glsl), so its QWORDS counts bytes.
#ifndef QBLOCK_GLSL
#define QBLOCK_GLSL
#if (QTYPE >= 10 && QTYPE <= 14) || QTYPE == 23
#define QK 256
#else
#define QK 32
#endif
#if QTYPE == 2
#define QWORDS 9
#elif QTYPE == 3
#define QWORDS 10
#elif QTYPE == 6
#define QWORDS 11
#elif QTYPE == 7
#define QWORDS 12
#elif QTYPE == 8
#define QWORDS 17
#elif QTYPE == 10
#define QWORDS 42
#elif QTYPE == 11
#define QWORDS 55
#elif QTYPE == 12
#define QWORDS 72
#elif QTYPE == 13
#define QWORDS 88
#elif QTYPE == 14
#define QWORDS 105
#elif QTYPE == 20
#define QWORDS 9
#elif QTYPE == 23
#define QWORDS 68
#elif QTYPE == 39
#define QWORDS 17
#endif
#endif
