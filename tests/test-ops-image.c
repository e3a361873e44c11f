/* test-ops-image.c - upscale / interpolate (nearest, bilinear, bicubic, with and
 * without align-corners, up and down, dims 2-3), pad / pad_ext, pad_reflect_1d,
 * roll, timestep_embedding, win_part / win_unpart, get_rel_pos and add_rel_pos
 * on the CPU backend against PyTorch (tests/golden/gen_conv.py). */
#include "ggmlc.h"
#include "opstest.h"

static struct gold_set *G;
#define GOLD(name) gold_get(G, name)

static void test_interpolate(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("interp.x"), GGML_TYPE_F32, false);
    struct ggml_tensor *xt = ops_input(ctx, GOLD("interp.x"), GGML_TYPE_F32, true);
    struct ggml_tensor *up = ggml_upscale(ctx, xt, 2, GGML_SCALE_MODE_NEAREST);
    if (ops_compute(ctx, up)) ops_check(up, GOLD("interp.nearest_x2"), 0.0, "upscale x2 nearest of strided data");
    const struct { const char *ref; int64_t ne0, ne1, ne2; uint32_t mode; double tol; } cases[] = {
        {"interp.nearest_down", 7, 3, 3, GGML_SCALE_MODE_NEAREST, 0.0},
        {"interp.bilinear", 11, 7, 3, GGML_SCALE_MODE_BILINEAR, 1e-10},
        {"interp.bilinear_ac", 11, 7, 3, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS, 1e-10},
        {"interp.bilinear_down", 3, 3, 3, GGML_SCALE_MODE_BILINEAR, 1e-10},
        {"interp.bilinear_down_ac", 3, 3, 3, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS, 1e-10},
        {"interp.bicubic", 6, 9, 3, GGML_SCALE_MODE_BICUBIC, 1e-10},
        {"interp.bicubic_ac", 6, 9, 3, GGML_SCALE_MODE_BICUBIC | GGML_SCALE_FLAG_ALIGN_CORNERS, 1e-10},
        {"interp.nearest_3d", 6, 4, 5, GGML_SCALE_MODE_NEAREST, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ggml_tensor *r = ggml_interpolate(ctx, x, cases[i].ne0, cases[i].ne1, cases[i].ne2, 2, cases[i].mode);
        if (ops_compute(ctx, r)) ops_check(r, GOLD(cases[i].ref), cases[i].tol, cases[i].ref);
    }
    ggmlc_clear_error();
    ops_check_rejected(ggml_interpolate(ctx, x, 4, 4, 3, 2, 7), "ggml_interpolate", "an unknown mode");
    ggmlc_clear_error();
    ops_check_rejected(ggml_upscale(ctx, x, 0, GGML_SCALE_MODE_NEAREST), "ggml_upscale", "scale factor 0");
    ggml_free(ctx);
}

static void test_pad_roll(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("pad.x"), GGML_TYPE_F32, true);
    struct ggml_tensor *pe = ggml_pad_ext(ctx, x, 1, 2, 0, 3, 2, 1, 1, 0);
    if (ops_compute(ctx, pe)) ops_check(pe, GOLD("pad.ext"), 0.0, "pad_ext on both sides of all 4 dims, strided input");
    struct ggml_tensor *p = ggml_pad(ctx, x, 3, 1, 0, 2);
    if (ops_compute(ctx, p)) ops_check(p, GOLD("pad.end"), 0.0, "pad at the end");
    struct ggml_tensor *rf = ggml_pad_reflect_1d(ctx, gold_new_tensor(ctx, GOLD("reflect.x")), 3, 2);
    if (ops_compute(ctx, rf)) ops_check(rf, GOLD("reflect.out"), 0.0, "pad_reflect_1d");
    struct ggml_tensor *ro = ggml_roll(ctx, x, 7, 3, -2, 1);
    if (ops_compute(ctx, ro)) ops_check(ro, GOLD("roll.out"), 0.0, "roll, negative and beyond-size shifts, strided input");
    ggmlc_clear_error();
    ops_check_rejected(ggml_pad_reflect_1d(ctx, gold_new_tensor(ctx, GOLD("reflect.x")), 7, 0), "ggml_pad_reflect_1d", "padding = row length");
    ggmlc_clear_error();
    ops_check_rejected(ggml_pad_ext(ctx, x, -1, 0, 0, 0, 0, 0, 0, 0), "ggml_pad_ext", "negative padding");
    ggml_free(ctx);
}

static void test_timestep(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *t = gold_new_tensor(ctx, GOLD("timestep.t"));
    struct ggml_tensor *even = ggml_timestep_embedding(ctx, t, 10, 10000), *odd = ggml_timestep_embedding(ctx, t, 7, 100);
    if (ops_compute(ctx, even)) ops_check(even, GOLD("timestep.even"), 1e-10, "timestep_embedding dim 10");
    if (ops_compute(ctx, odd)) ops_check(odd, GOLD("timestep.odd"), 1e-10, "timestep_embedding odd dim 7 (zero last)");
    ggml_free(ctx);
}

static void test_sam(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *wp = ggml_win_part(ctx, gold_new_tensor(ctx, GOLD("win.img")), 3);
    if (ops_compute(ctx, wp)) ops_check(wp, GOLD("win.part"), 0.0, "win_part with zero padding");
    struct ggml_tensor *wu = ggml_win_unpart(ctx, gold_new_tensor(ctx, GOLD("win.wins")), 7, 5, 3);
    if (ops_compute(ctx, wu)) ops_check(wu, GOLD("win.unpart"), 0.0, "win_unpart");
    for (int f16 = 0; f16 < 2; f16++) {
        struct ggml_tensor *rp = ggml_get_rel_pos(ctx, ops_input(ctx, GOLD("relpos.table"), f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, false), 5, 5);
        if (ops_compute(ctx, rp)) ops_check(rp, GOLD("relpos.out"), f16 ? 1e-6 : 0.0, f16 ? "get_rel_pos f16" : "get_rel_pos");
    }
    struct ggml_tensor *pw = gold_new_tensor(ctx, GOLD("relpos.pw")), *ph = gold_new_tensor(ctx, GOLD("relpos.ph"));
    struct ggml_tensor *attn = gold_new_tensor(ctx, GOLD("relpos.attn"));
    struct ggml_tensor *ar = ggml_add_rel_pos(ctx, attn, pw, ph);
    if (ops_compute(ctx, ar)) ops_check(ar, GOLD("relpos.added"), 1e-14, "add_rel_pos");
    struct ggml_tensor *ai = ggml_add_rel_pos_inplace(ctx, attn, pw, ph);
    tap_ok(ai && ai->view_src == attn, "add_rel_pos_inplace is a view of a");
    if (ops_compute(ctx, ai)) ops_check(attn, GOLD("relpos.added"), 1e-14, "add_rel_pos_inplace writes a");
    ggmlc_clear_error();
    ops_check_rejected(ggml_get_rel_pos(ctx, gold_new_tensor(ctx, GOLD("relpos.table")), 5, 4), "ggml_get_rel_pos", "qh != kh");
    ggmlc_clear_error();
    ops_check_rejected(ggml_win_unpart(ctx, gold_new_tensor(ctx, GOLD("win.wins")), 9, 9, 3), "ggml_win_unpart", "too few windows");
    ggml_free(ctx);
}

int main(void) {
    G = gold_load("image.gold");
    if (!G) return tap_skip_all("golden data tests/golden/image.gold missing");
    test_interpolate();
    test_pad_roll();
    test_timestep();
    test_sam();
    gold_free(G);
    return tap_done();
}
