/*
 * op-table.c - the one table that describes every operator: name, symbol,
 * operand count, whether its result may overwrite src[0], whether a
 * backward rule exists.  Backends, the allocator and autograd read it.
 */
#include "ggml-impl.h"

#define OP(id, name_, sym, nsrc, inpl, diff) [GGML_OP_##id] = {name_, sym, nsrc, inpl, diff}

static const struct ggmlc_op_info op_table[GGML_OP_COUNT] = {
    OP(NONE, "NONE", "none", 0, false, false),
    OP(DUP, "DUP", "x", 1, true, true),
    OP(ADD, "ADD", "x+y", 2, true, true),
    OP(ADD_ID, "ADD_ID", "x+y[ids]", 3, true, false),
    OP(ADD1, "ADD1", "x+y", 2, true, true),
    OP(ACC, "ACC", "view(x,nb,offset)+=y->x", 2, true, true),
    OP(SUB, "SUB", "x-y", 2, true, true),
    OP(MUL, "MUL", "x*y", 2, true, true),
    OP(DIV, "DIV", "x/y", 2, true, true),
    OP(SQR, "SQR", "x^2", 1, true, true),
    OP(SQRT, "SQRT", "sqrt(x)", 1, true, true),
    OP(LOG, "LOG", "log(x)", 1, true, true),
    OP(SIN, "SIN", "sin(x)", 1, true, true),
    OP(COS, "COS", "cos(x)", 1, true, true),
    OP(SUM, "SUM", "sum(x)", 1, false, true),
    OP(SUM_ROWS, "SUM_ROWS", "sum_rows(x)", 1, false, true),
    OP(CUMSUM, "CUMSUM", "cumsum(x)", 1, false, true),
    OP(MEAN, "MEAN", "mean(x)", 1, false, true),
    OP(ARGMAX, "ARGMAX", "argmax(x)", 1, false, false),
    OP(COUNT_EQUAL, "COUNT_EQUAL", "count_equal(x)", 2, false, false),
    OP(REPEAT, "REPEAT", "repeat(x)", 1, false, true),
    OP(REPEAT_BACK, "REPEAT_BACK", "repeat_back(x)", 1, false, true),
    OP(CONCAT, "CONCAT", "concat(x, y)", 2, false, true),
    OP(SILU_BACK, "SILU_BACK", "silu_back(x)", 2, false, false),
    OP(NORM, "NORM", "norm(x)", 1, true, true),
    OP(RMS_NORM, "RMS_NORM", "rms_norm(x)", 1, true, true),
    OP(RMS_NORM_BACK, "RMS_NORM_BACK", "rms_norm_back(x)", 2, false, false),
    OP(GROUP_NORM, "GROUP_NORM", "group_norm(x)", 1, true, true),
    OP(L2_NORM, "L2_NORM", "l2_norm(x)", 1, true, true),
    OP(MUL_MAT, "MUL_MAT", "X*Y", 2, false, true),
    OP(MUL_MAT_ID, "MUL_MAT_ID", "X[i]*Y", 3, false, false),
    OP(OUT_PROD, "OUT_PROD", "X*Y", 2, false, true),
    OP(SCALE, "SCALE", "x*v", 1, true, true),
    OP(SET, "SET", "y-\\>view(x)", 2, true, true),
    OP(CPY, "CPY", "x-\\>y", 2, false, true),
    OP(CONT, "CONT", "cont(x)", 1, false, true),
    OP(RESHAPE, "RESHAPE", "reshape(x)", 1, false, true),
    OP(VIEW, "VIEW", "view(x)", 1, false, true),
    OP(PERMUTE, "PERMUTE", "permute(x)", 1, false, true),
    OP(TRANSPOSE, "TRANSPOSE", "transpose(x)", 1, false, true),
    OP(GET_ROWS, "GET_ROWS", "get_rows(x)", 2, false, true),
    OP(GET_ROWS_BACK, "GET_ROWS_BACK", "get_rows_back(x)", 3, false, false),
    OP(SET_ROWS, "SET_ROWS", "set_rows(x)", 3, true, true),
    OP(DIAG, "DIAG", "diag(x)", 1, false, false),
    OP(DIAG_MASK_INF, "DIAG_MASK_INF", "diag_mask_inf(x)", 1, true, true),
    OP(DIAG_MASK_ZERO, "DIAG_MASK_ZERO", "diag_mask_zero(x)", 1, true, true),
    OP(SOFT_MAX, "SOFT_MAX", "soft_max(x)", 3, true, true),
    OP(SOFT_MAX_BACK, "SOFT_MAX_BACK", "soft_max_back(x)", 2, true, false),
    OP(ROPE, "ROPE", "rope(x)", 3, true, true),
    OP(ROPE_BACK, "ROPE_BACK", "rope_back(x)", 3, true, true),
    OP(CLAMP, "CLAMP", "clamp(x)", 1, true, true),
    OP(CONV_TRANSPOSE_1D, "CONV_TRANSPOSE_1D", "conv_transpose_1d(x)", 2, false, false),
    OP(IM2COL, "IM2COL", "im2col(x)", 2, false, true),
    OP(IM2COL_BACK, "IM2COL_BACK", "im2col_back(x)", 2, false, false),
    OP(IM2COL_3D, "IM2COL_3D", "im2col_3d(x)", 2, false, false),
    OP(CONV_2D, "CONV_2D", "conv_2d(x)", 2, false, true),
    OP(CONV_3D, "CONV_3D", "conv_3d(x)", 2, false, false),
    OP(CONV_2D_DW, "CONV_2D_DW", "conv_2d_dw(x)", 2, false, false),
    OP(CONV_TRANSPOSE_2D, "CONV_TRANSPOSE_2D", "conv_transpose_2d(x)", 2, false, true),
    OP(POOL_1D, "POOL_1D", "pool_1d(x)", 1, false, true),
    OP(POOL_2D, "POOL_2D", "pool_2d(x)", 1, false, true),
    OP(POOL_2D_BACK, "POOL_2D_BACK", "pool_2d_back(x)", 2, false, false),
    OP(UPSCALE, "UPSCALE", "upscale(x)", 1, false, true),
    OP(PAD, "PAD", "pad(x)", 1, false, true),
    OP(PAD_REFLECT_1D, "PAD_REFLECT_1D", "pad_reflect_1d(x)", 1, false, false),
    OP(ROLL, "ROLL", "roll(x)", 1, false, false),
    OP(ARANGE, "ARANGE", "arange(start, stop, step)", 0, false, false),
    OP(TIMESTEP_EMBEDDING, "TIMESTEP_EMBEDDING", "timestep_embedding(timesteps, dim, max_period)", 1, false, false),
    OP(ARGSORT, "ARGSORT", "argsort(x)", 1, false, false),
    OP(LEAKY_RELU, "LEAKY_RELU", "leaky_relu(x)", 1, true, true),
    OP(TRI, "TRI", "tri(x)", 1, false, true),
    OP(FILL, "FILL", "fill(x, c)", 1, true, false),
    OP(FLASH_ATTN_EXT, "FLASH_ATTN_EXT", "flash_attn_ext(x)", 5, false, true),
    OP(FLASH_ATTN_BACK, "FLASH_ATTN_BACK", "flash_attn_back(x)", 4, false, false),
    OP(SSM_CONV, "SSM_CONV", "ssm_conv(x)", 2, false, false),
    OP(SSM_SCAN, "SSM_SCAN", "ssm_scan(x)", 7, false, false),
    OP(WIN_PART, "WIN_PART", "win_part(x)", 1, false, false),
    OP(WIN_UNPART, "WIN_UNPART", "win_unpart(x)", 1, false, false),
    OP(GET_REL_POS, "GET_REL_POS", "get_rel_pos(x)", 1, false, false),
    OP(ADD_REL_POS, "ADD_REL_POS", "add_rel_pos(x)", 3, true, false),
    OP(RWKV_WKV6, "RWKV_WKV6", "rwkv_wkv6(k, v, r, tf, td, s)", 6, false, false),
    OP(GATED_LINEAR_ATTN, "GATED_LINEAR_ATTN", "gated_linear_attn(k, v, q, gate, s)", 5, false, false),
    OP(RWKV_WKV7, "RWKV_WKV7", "rwkv_wkv7(r, w, k, v, a, b, s)", 7, false, false),
    OP(SOLVE_TRI, "SOLVE_TRI", "A X = B, A triangular, solve X", 2, false, false),
    OP(UNARY, "UNARY", "unary(x)", 1, true, true),
    OP(MAP_CUSTOM1, "MAP_CUSTOM1", "map_custom(x)", 1, true, false),
    OP(MAP_CUSTOM2, "MAP_CUSTOM2", "map_custom(x,y)", 2, true, false),
    OP(MAP_CUSTOM3, "MAP_CUSTOM3", "map_custom(x,y,z)", 3, true, false),
    OP(CUSTOM, "CUSTOM", "custom(x)", -1, true, false),
    OP(CROSS_ENTROPY_LOSS, "CROSS_ENTROPY_LOSS", "cross_entropy_loss(x,y)", 2, false, true),
    OP(CROSS_ENTROPY_LOSS_BACK, "CROSS_ENTROPY_LOSS_BACK", "cross_entropy_loss_back(x,y)", 3, false, false),
    OP(OPT_STEP_ADAMW, "OPT_STEP_ADAMW", "adamw(x)", 5, true, false),
    OP(OPT_STEP_SGD, "OPT_STEP_SGD", "sgd(x)", 3, true, false),
    OP(GLU, "GLU", "glu(x)", 2, false, true),
    OP(TOP_K, "TOP_K", "top_k(x)", 1, false, false),
    OP(COL2IM_1D, "COL2IM_1D", "col2im_1d(x)", 1, false, false),
    OP(UNARY_BACK, "UNARY_BACK", "unary_back(x, dy)", 2, false, false),
    OP(GATED_DELTA_NET, "GATED_DELTA_NET", "gated_delta_net(q, k, v, g, beta, s)", 6, false, false),
    OP(LIGHTNING_INDEXER, "LIGHTNING_INDEXER", "lightning_indexer(q, k, w, mask)", 4, false, false),
    OP(DSV4_HC_COMB, "DSV4_HC_COMB", "dsv4_hc_comb(mixes, scale, base)", 3, false, false),
    OP(DSV4_HC_PRE, "DSV4_HC_PRE", "dsv4_hc_pre(x, w)", 2, false, false),
    OP(DSV4_HC_POST, "DSV4_HC_POST", "dsv4_hc_post(x, residual, post, comb)", 4, false, false),
    OP(QUANTIZE_I8_CONVROT, "QUANTIZE_I8_CONVROT", "quantize_i8_convrot(x)", 1, false, false),
};

static const char *const unary_names[GGML_UNARY_OP_COUNT] = {
    "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK", "SILU",
    "HARDSWISH", "HARDSIGMOID", "EXP", "EXPM1", "SOFTPLUS", "GELU_ERF", "XIELU", "FLOOR", "CEIL", "ROUND", "TRUNC",
};

static const char *const glu_names[GGML_GLU_OP_COUNT] = {
    "REGLU", "GEGLU", "SWIGLU", "SWIGLU_OAI", "GEGLU_ERF", "GEGLU_QUICK",
};

const struct ggmlc_op_info *ggmlc_op_get_info(enum ggml_op op) {
    static const struct ggmlc_op_info unknown = {"UNKNOWN", "?", 0, false, false};
    return (unsigned)op < GGML_OP_COUNT && op_table[op].name ? &op_table[op] : &unknown;
}

const char *ggml_op_name(enum ggml_op op) { return ggmlc_op_get_info(op)->name; }
const char *ggml_op_symbol(enum ggml_op op) { return ggmlc_op_get_info(op)->symbol; }

const char *ggml_unary_op_name(enum ggml_unary_op op) {
    return (unsigned)op < GGML_UNARY_OP_COUNT ? unary_names[op] : "UNKNOWN";
}

const char *ggml_glu_op_name(enum ggml_glu_op op) {
    return (unsigned)op < GGML_GLU_OP_COUNT ? glu_names[op] : "UNKNOWN";
}

const char *ggml_op_desc(const struct ggml_tensor *t) {
    if (t->op == GGML_OP_UNARY) return ggml_unary_op_name(ggml_get_unary_op(t));
    if (t->op == GGML_OP_GLU) return ggml_glu_op_name(ggml_get_glu_op(t));
    return ggml_op_name(t->op);
}

bool ggmlc_op_is_view(enum ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_RESHAPE || op == GGML_OP_VIEW || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}
