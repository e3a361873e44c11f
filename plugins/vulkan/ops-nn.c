/*
 * ops-nn.c - rotary position embeddings (rope, rope_back; normal and NeoX
 * modes with YaRN scaling and frequency factors).
 */
#include <math.h>

#include "vk-impl.h"

#define ROPE_MODE_NEOX 2

/* op_params: [1] n_dims, [2] mode, [4] n_ctx_orig, f32 [5] freq_base, [6] freq_scale,
 * [7] ext_factor, [8] attn_factor, [9] beta_fast, [10] beta_slow. */
static bool rope_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *pos = node->src[1], *ff = node->src[2];
    const int mode = vk_param_i32(node, 2), n_dims = vk_param_i32(node, 1);
    if (mode != 0 && mode != ROPE_MODE_NEOX) return false; /* multi-section and vision modes: CPU */
    if ((a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) || node->type != a->type || !vk_type_ok(d, a->type)) return false;
    if (!vk_shape_fits(a) || !vk_shape_fits(node) || !ggml_are_same_shape(a, node) || a->ne[0] % 2 != 0) return false;
    if (n_dims <= 0 || n_dims > a->ne[0] || n_dims % 2 != 0) return false;
    if (!pos || pos->type != GGML_TYPE_I32 || !ggml_is_contiguous(pos) || pos->ne[0] != a->ne[2]) return false;
    return !ff || (ff->type == GGML_TYPE_F32 && ggml_is_contiguous(ff) && ff->ne[0] >= n_dims / 2);
}

static float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

static enum ggml_status rope_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *pos = node->src[1], *ff = node->src[2];
    const int n_dims = vk_param_i32(node, 1), n_ctx_orig = vk_param_i32(node, 4);
    const float freq_base = vk_param_f32(node, 5), freq_scale = vk_param_f32(node, 6), ext_factor = vk_param_f32(node, 7),
                attn_factor = vk_param_f32(node, 8), beta_fast = vk_param_f32(node, 9), beta_slow = vk_param_f32(node, 10);
    float corr0 = floorf(corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    float corr1 = ceilf(corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    corr0 = corr0 > 0 ? corr0 : 0;
    corr1 = corr1 < n_dims - 1 ? corr1 : (float)(n_dims - 1);

    const size_t ts = ggml_type_size(a->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("rope_%s", vk_type_tag(a->type)));
    vk_push_shape(ds.push, 0, a);
    for (int i = 0; i < 4; i++) ds.push[8 + i] = (uint32_t)(node->nb[i] / ts);
    ds.push[16] = (uint32_t)n_dims;
    ds.push[17] = vk_param_i32(node, 2) == ROPE_MODE_NEOX;
    ds.push[18] = ff != NULL;
    ds.push[19] = node->op == GGML_OP_ROPE_BACK;
    ds.push[20] = vk_f32_bits(powf(freq_base, -2.0f / n_dims));
    ds.push[21] = vk_f32_bits(freq_scale);
    ds.push[22] = vk_f32_bits(ext_factor);
    ds.push[23] = vk_f32_bits(attn_factor);
    ds.push[24] = vk_f32_bits(corr0);
    ds.push[25] = vk_f32_bits(corr1);
    vk_dispatch_bind(&ds, a, false, ts, 12);
    vk_dispatch_bind(&ds, pos, false, 4, 13);
    vk_dispatch_bind(&ds, ff ? ff : pos, false, 4, 14);
    vk_dispatch_bind(&ds, node, true, ts, 15);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(a) / 2, 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_nn_register(struct vk_op_kernel *t) {
    t[GGML_OP_ROPE] = (struct vk_op_kernel){rope_supports, rope_record};
    t[GGML_OP_ROPE_BACK] = (struct vk_op_kernel){rope_supports, rope_record};
}
