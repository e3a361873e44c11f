/*
 * test-q8-activations.c - the CPU backend quantizes f32 activations to Q8_0 (the vec_dot
 * type of Q4_0, Q5_0, Q8_0, IQ4_NL and MXFP4 weights) as ggml's CPU backend does, so that
 * quantized models give ggml's tokens: q = x * id rounded half to even, id = 127 / amax on
 * x86 (1 / d elsewhere), d = amax / 127.  Expected values by hand, on blocks where the
 * reference rule of files (x / d rounded half away from zero) gives other numbers.
 * Q8_K (the K-quants' vec_dot type) as ggml's reference quantize_row_q8_K, which ggml's x86
 * backend runs: the scale -127 / max from the first value of largest magnitude, halves to
 * even, 127 the cap; by hand, and byte for byte against the reference on random rows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc-blocks.h"
#include "ggmlc.h"
#include "testutil.h"

int main(void) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!tap_ok(backend != NULL, "CPU backend")) return tap_done();
    const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(GGML_TYPE_Q8_0);
    if (!tap_ok(tr && tr->from_float && tr->vec_dot_type == GGML_TYPE_Q8_0, "Q8_0 has a from_float"))
        return tap_done();

    /* block 0: amax 127, so id = 1 and d = 1: halves round to even */
    float x[2 * QK8_0] = {127.0f, 2.5f, -0.5f, 3.5f, -2.5f, 0.5f};
    /* block 1: amax 3.8202731609344482 (an f32): 127 / amax and 1 / (amax / 127) differ in the
     * last bit; x * (127 / amax) = 1.4999998807907104, x * (1 / d) = 1.5 exactly */
    x[QK8_0] = 3.8202731609344482f;
    x[QK8_0 + 1] = 0.04512133449316025f;
    block_q8_0 y[2];
    tr->from_float(x, y, 2 * QK8_0);

    const int want0[6] = {127, 2, 0, 4, -2, 0};
    bool ok = true;
    for (int j = 0; j < 6; j++) ok = ok && y[0].qs[j] == want0[j];
    tap_ok(ok, "halves round to even: 2.5 -> %d, -0.5 -> %d, 3.5 -> %d, -2.5 -> %d, 0.5 -> %d", y[0].qs[1],
           y[0].qs[2], y[0].qs[3], y[0].qs[4], y[0].qs[5]);
    tap_ok(ggml_fp16_to_fp32(y[0].d) == 1.0f, "d = amax / 127 = %g", ggml_fp16_to_fp32(y[0].d));
#if defined(__x86_64__) || defined(__i386__)
    const int want1 = 1; /* 1.4999999 */
#else
    const int want1 = 2; /* 1.5, half to even */
#endif
    tap_ok(y[1].qs[0] == 127 && y[1].qs[1] == want1, "the scale as ggml's kernels of this CPU compute it: %d %d",
           y[1].qs[0], y[1].qs[1]);

    const struct ggml_type_traits_cpu *tk = ggml_get_type_traits_cpu(GGML_TYPE_Q8_K);
    if (tap_ok(tk && tk->from_float, "Q8_K has a from_float")) {
        float xk[3 * QK_K] = {0};
        /* block 0: -127 then +127 (the first sets the sign: iscale = -127 / -127 = 1), halves */
        xk[0] = -127.0f, xk[1] = 127.0f, xk[2] = 2.5f, xk[3] = -0.5f, xk[4] = 3.5f;
        /* block 1 zero; block 2 random */
        for (int j = 0; j < QK_K; j++) xk[2 * QK_K + j] = test_normal() * (1 + j % 5);
        block_q8_K yk[3], ref[3];
        tk->from_float(xk, yk, 3 * QK_K);
        ggml_get_type_traits(GGML_TYPE_Q8_K)->from_float_ref(xk, ref, 3 * QK_K);
        tap_ok(
            yk[0].d == 1.0f && yk[0].qs[0] == -127 && yk[0].qs[1] == 127 && yk[0].qs[2] == 2 &&
                yk[0].qs[3] == 0 && yk[0].qs[4] == 4 && yk[0].bsums[0] == 6,
            "Q8_K: the first largest value sets the sign (d %g), halves to even (%d %d %d), bsum %d",
            yk[0].d, yk[0].qs[2], yk[0].qs[3], yk[0].qs[4], yk[0].bsums[0]);
        tap_ok(yk[1].d == 0.0f && yk[1].qs[7] == 0 && yk[1].bsums[3] == 0,
               "Q8_K: a zero block is zero");
        int differ = 0;
        for (int round = 0; round < 200; round++) {
            for (int j = 0; j < 3 * QK_K; j++) xk[j] = test_normal() * (round % 3 ? 1.0f : 1000.0f);
            xk[(round * 37) % (3 * QK_K)] = -xk[(round * 53 + 1) % (3 * QK_K)] * 4;
            if (round % 20 == 3)
                xk[(round * 11) % (3 * QK_K)] = NAN; /* passed over by the maximum */
            if (round % 20 == 4) xk[(round * 11) % (3 * QK_K)] = -INFINITY;
            tk->from_float(xk, yk, 3 * QK_K);
            ggml_get_type_traits(GGML_TYPE_Q8_K)->from_float_ref(xk, ref, 3 * QK_K);
            differ += memcmp(yk, ref, sizeof yk) != 0;
        }
        tap_ok(
            differ == 0,
            "Q8_K: 200 random rows of 3 blocks (some with a NaN or an infinity) byte for byte the reference's (%d differ)",
            differ);
    }
    ggml_backend_free(backend);
    ggmlc_shutdown();
    return tap_done();
}
