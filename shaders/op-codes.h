/*
 * op-codes.h - operation codes shared by the C side of the Vulkan plugin and
 * the GLSL shaders (plain #defines, valid in both languages).
 */
#ifndef VK_OP_CODES_H
#define VK_OP_CODES_H

/* binary.comp */
#define VK_BIN_ADD 0
#define VK_BIN_SUB 1
#define VK_BIN_MUL 2
#define VK_BIN_DIV 3
#define VK_BIN_SILU_BACK 4 /* a = dy, b = x: dy * s * (1 + x (1 - s)), s = sigmoid(x) */

/* unary.comp: p0..p3 are float parameters */
#define VK_UN_COPY        0
#define VK_UN_NEG         1
#define VK_UN_ABS         2
#define VK_UN_SGN         3
#define VK_UN_STEP        4
#define VK_UN_TANH        5
#define VK_UN_ELU         6
#define VK_UN_RELU        7
#define VK_UN_SIGMOID     8
#define VK_UN_GELU        9
#define VK_UN_GELU_QUICK  10
#define VK_UN_SILU        11
#define VK_UN_HARDSWISH   12
#define VK_UN_HARDSIGMOID 13
#define VK_UN_EXP         14
#define VK_UN_EXPM1       15
#define VK_UN_SOFTPLUS    16
#define VK_UN_GELU_ERF    17
#define VK_UN_FLOOR       18
#define VK_UN_CEIL        19
#define VK_UN_ROUND       20
#define VK_UN_TRUNC       21
#define VK_UN_SQR         22
#define VK_UN_SQRT        23
#define VK_UN_LOG         24
#define VK_UN_SIN         25
#define VK_UN_COS         26
#define VK_UN_SCALE       27 /* x * p0 + p1 */
#define VK_UN_CLAMP       28 /* min(max(x, p0), p1) */
#define VK_UN_LEAKY_RELU  29 /* x > 0 ? x : p0 * x */
#define VK_UN_FILL        30 /* p0 */
#define VK_UN_DIAG_MASK   31 /* i0 > i1 + n_past (push word n_past) ? p0 : x */
#define VK_UN_XIELU       32 /* p0..p3: alpha_n, alpha_p, beta, eps */
#define VK_UN_TRI         33 /* x inside the triangle of type n_past (enum ggml_tri_type), else 0 */
#define VK_UN_DIAG        34 /* i0 == i1 ? x : 0, x read with i1 = 0 (mode 1) */
#define VK_UN_ARANGE      35 /* p0 + p2 * i0, nothing read */

/* unary.comp modes: where element i of d reads a */
#define VK_UN_MODE_FLAT    0 /* element k of d reads element k of a (cpy/cont/reshape) */
#define VK_UN_MODE_REPEAT  1 /* a repeated over d's shape */
#define VK_UN_MODE_ROLL    2 /* cyclic shift by push words shift0..3, each in [0, ne) */
#define VK_UN_MODE_REFLECT 3 /* dimension 0 padded by reflection, shift0 = left padding */

/* glu.comp */
#define VK_GLU_REGLU       0
#define VK_GLU_GEGLU       1
#define VK_GLU_SWIGLU      2
#define VK_GLU_SWIGLU_OAI  3
#define VK_GLU_GEGLU_ERF   4
#define VK_GLU_GEGLU_QUICK 5

/* reduce-rows.comp */
#define VK_ROW_SUM      0 /* sum of the row */
#define VK_ROW_MEAN     1
#define VK_ROW_NORM     2 /* (x - mean) / sqrt(var + eps) */
#define VK_ROW_RMS_NORM 3 /* x / sqrt(mean(x^2) + eps) */
#define VK_ROW_L2_NORM  4 /* x / max(|x|, eps) */
#define VK_ROW_ARGMAX   5
#define VK_ROW_CUMSUM   6 /* inclusive prefix sums along the row (d has a's shape) */
#define VK_ROW_KEEP     8 /* values of a row each invocation holds in registers */

#endif
