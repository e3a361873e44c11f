/*
 * push-constants.h - the push-constant layouts of the Vulkan shaders, one struct per shader
 * family, valid in both C (the plugin fills the struct) and GLSL (the shader declares its push
 * block with VK_PUSH_BLOCK).  Every member is a 4-byte uint, int or float, so the C layout and
 * the std430 layout of the push block agree word for word; the plugin checks the sizes below.
 * See docs/vulkan.md, "Push constants", for the convention.
 */
#ifndef VK_PUSH_CONSTANTS_H
#define VK_PUSH_CONSTANTS_H

#ifdef __STDC__ /* C: the GLSL scalar type names, for the structs below only */
#include <stdint.h>
#define uint uint32_t
#else /* GLSL: the shader's one push block holds the struct as p (members read p.name) */
#define VK_PUSH_BLOCK(type) layout(push_constant) uniform type##_block { type p; }
#endif

/* binary.comp: d = a (op) b, b broadcast over a; shapes in elements of each binding's type.
 * off_*: each binding's first element (set by the plugin from the binding's offset). */
struct vk_pc_binary {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne10, ne11, ne12, ne13, nb10, nb11, nb12, nb13; /* b */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_b, off_d, op;                         /* op: VK_BIN_* (op-codes.h) */
};

/* unary.comp: d = f(a), an element-wise function or an index remap (mode, VK_UN_MODE_*). */
struct vk_pc_unary {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d, op, mode;                          /* op: VK_UN_* (op-codes.h) */
    float p0, p1, p2, p3;                                 /* the op's float parameters */
    int n_past;                          /* diag masks: n_past; tri: the triangle type */
    uint shift0, shift1, shift2, shift3; /* roll: source offsets; pad: left padding */
};

/* The matrix products (mm*.comp, mv*.comp, mvq*.comp, mvq-dot*.comp, mm-coopmat-nv.comp):
 * d[m, n, b2, b3] = sum_k a[k, m, b2 / r2, b3 / r3] * b[k, n, b2, b3].  Strides in elements of
 * each binding's array type; ka and kb, the strides along k, are 1 except for out_prod. */
struct vk_pc_mm {
    uint M, N, K;
    uint nb01, nb02, nb03; /* a */
    uint nb11, nb12, nb13; /* b */
    uint nb1, nb2, nb3;    /* d (f32, unit stride along m) */
    uint ne12, r2, r3;     /* b's batch extent in dim 2; broadcast ratios of a */
    uint off_a, off_b, off_d;
    uint ka, kb;
    uint k_split; /* coopmat: k per workgroup layer; 0: no split (the layers are batches) */
    uint off_s;            /* integer-dot mat-vecs: where b's block scales start (vec2 units) */
    uint off_e, off_o;     /* mat-vecs with FUSE_ADD (vk-fuse.c): o = d + e, both with d's strides */
};

/* The mul_mat_id products (mm-id.comp, mv-id.comp, mvq-dot's MVQ_ID variants):
 * d[m, slot, t] = sum_k as[k, m, ids[slot, t]] * b[k, slot % ne11, t]. */
struct vk_pc_mm_id {
    uint M, K, n_as;
    uint nb01, nb02;       /* as: the expert matrices are nb02 apart */
    uint ne11, nb11, nb12; /* b (f32) */
    uint n_used, n_tokens; /* ids [n_used, n_tokens] (i32) */
    uint nbi0, nbi1;
    uint nb1, nb2;         /* d (f32, unit stride along m) */
    uint off_a, off_b, off_i, off_d;
    uint off_s;            /* integer-dot mat-vecs: where b's block scales start (vec2 units) */
    uint off_e, off_o;     /* mat-vecs with FUSE_ADD (vk-fuse.c): o = d + e, both with d's strides */
};

/* pack-f16.comp: f32 b packed into contiguous f16, four values at a time. */
struct vk_pc_pack_f16 {
    uint ne0, ne1, ne2, ne3; /* b's shape; ne0 in vec4 units */
    uint nb1, nb2, nb3;      /* b's strides in vec4 units */
    uint off_b;              /* b's offset in vec4 units */
};

/* mm-split-sum.comp: d = the sum of the splits partial results of a split-k product. */
struct vk_pc_split_sum {
    uint M, N, splits, nb1, off_d;
};

/* quantize-q8.comp: f32 b into Q8_0 quants and per-block (scale, sum) pairs. */
struct vk_pc_quantize_q8 {
    uint K, N, cols;       /* depth, columns per batch, columns in all */
    uint nb11, nb12, nb13; /* b's strides in floats */
    uint ne12, off_b, bvec; /* b's extent in dim 2, offset (floats); bvec 1: offset and strides
                             * multiples of 4 */
    uint off_q, off_s;     /* where the quants (words) and the scales (pairs) start */
};

/* repeat-back.comp: d = the sum of the repetitions of d's shape in a. */
struct vk_pc_repeat_back {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d;
};

/* rows.comp: one row of a per workgroup reduced or normalized (op: VK_ROW_*, op-codes.h). */
struct vk_pc_rows {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d, op;
    float eps;
    /* rows_mul_f32 (a norm and the mul by w that follows it, vk-fuse.c): w's offset, row
     * counts (broadcast by modulo) and row strides, o's offset (o has d's shape and strides) */
    uint off_w, off_o, wne1, wne2, wne3, wnb1, wnb2, wnb3;
    /* rows_mul_q8_f32: o's rows also quantized (q8-lanes.glsl), quants from word off_q and
     * (scale, sum) pairs from pair off_s of the scratch binding */
    uint off_q, off_s;
};

/* count-equal.comp: the number of equal elements of a and b (i32), into d (i64). */
struct vk_pc_count_equal {
    uint ne0, ne1, ne2, ne3;
    uint na0, na1, na2, na3; /* a's strides */
    uint nb0, nb1, nb2, nb3; /* b's strides */
    uint off_a, off_b, off_d;
};

/* group-norm.comp: a workgroup per (group, dim-3 index). */
struct vk_pc_group_norm {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d, n_groups;
    float eps;
};

/* softmax.comp: d = softmax(a * scale + slope * mask), with ALiBi slopes and attention sinks. */
struct vk_pc_softmax {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne11, ne12, ne13, nb11, nb12, nb13;             /* the mask (1s without one) */
    uint nb1, nb2, nb3;                                  /* d */
    uint off_a, off_m, off_d, has_mask;
    float scale, max_bias, m0, m1;
    uint n_head_log2, has_sinks, off_s;
};

/* rows-back.comp: soft_max_back (mode 0) or rms_norm_back (mode 1), one row of dy per
 * workgroup. */
struct vk_pc_rows_back {
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3; /* dy */
    uint nx0, nx1, nx2, nx3;                     /* x's strides */
    uint nd0, nd1, nd2, nd3;                     /* d's strides */
    uint off_dy, off_x, off_d, mode;
    float param;                                 /* scale or eps */
};

/* cross-entropy.comp (and its _back variant): x logits, t targets, g the loss gradient. */
struct vk_pc_cross_entropy {
    uint ne0, ne1, ne2, ne3;                               /* x */
    uint nx1, nx2, nx3, nt1, nt2, nt3, nd1, nd2, nd3;      /* row strides of x, t, d */
    uint off_x, off_t, off_g, off_d;
};

/* optstep.comp: one AdamW (adamw 1) or SGD step over n parameters; h: the hyper-parameters. */
struct vk_pc_optstep {
    uint n, adamw;
    uint off_w, off_g, off_m, off_v, off_h;
};

/* window.comp: win_part, win_unpart and get_rel_pos (mode: the WINDOW_* of ops-window.c). */
struct vk_pc_window {
    uint ne0, ne1, ne2, ne3, nd0, nd1, nd2, nd3; /* d */
    uint na0, na1, na2, na3, ne01, ne02;         /* a's strides and extents */
    uint mode, w, npx;
    uint off_a, off_d;
};

/* add-rel-pos.comp: d = a + the broadcast sums of pw and ph. */
struct vk_pc_add_rel_pos {
    uint K, n_q;
    uint off_a, off_pw, off_ph, off_d;
};

/* recurrence.comp: gated_linear_attn, rwkv_wkv6, rwkv_wkv7; a workgroup per (head, sequence). */
struct vk_pc_recurrence {
    uint H, T, n_seqs;
    float scale;
    uint off[8]; /* the bindings' element offsets, in binding order */
};

/* ssm-scan.comp: Mamba's selective scan over tokens [t_begin, t_end) of each sequence. */
struct vk_pc_ssm_scan {
    uint d_state, head_dim, n_head, n_tok, n_seqs, n_group, scalar_decay, n_slots;
    uint nx1, nx2, nx3, ndt1, ndt2, na1, nb1, nb2, nb3, nc1, nc2, nc3, ns3, ni0;
    uint off_s, off_x, off_dt, off_a, off_b, off_c, off_i, off_d;
    uint t_begin, t_end;
};

/* solve-tri.comp: a triangular solve, one right-hand side per invocation; strides along the
 * solve (p) and across right-hand sides (v). */
struct vk_pc_solve_tri {
    uint n, n_rhs, ne2, ne3;
    uint a_p, a_q, na2, na3, b_p, b_v, nb2, nb3, x_p, x_v, nd2, nd3;
    uint forward, unit_diag;
    uint off_a, off_b, off_d;
};

/* rope.comp: rotary embeddings (and their gradient, backward 1) of a's pairs. */
struct vk_pc_rope {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint nb0, nb1, nb2, nb3;                             /* d */
    uint off_a, off_p, off_f, off_d;                     /* a, positions, frequency factors, d */
    uint n_dims, mode, has_ff, backward;
    float theta_scale, freq_scale, ext_factor, attn_factor, corr0, corr1;
    uint s0, s1, s2, s3;                                 /* sections of the multi-section modes; with
                                                          * SET_ROWS: idx's and c's offsets, c's row
                                                          * stride and rows (rope.comp) */
};

/* flash-attn.comp: one query row per workgroup (times the key splits). */
struct vk_pc_flash_attn {
    uint DK, DV, NQ, NKV, H, nbq1;
    uint nbk1, nbk2, nbk3, nbv1, nbv2, nbv3;
    uint mne0, mne1, mne2, mne3; /* the mask's shape (1s without one) */
    uint rk2, rk3;               /* broadcast ratios of k and v */
    float scale, softcap, m0, m1;
    uint n_head_log2;
    uint off_q, off_k, off_v, off_m, off_d, off_s;
    uint flags;                  /* 1 mask, 2 sinks, 4 alibi; bits 8 on: chunks of keys per split */
    uint nbq2, nbq3;
};

/* fattn-combine.comp: the NS partial results of split-key flash attention combined. */
struct vk_pc_fattn_combine {
    uint DV, H, NS, rows, sinks;
    uint off_s, off_d;
};

/* timestep.comp: sinusoidal timestep embeddings. */
struct vk_pc_timestep {
    uint dim, n, nt0, nd0, nd1;
    float log_max_period;
    uint off_t, off_d;
};

/* im2col3d.comp: the columns of a 3-D convolution; spd: strides, paddings, dilations packed
 * two to a word (s0 s1 | s2 p0 | p1 p2 | d0 d1 | d2, low half first). */
struct vk_pc_im2col3d {
    uint KW, KH, KD, IC;
    uint W, H, D, nx1, nx2, nx3;
    uint OW, OH, OD, N, nd1, nd2, nd3;
    uint spd[5];
    uint off_x, off_d;
};

/* conv3d.comp: a direct 3-D convolution (spd as for im2col3d). */
struct vk_pc_conv3d {
    uint KW, KH, KD, IC, OC, nk1, nk2, nk3;
    uint W, H, D, nx1, nx2, nx3;
    uint OW, OH, OD, NQ, nd1, nd2, nd3;
    uint spd[5];
    uint off_k, off_x, off_d;
};

/* im2col.comp: the columns of a 2-D (or, with heights 1, 1-D) convolution. */
struct vk_pc_im2col {
    uint IW, IH, IC, KW, KH, OW, OH, N;
    uint s0, s1, d0, d1;
    int p0, p1;
    uint nbw, nbh, nbc, nbn; /* b's strides */
    uint ndw, ndh, ndn;      /* d's strides of ow, oh, n (k is contiguous) */
    uint off_b, off_d;
};

/* pool.comp: 1-D and 2-D max and average pooling. */
struct vk_pc_pool {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d, is_avg;
    uint k0, k1, s0, s1;
    int p0, p1;
};

/* upscale.comp: nearest, bilinear or bicubic resampling (mode: ggml_scale_mode's low byte). */
struct vk_pc_upscale {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d, mode, align;
};

/* conv-transpose-2d.comp: s, the stride. */
struct vk_pc_conv_transpose_2d {
    uint KW, KH, OC, IC, nk0, nk1, nk2, nk3;
    uint IW, IH, N, nx0, nx1, nx2, nx3;
    uint OW, OH, nd0, nd1, nd2, nd3;
    uint off_k, off_x, off_d, s;
};

/* conv2d.comp: direct and depthwise 2-D convolutions. */
struct vk_pc_conv2d {
    uint KW, KH, IC, OC, nk1, nk2, nk3; /* kernel (its stride along KW: nk0) */
    uint IW, IH, N, nx1, nx2, nx3;      /* data (its stride along IW: nx0) */
    uint OW, OH, nd0, nd1, nd2, nd3;    /* result */
    int s0, s1, p0, p1, d0, d1;
    uint off_k, off_x, off_d, depthwise;
    uint nk0, nx0; /* 1 unless a layout is permuted (channels innermost: CWHN) */
};

/* im2col-back.comp: patch columns gathered back onto the image. */
struct vk_pc_im2col_back {
    uint IW, IH, IC, N, KW, KH, OW, OH;
    uint ng0, ng1, ng2, ng3; /* the gradient [IC*KH*KW, OW, OH, N] */
    uint nd0, nd1, nd2, nd3; /* the result [IW, IH, IC, N] */
    int s0, s1, p0, p1, d0, d1;
    uint off_g, off_d;
};

/* pool-back.comp: the gradient of 2-D pooling. */
struct vk_pc_pool_back {
    uint OW, OH, ny0, ny1, ny2, ny3;       /* the gradient of the pooled result */
    uint IW, IH, C, N, nx0, nx1, nx2, nx3; /* the forward input */
    uint nd0, nd1, nd2, nd3;
    uint avg;
    int k0, k1, s0, s1, p0, p1;
    uint off_dy, off_x, off_d;
};

/* conv-transpose-1d.comp */
struct vk_pc_conv_transpose_1d {
    uint K, OC, IC, nk0, nk1, nk2; /* kernel [K, OC, IC] */
    uint L, nx0, nx1, nx2;         /* data [L, IC, N] */
    uint OL, N, nd0, nd1, nd2;     /* result [OL, OC, N] */
    int s0, p0, d0;
    uint off_k, off_x, off_d;
};

/* ssm-conv.comp: Mamba's short causal convolution. */
struct vk_pc_ssm_conv {
    uint d_conv, d_inner, n_t, n_s;
    uint nx0, nx1, nx2, nc0, nc1, nd0, nd1, nd2;
    uint off_x, off_c, off_d;
};

/* getrows.comp: rows of a chosen by the indices (strides of a in its address units). */
struct vk_pc_getrows {
    uint nb00, nb01, nb02, nb03;
    uint nbi0, nbi1, nbi2;
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3; /* d */
    uint off_a, off_i, off_d;
    uint rows_a;                                 /* a->ne[1]: the indices' range */
};

/* get-rows-back.comp: the gradient rows of dy added into the rows the indices chose. */
struct vk_pc_get_rows_back {
    uint ne0, n_rows, n_idx;
    uint ny0, ny1, ni0, nd0, nd1;
    uint off_dy, off_i, off_d;
};

/* cpy-words.comp: whole block rows moved as 16-bit words. */
struct vk_pc_cpy_words {
    uint ne0, ne1, ne2, ne3; /* d; ne0: words per row */
    uint nb01, nb02, nb03, nb1, nb2, nb3;
    uint off_a, off_d;
    uint ne01, ne02;         /* a's rows per dims 1, 2 */
};

/* cpy-dequant.comp: a block format into f32 (or contiguous f16 for the coopmat GEMM). */
struct vk_pc_cpy_dequant {
    uint ne00, ne01, ne02, ne03, nb01, nb02, nb03; /* a (row strides in its address units) */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;   /* d */
    uint off_a, off_d;
};

/* cpy-quant.comp: f32, f16 or bf16 into a block format, by copy or (SET_ROWS) by index. */
struct vk_pc_cpy_quant {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint nblk0, ne1, ne2, ne3, nb1, nb2, nb3;            /* d's rows in blocks, strides in words */
    uint nei1, nei2, nbi0, nbi1, nbi2;                   /* the indices (SET_ROWS) */
    uint off_a, off_i, off_d;
    uint zero;   /* left 0 by the host: quantize.glsl's QUANT_OPAQUE_ZERO */
    uint rows_d; /* SET_ROWS: the destination's rows, the indices' range */
};

/* setrows.comp: rows of b stored into the float rows of d the indices choose. */
struct vk_pc_setrows {
    uint ne10, ne11, ne12, ne13, nb10, nb11, nb12, nb13; /* b */
    uint nei1, nei2, nbi0, nbi1, nbi2;
    uint nb0, nb1, nb2, nb3;
    uint off_b, off_i, off_d;
    uint rows_d; /* d->ne[1]: the indices' range */
};

/* concat.comp: a and b joined along dim. */
struct vk_pc_concat {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint nb10, nb11, nb12, nb13;                         /* b */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_b, off_d, dim;
};

/* pad.comp: zeros around a; lp*: the padding before each dimension. */
struct vk_pc_pad {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;         /* d */
    uint off_a, off_d;
    uint lp0, lp1, lp2, lp3;
};

/* topk-select.comp: the k largest of each row by rounds of selection, rounds [j_begin, j_end). */
struct vk_pc_topk_select {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint k, nb1, nb2, nb3;
    uint off_a, off_d;
    uint j_begin, j_end;
};

/* argsort.comp: a bitonic sort of each row padded to npad. */
struct vk_pc_argsort {
    uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03; /* a */
    uint ne0, nb1, nb2, nb3;
    uint off_a, off_d, npad, desc;
};

/* glu.comp: d = x * act(g); x and g two tensors, or the halves of one row (shift_a/shift_b). */
struct vk_pc_glu {
    uint nb01, nb02, nb03, nb11, nb12, nb13; /* row strides of x and g (unit stride inside rows) */
    uint ne0, ne1, ne2, ne3, nb1, nb2, nb3;  /* d */
    uint off_a, off_b, off_d, op, shift_a, shift_b;
    float alpha, limit;                      /* swiglu_oai's */
    uint off_q, off_s;                       /* glu_q8_f32: d's rows quantized, as rows_mul_q8_f32's */
};

/* unary-back.comp: d = dy * f'(x), element-wise; strides in f32 elements. */
struct vk_pc_unary_back {
    uint ne0, ne1, ne2, ne3;
    uint nx0, nx1, nx2, nx3; /* x */
    uint ny0, ny1, ny2, ny3; /* dy */
    uint nd0, nd1, nd2, nd3; /* d */
    uint off_x, off_dy, off_d, op;
    float p0, p1, p2, p3;    /* xIELU's parameters */
};

/* add-id.comp: d = a + the rows of b that ids choose; strides in f32 (i32) elements. */
struct vk_pc_add_id {
    uint ne0, ne1, ne2;
    uint na0, na1, na2;         /* a */
    uint nb0, nb1, n_rows_b;    /* b */
    uint ni0, ni1;              /* ids */
    uint nd0, nd1, nd2;         /* d */
    uint off_a, off_b, off_i, off_d;
};

/* acc.comp: b added into (or, assign, set into) the view of d at element off_view with row
 * strides v1, v2, v3. */
struct vk_pc_acc {
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3; /* b */
    uint v1, v2, v3, off_view, assign;
    uint off_b, off_d;
};

#ifdef __STDC__
#undef uint
#endif

#endif /* VK_PUSH_CONSTANTS_H */
