/* test-quants-lowbit.c - ggml's Q1_0, Q2_0 and NVFP4 blocks: quantization through
 * ggml_quantize_chunk and dequantization through the type traits against blocks
 * worked out by hand from ggml's layouts (see the comment of each case), and the
 * UE4M3 scale byte conversions of ggmlc-blocks.h. */
#include <stdio.h>
#include <string.h>

#include "ggml.h"
#include "ggmlc-blocks.h"
#include "testutil.h"

static bool bytes_equal(const uint8_t *got, const uint8_t *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            printf("# %s: byte %zu is 0x%02x, expected 0x%02x\n", what, i, got[i], want[i]);
            return false;
        }
    return true;
}

static bool floats_equal(const float *got, const float *want, int n, const char *what) {
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            printf("# %s: value %d is %.9g, expected %.9g\n", what, i, got[i], want[i]);
            return false;
        }
    return true;
}

/* Quantize n floats into one block, compare it with want, dequantize and compare with back. */
static void check_round_trip(enum ggml_type type, const float *x, const void *want,
                             const float *back, const char *what) {
    uint8_t block[64] = {0};
    float y[128];
    const int64_t n = ggml_blck_size(type);
    const size_t size = ggml_quantize_chunk(type, x, block, 0, 1, n, NULL);
    tap_ok(size == ggml_type_size(type) && bytes_equal(block, want, size, what),
           "%s: quantized block", what);
    ggml_get_type_traits(type)->to_float(block, y, n);
    tap_ok(floats_equal(y, back, (int)n, what), "%s: dequantized values", what);
}

/* Q1_0: x alternates 0 (sign bit set: x >= 0), -1.5, 0.5, -1.5, ...; d = mean |x| =
 * (63 * 0.5 + 64 * 1.5) / 128 = 255/256, f16 0x3BF8; even bits set: bytes 0x55. */
static void test_q1_0(void) {
    float x[128], back[128];
    struct {
        uint16_t d;
        uint8_t qs[16];
    } want = {0x3BF8, {0}};
    for (int j = 0; j < 128; j++) {
        x[j] = j % 2 ? -1.5f : j == 0 ? 0.0f : 0.5f;
        back[j] = j % 2 ? -255.0f / 256 : 255.0f / 256;
    }
    memset(want.qs, 0x55, sizeof want.qs);
    check_round_trip(GGML_TYPE_Q1_0, x, &want, back, "q1_0");
}

/* Q2_0: amax 2 (d = 2, f16 0x4000), codes round(x / 2) + 1 with halves away from zero:
 * {2, -2, 1, -1} -> {2, 0, 2, 0} = 0x22; {0.9, -0.9, 0.5, 1.2} -> {1, 1, 1, 2} = 0x95;
 * zeros -> code 1 = 0x55. */
static void test_q2_0(void) {
    float x[64] = {2, -2, 1, -1, 0.9f, -0.9f, 0.5f, 1.2f}, back[64] = {2, -2, 2, -2, 0, 0, 0, 2};
    struct {
        uint16_t d;
        uint8_t qs[16];
    } want = {0x4000, {0x22, 0x95}};
    memset(want.qs + 2, 0x55, sizeof want.qs - 2);
    check_round_trip(GGML_TYPE_Q2_0, x, &want, back, "q2_0");
    /* code 3 (+2 d), which the quantizer never writes, still reads as 2 d */
    const struct {
        uint16_t d;
        uint8_t qs[16];
    } codes = {0x3C00, {0xE4}}; /* codes 0, 1, 2, 3 */
    float y[64];
    ggml_get_type_traits(GGML_TYPE_Q2_0)->to_float(&codes, y, 64);
    tap_ok(y[0] == -1 && y[1] == 0 && y[2] == 1 && y[3] == 2 && y[4] == -1,
           "q2_0: codes 0..3 read -d, 0, d, 2d");
}

/* NVFP4, four groups of 16 (byte j of a group: value j low nibble, value j + 8 high):
 * 0: every E2M1 level, amax 6 -> scale 1 = UE4M3 0x38; 0.25 ties 0 and 0.5: the first, 0;
 * 1: zeros -> scale byte 0, codes 0;
 * 2: all 3 -> scale 0.5 = 0x30, 3 = 6 * 0.5: code 7;
 * 3: 0.03 (the first -0.03) -> 0.005 is subnormal: round(0.005 * 512) = 3 (3/512), and
 *    0.03 / (3/512) = 5.12 lies nearest level 6 (code 7, -6 code 15): 0.03515625. */
static void test_nvfp4(void) {
    static const float levels[16] = {0,     0.5f, 1,     1.5f, 2,  3,  4,  6,
                                     -0.5f, -1,   -1.5f, -2,   -3, -4, -6, 0.25f};
    float x[64] = {0}, back[64] = {0};
    struct {
        uint8_t d[4];
        uint8_t qs[32];
    } want = {{0x38, 0, 0x30, 3}, {0x90, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07}};
    for (int j = 0; j < 16; j++) {
        x[j] = levels[j];
        back[j] = j == 15 ? 0 : levels[j];
        x[32 + j] = back[32 + j] = 3;
        x[48 + j] = j == 0 ? -0.03f : 0.03f;
        back[48 + j] = j == 0 ? -0.03515625f : 0.03515625f;
    }
    memset(want.qs + 16, 0x77, 16);
    want.qs[24] = 0x7F; /* value 0 of group 3 (-0.03, code 15) with value 8 (code 7) */
    check_round_trip(GGML_TYPE_NVFP4, x, &want, back, "nvfp4");
}

/* UE4M3: 1.9375 = 1.1111b rounds its mantissa up into the next exponent (2 = 0x40); 448
 * and above give 0x7E (448); 0x7F (E4M3's NaN) reads 0; the smallest subnormal is 2^-9. */
static void test_ue4m3(void) {
    tap_ok(ggmlc_fp32_to_ue4m3(1.9375f) == 0x40 && ggmlc_fp32_to_ue4m3(1000.0f) == 0x7E &&
               ggmlc_fp32_to_ue4m3(-1.0f) == 0 && ggmlc_fp32_to_ue4m3(0.0005f) == 0,
           "fp32 to UE4M3: carry into the exponent, saturation, negatives and underflow");
    tap_ok(ggmlc_ue4m3_to_fp32_half(0x7E) == 224.0f && ggmlc_ue4m3_to_fp32_half(0x7F) == 0.0f &&
               ggmlc_ue4m3_to_fp32_half(0x01) == 0.5f / 512 &&
               ggmlc_ue4m3_to_fp32_half(0x38) == 0.5f,
           "UE4M3 to fp32 (halved): largest, NaN as 0, subnormal, one");
}

int main(void) {
    test_q1_0();
    test_q2_0();
    test_nvfp4();
    test_ue4m3();
    return tap_done();
}
