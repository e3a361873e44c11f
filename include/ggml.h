/*
 * ggml.h - tensors, contexts, operators and computation graphs.
 *
 * ggmlc implements ggml's public C API: a program written against ggml's
 * ggml.h compiles and runs against this header unchanged.  The model:
 *
 *   - a context (ggml_init) owns a memory arena holding tensor metadata and,
 *     unless no_alloc is set, tensor data;
 *   - operator constructors (ggml_add, ggml_mul_mat, ...) check shapes and
 *     types and append a node to a lazily evaluated expression graph; they
 *     never compute.  On bad input they log one message, record it as the
 *     thread's last error (ggmlc_last_error in ggmlc.h) and return NULL; every
 *     constructor accepts NULL operands and returns NULL, so a chain of calls
 *     fails once, at the first mistake;
 *   - ggml_build_forward_expand collects the nodes into a ggml_cgraph, which a
 *     backend (ggml-backend.h) or the CPU helpers (ggml-cpu.h) compute.
 *
 * Tensors have up to four dimensions, ne[0] being the fastest varying one;
 * nb[] holds byte strides, so views, permutations and transpositions are
 * free.  Binary operators broadcast their second operand over the first by
 * repetition: every b->ne[i] must divide a->ne[i].
 */
#ifndef GGML_H
#define GGML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#    define GGML_API __attribute__((visibility("default"))) extern
#    define GGML_DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#    define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(printf, __VA_ARGS__)))
#else
#    define GGML_API extern
#    define GGML_DEPRECATED(func, hint) func
#    define GGML_ATTRIBUTE_FORMAT(...)
#endif

#define GGML_FILE_MAGIC   0x67676d6c /* "ggml" */
#define GGML_FILE_VERSION 2

#define GGML_QNT_VERSION        2
#define GGML_QNT_VERSION_FACTOR 1000

#define GGML_MAX_DIMS           4
#define GGML_MAX_PARAMS         2048
#define GGML_MAX_SRC            10
#define GGML_MAX_N_THREADS      512
#define GGML_MAX_OP_PARAMS      64
#ifndef GGML_MAX_NAME
#    define GGML_MAX_NAME       128
#endif

#define GGML_DEFAULT_N_THREADS  4
#define GGML_DEFAULT_GRAPH_SIZE 2048
#define GGML_MEM_ALIGN          16

#define GGML_EXIT_SUCCESS 0
#define GGML_EXIT_ABORTED 1

/* rope modes (the mode argument of the rope constructors) */
#define GGML_ROPE_TYPE_NORMAL 0
#define GGML_ROPE_TYPE_NEOX   2
#define GGML_ROPE_TYPE_MROPE  8
#define GGML_ROPE_TYPE_VISION 24
#define GGML_ROPE_TYPE_IMROPE 40
#define GGML_MROPE_SECTIONS   4

/* padding of the mask's second dimension expected by flash_attn_ext */
#define GGML_KQ_MASK_PAD 64

/* n_tasks value of the custom operators meaning "as many threads as there are" */
#define GGML_N_TASKS_MAX (-1)

#define GGML_UNUSED(x) (void)(x)
#define GGML_UNUSED_VARS(...) do { (void)sizeof((__VA_ARGS__, 0)); } while (0)
#define GGML_PAD(x, n) (((x) + (n) - 1) & ~((n) - 1))

#ifdef __cplusplus
#    define GGML_NORETURN [[noreturn]]
#    define GGML_RESTRICT __restrict__
#else
#    define GGML_NORETURN _Noreturn
#    define GGML_RESTRICT restrict
#endif

#define GGML_UNREACHABLE() GGML_ABORT("statement should be unreachable")
#define GGML_ABORT(...) ggml_abort(__FILE__, __LINE__, __VA_ARGS__)
#define GGML_ASSERT(x) if (!(x)) GGML_ABORT("GGML_ASSERT(%s) failed", #x)

/* Copy ne/nb of a tensor into local variables prefix0..prefix3. */
#define GGML_TENSOR_LOCALS_1(type, prefix, pointer, array) \
    const type prefix##0 = (pointer) ? (pointer)->array[0] : 0; GGML_UNUSED(prefix##0);
#define GGML_TENSOR_LOCALS_2(type, prefix, pointer, array) GGML_TENSOR_LOCALS_1(type, prefix, pointer, array) \
    const type prefix##1 = (pointer) ? (pointer)->array[1] : 0; GGML_UNUSED(prefix##1);
#define GGML_TENSOR_LOCALS_3(type, prefix, pointer, array) GGML_TENSOR_LOCALS_2(type, prefix, pointer, array) \
    const type prefix##2 = (pointer) ? (pointer)->array[2] : 0; GGML_UNUSED(prefix##2);
#define GGML_TENSOR_LOCALS(type, prefix, pointer, array) GGML_TENSOR_LOCALS_3(type, prefix, pointer, array) \
    const type prefix##3 = (pointer) ? (pointer)->array[3] : 0; GGML_UNUSED(prefix##3);

#define GGML_TENSOR_UNARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) GGML_TENSOR_LOCALS(size_t, nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne,  dst,  ne) GGML_TENSOR_LOCALS(size_t, nb,  dst,  nb)
#define GGML_TENSOR_BINARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) GGML_TENSOR_LOCALS(size_t, nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) GGML_TENSOR_LOCALS(size_t, nb1, src1, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne,  dst,  ne) GGML_TENSOR_LOCALS(size_t, nb,  dst,  nb)
#define GGML_TENSOR_TERNARY_OP_LOCALS \
    GGML_TENSOR_BINARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne2, src2, ne) GGML_TENSOR_LOCALS(size_t, nb2, src2, nb)
#define GGML_TENSOR_BINARY_OP_LOCALS01 \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) GGML_TENSOR_LOCALS(size_t, nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) GGML_TENSOR_LOCALS(size_t, nb1, src1, nb)

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

/* Called with the message before abort() on a broken internal invariant. */
typedef void (*ggml_abort_callback_t)(const char *error_message);
/* Install an abort callback (NULL restores the default); returns the old one. */
GGML_API ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback);
/* Report a broken internal invariant and abort; never used for user input. */
GGML_NORETURN GGML_ATTRIBUTE_FORMAT(3, 4)
GGML_API void ggml_abort(const char *file, int line, const char *fmt, ...);

enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2,
    GGML_STATUS_FAILED       = -1,
    GGML_STATUS_SUCCESS      =  0,
    GGML_STATUS_ABORTED      =  1,
};
/* A short English description of a status. */
GGML_API const char *ggml_status_to_string(enum ggml_status status);

/* ------------------------------------------------------ half precision */

/* IEEE 754 binary16, stored as its bit pattern. */
typedef uint16_t ggml_fp16_t;
/* Convert one value or a row of n values between f16 and f32 (round to nearest even). */
GGML_API float       ggml_fp16_to_fp32(ggml_fp16_t x);
GGML_API ggml_fp16_t ggml_fp32_to_fp16(float x);
GGML_API void        ggml_fp16_to_fp32_row(const ggml_fp16_t *x, float *y, int64_t n);
GGML_API void        ggml_fp32_to_fp16_row(const float *x, ggml_fp16_t *y, int64_t n);

/* bfloat16: the upper half of an f32. */
typedef struct { uint16_t bits; } ggml_bf16_t;
/* Convert between bf16 and f32 (round to nearest even; NaN stays NaN). */
GGML_API ggml_bf16_t ggml_fp32_to_bf16(float x);
GGML_API float       ggml_bf16_to_fp32(ggml_bf16_t x);
GGML_API void        ggml_bf16_to_fp32_row(const ggml_bf16_t *x, float *y, int64_t n);
GGML_API void        ggml_fp32_to_bf16_row_ref(const float *x, ggml_bf16_t *y, int64_t n);
GGML_API void        ggml_fp32_to_bf16_row(const float *x, ggml_bf16_t *y, int64_t n);

struct ggml_object;
struct ggml_context;
struct ggml_cgraph;

/* Element types.  The numbers are those of ggml and of GGUF files: never renumber. */
enum ggml_type {
    GGML_TYPE_F32     = 0,
    GGML_TYPE_F16     = 1,
    GGML_TYPE_Q4_0    = 2,
    GGML_TYPE_Q4_1    = 3,
    GGML_TYPE_Q5_0    = 6,
    GGML_TYPE_Q5_1    = 7,
    GGML_TYPE_Q8_0    = 8,
    GGML_TYPE_Q8_1    = 9,
    GGML_TYPE_Q2_K    = 10,
    GGML_TYPE_Q3_K    = 11,
    GGML_TYPE_Q4_K    = 12,
    GGML_TYPE_Q5_K    = 13,
    GGML_TYPE_Q6_K    = 14,
    GGML_TYPE_Q8_K    = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS  = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S   = 19,
    GGML_TYPE_IQ4_NL  = 20,
    GGML_TYPE_IQ3_S   = 21,
    GGML_TYPE_IQ2_S   = 22,
    GGML_TYPE_IQ4_XS  = 23,
    GGML_TYPE_I8      = 24,
    GGML_TYPE_I16     = 25,
    GGML_TYPE_I32     = 26,
    GGML_TYPE_I64     = 27,
    GGML_TYPE_F64     = 28,
    GGML_TYPE_IQ1_M   = 29,
    GGML_TYPE_BF16    = 30,
    GGML_TYPE_TQ1_0   = 34,
    GGML_TYPE_TQ2_0   = 35,
    GGML_TYPE_MXFP4   = 39,
    GGML_TYPE_NVFP4   = 40, /* layout and size known; no conversion yet */
    GGML_TYPE_Q1_0    = 41, /* layout and size known; no conversion yet */
    GGML_TYPE_Q2_0    = 42, /* layout and size known; no conversion yet */
    GGML_TYPE_COUNT   = 43,
};

/* Precision of a matrix product or of flash attention (stored in op_params). */
enum ggml_prec {
    GGML_PREC_DEFAULT = 0,
    GGML_PREC_F32     = 10,
};

/* Whole-model file types of the legacy ggml file format. */
enum ggml_ftype {
    GGML_FTYPE_UNKNOWN              = -1,
    GGML_FTYPE_ALL_F32              = 0,
    GGML_FTYPE_MOSTLY_F16           = 1,
    GGML_FTYPE_MOSTLY_Q4_0          = 2,
    GGML_FTYPE_MOSTLY_Q4_1          = 3,
    GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 = 4,
    GGML_FTYPE_MOSTLY_Q8_0          = 7,
    GGML_FTYPE_MOSTLY_Q5_0          = 8,
    GGML_FTYPE_MOSTLY_Q5_1          = 9,
    GGML_FTYPE_MOSTLY_Q2_K          = 10,
    GGML_FTYPE_MOSTLY_Q3_K          = 11,
    GGML_FTYPE_MOSTLY_Q4_K          = 12,
    GGML_FTYPE_MOSTLY_Q5_K          = 13,
    GGML_FTYPE_MOSTLY_Q6_K          = 14,
    GGML_FTYPE_MOSTLY_IQ2_XXS       = 15,
    GGML_FTYPE_MOSTLY_IQ2_XS        = 16,
    GGML_FTYPE_MOSTLY_IQ3_XXS       = 17,
    GGML_FTYPE_MOSTLY_IQ1_S         = 18,
    GGML_FTYPE_MOSTLY_IQ4_NL        = 19,
    GGML_FTYPE_MOSTLY_IQ3_S         = 20,
    GGML_FTYPE_MOSTLY_IQ2_S         = 21,
    GGML_FTYPE_MOSTLY_IQ4_XS        = 22,
    GGML_FTYPE_MOSTLY_IQ1_M         = 23,
    GGML_FTYPE_MOSTLY_BF16          = 24,
    GGML_FTYPE_MOSTLY_MXFP4         = 25,
    GGML_FTYPE_MOSTLY_NVFP4         = 26,
    GGML_FTYPE_MOSTLY_Q1_0          = 27,
    GGML_FTYPE_MOSTLY_Q2_0          = 28,
};

/* Hints a matrix product may use (ggml_mul_mat_set_hint); a backend may ignore them. */
enum ggml_op_hint {
    GGML_HINT_NONE             = 0,
    GGML_HINT_SRC0_IS_HADAMARD = 1, /* the weights are a Hadamard matrix */
};

/*
 * Graph operators.  The plugin ABI indexes backends' op vtables by this
 * enum, so new operators are only ever appended before GGML_OP_COUNT
 * (a reordering is a plugin ABI major change).
 */
enum ggml_op {
    GGML_OP_NONE = 0,

    GGML_OP_DUP,
    GGML_OP_ADD,
    GGML_OP_ADD_ID,
    GGML_OP_ADD1,
    GGML_OP_ACC,
    GGML_OP_SUB,
    GGML_OP_MUL,
    GGML_OP_DIV,
    GGML_OP_SQR,
    GGML_OP_SQRT,
    GGML_OP_LOG,
    GGML_OP_SIN,
    GGML_OP_COS,
    GGML_OP_SUM,
    GGML_OP_SUM_ROWS,
    GGML_OP_CUMSUM,
    GGML_OP_MEAN,
    GGML_OP_ARGMAX,
    GGML_OP_COUNT_EQUAL,
    GGML_OP_REPEAT,
    GGML_OP_REPEAT_BACK,
    GGML_OP_CONCAT,
    GGML_OP_SILU_BACK,
    GGML_OP_NORM,
    GGML_OP_RMS_NORM,
    GGML_OP_RMS_NORM_BACK,
    GGML_OP_GROUP_NORM,
    GGML_OP_L2_NORM,

    GGML_OP_MUL_MAT,
    GGML_OP_MUL_MAT_ID,
    GGML_OP_OUT_PROD,

    GGML_OP_SCALE,
    GGML_OP_SET,
    GGML_OP_CPY,
    GGML_OP_CONT,
    GGML_OP_RESHAPE,
    GGML_OP_VIEW,
    GGML_OP_PERMUTE,
    GGML_OP_TRANSPOSE,
    GGML_OP_GET_ROWS,
    GGML_OP_GET_ROWS_BACK,
    GGML_OP_SET_ROWS,
    GGML_OP_DIAG,
    GGML_OP_DIAG_MASK_INF,
    GGML_OP_DIAG_MASK_ZERO,
    GGML_OP_SOFT_MAX,
    GGML_OP_SOFT_MAX_BACK,
    GGML_OP_ROPE,
    GGML_OP_ROPE_BACK,
    GGML_OP_CLAMP,
    GGML_OP_CONV_TRANSPOSE_1D,
    GGML_OP_IM2COL,
    GGML_OP_IM2COL_BACK,
    GGML_OP_IM2COL_3D,
    GGML_OP_CONV_2D,
    GGML_OP_CONV_3D,
    GGML_OP_CONV_2D_DW,
    GGML_OP_CONV_TRANSPOSE_2D,
    GGML_OP_POOL_1D,
    GGML_OP_POOL_2D,
    GGML_OP_POOL_2D_BACK,
    GGML_OP_UPSCALE,
    GGML_OP_PAD,
    GGML_OP_PAD_REFLECT_1D,
    GGML_OP_ROLL,
    GGML_OP_ARANGE,
    GGML_OP_TIMESTEP_EMBEDDING,
    GGML_OP_ARGSORT,
    GGML_OP_LEAKY_RELU,
    GGML_OP_TRI,
    GGML_OP_FILL,

    GGML_OP_FLASH_ATTN_EXT,
    GGML_OP_FLASH_ATTN_BACK,
    GGML_OP_SSM_CONV,
    GGML_OP_SSM_SCAN,
    GGML_OP_WIN_PART,
    GGML_OP_WIN_UNPART,
    GGML_OP_GET_REL_POS,
    GGML_OP_ADD_REL_POS,
    GGML_OP_RWKV_WKV6,
    GGML_OP_GATED_LINEAR_ATTN,
    GGML_OP_RWKV_WKV7,
    GGML_OP_SOLVE_TRI,

    GGML_OP_UNARY,

    GGML_OP_MAP_CUSTOM1,
    GGML_OP_MAP_CUSTOM2,
    GGML_OP_MAP_CUSTOM3,

    GGML_OP_CUSTOM,

    GGML_OP_CROSS_ENTROPY_LOSS,
    GGML_OP_CROSS_ENTROPY_LOSS_BACK,
    GGML_OP_OPT_STEP_ADAMW,
    GGML_OP_OPT_STEP_SGD,

    GGML_OP_GLU,

    /* ggmlc additions (appended; see the note above) */
    GGML_OP_TOP_K,
    GGML_OP_COL2IM_1D,
    GGML_OP_UNARY_BACK, /* gradient of a GGML_OP_UNARY function */
    GGML_OP_GATED_DELTA_NET,
    GGML_OP_LIGHTNING_INDEXER, /* DeepSeek's sparse-attention indexer (CPU) */
    GGML_OP_DSV4_HC_COMB,      /* declared for ggml's API; the constructor refuses */
    GGML_OP_DSV4_HC_PRE,       /* declared for ggml's API; the constructor refuses */
    GGML_OP_DSV4_HC_POST,      /* declared for ggml's API; the constructor refuses */
    GGML_OP_QUANTIZE_I8_CONVROT, /* rows rotated in groups, then int8 with one f32 scale per row */

    GGML_OP_COUNT,
};

/* Element-wise functions computed by GGML_OP_UNARY (op_params[0]). */
enum ggml_unary_op {
    GGML_UNARY_OP_ABS,
    GGML_UNARY_OP_SGN,
    GGML_UNARY_OP_NEG,
    GGML_UNARY_OP_STEP,
    GGML_UNARY_OP_TANH,
    GGML_UNARY_OP_ELU,
    GGML_UNARY_OP_RELU,
    GGML_UNARY_OP_SIGMOID,
    GGML_UNARY_OP_GELU,
    GGML_UNARY_OP_GELU_QUICK,
    GGML_UNARY_OP_SILU,
    GGML_UNARY_OP_HARDSWISH,
    GGML_UNARY_OP_HARDSIGMOID,
    GGML_UNARY_OP_EXP,
    GGML_UNARY_OP_EXPM1,
    GGML_UNARY_OP_SOFTPLUS,
    GGML_UNARY_OP_GELU_ERF,
    GGML_UNARY_OP_XIELU,
    GGML_UNARY_OP_FLOOR,
    GGML_UNARY_OP_CEIL,
    GGML_UNARY_OP_ROUND,
    GGML_UNARY_OP_TRUNC,

    GGML_UNARY_OP_COUNT,
};

/* Gated linear units computed by GGML_OP_GLU (op_params[0]; op_params[1] = swapped). */
enum ggml_glu_op {
    GGML_GLU_OP_REGLU,
    GGML_GLU_OP_GEGLU,
    GGML_GLU_OP_SWIGLU,
    GGML_GLU_OP_SWIGLU_OAI,
    GGML_GLU_OP_GEGLU_ERF,
    GGML_GLU_OP_GEGLU_QUICK,

    GGML_GLU_OP_COUNT,
};

enum ggml_object_type {
    GGML_OBJECT_TYPE_TENSOR,
    GGML_OBJECT_TYPE_GRAPH,
    GGML_OBJECT_TYPE_WORK_BUFFER,
};

enum ggml_log_level {
    GGML_LOG_LEVEL_NONE  = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO  = 2,
    GGML_LOG_LEVEL_WARN  = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT  = 5, /* continues the previous message */
};

/* Roles of a tensor in a graph (tensor->flags). */
enum ggml_tensor_flag {
    GGML_TENSOR_FLAG_INPUT  = 1, /* graph input */
    GGML_TENSOR_FLAG_OUTPUT = 2, /* graph output: never overwritten by the allocator */
    GGML_TENSOR_FLAG_PARAM  = 4, /* trainable parameter */
    GGML_TENSOR_FLAG_LOSS   = 8, /* loss to minimise (several add up) */
    GGML_TENSOR_FLAG_COMPUTE = 16, /* must be computed (ggml_build_forward_select) */
};

/* Which triangle ggml_tri keeps. */
enum ggml_tri_type {
    GGML_TRI_TYPE_UPPER_DIAG = 0,
    GGML_TRI_TYPE_UPPER      = 1,
    GGML_TRI_TYPE_LOWER_DIAG = 2,
    GGML_TRI_TYPE_LOWER      = 3,
};

struct ggml_init_params {
    size_t mem_size;   /* arena size in bytes */
    void  *mem_buffer; /* caller-provided arena, or NULL to allocate one */
    bool   no_alloc;   /* metadata only: tensor data lives in backend buffers */
};

/* An n-dimensional tensor; the layout matches ggml's. */
struct ggml_tensor {
    enum ggml_type type;

    struct ggml_backend_buffer *buffer; /* the backend buffer holding data, or NULL */

    int64_t ne[GGML_MAX_DIMS]; /* elements per dimension */
    size_t  nb[GGML_MAX_DIMS]; /* strides in bytes: nb[0] = type size, nb[1] = row size, ... */

    enum ggml_op op;
    int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)]; /* operator parameters */
    int32_t flags;                                          /* enum ggml_tensor_flag */

    struct ggml_tensor *src[GGML_MAX_SRC]; /* operands */

    struct ggml_tensor *view_src;  /* the tensor this one views, or NULL */
    size_t              view_offs; /* byte offset into view_src */

    void *data;

    char name[GGML_MAX_NAME];

    void *extra; /* backend-private data */

    char padding[8];
};

static const size_t GGML_TENSOR_SIZE = sizeof(struct ggml_tensor);

/* Polled during computation; returning true aborts it. */
typedef bool (*ggml_abort_callback)(void *data);

/* ----------------------------------------------------------------- misc */

typedef uint8_t ggml_guid[16];
typedef ggml_guid *ggml_guid_t;
/* True when two GUIDs are equal. */
GGML_API bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b);

/* Library version string and the build's source revision. */
GGML_API const char *ggml_version(void);
GGML_API const char *ggml_commit(void);

/* Monotonic clocks; ggml_time_init is optional and idempotent. */
GGML_API void    ggml_time_init(void);
GGML_API int64_t ggml_time_ms(void);
GGML_API int64_t ggml_time_us(void);
GGML_API int64_t ggml_cycles(void);
GGML_API int64_t ggml_cycles_per_ms(void);

/* fopen that accepts UTF-8 paths. */
GGML_API FILE *ggml_fopen(const char *fname, const char *mode);

/* Print one arena object, or all objects of a context, to the log. */
GGML_API void ggml_print_object(const struct ggml_object *obj);
GGML_API void ggml_print_objects(const struct ggml_context *ctx);

/* Element, row and byte counts of a tensor (nbytes accounts for strides). */
GGML_API int64_t ggml_nelements(const struct ggml_tensor *tensor);
GGML_API int64_t ggml_nrows(const struct ggml_tensor *tensor);
GGML_API size_t  ggml_nbytes(const struct ggml_tensor *tensor);
GGML_API size_t  ggml_nbytes_pad(const struct ggml_tensor *tensor);

/* Block geometry of a type: elements per block, bytes per block, bytes per row of ne elements. */
GGML_API int64_t ggml_blck_size(enum ggml_type type);
GGML_API size_t  ggml_type_size(enum ggml_type type);
GGML_API size_t  ggml_row_size(enum ggml_type type, int64_t ne);

GGML_DEPRECATED(GGML_API double ggml_type_sizef(enum ggml_type type), "use ggml_row_size() instead");

/* Names: "f32", "ADD", "+", "RELU", "SWIGLU"; ggml_op_desc gives the unary or glu name where it applies. */
GGML_API const char *ggml_type_name(enum ggml_type type);
GGML_API const char *ggml_op_name(enum ggml_op op);
GGML_API const char *ggml_op_symbol(enum ggml_op op);
GGML_API const char *ggml_unary_op_name(enum ggml_unary_op op);
GGML_API const char *ggml_glu_op_name(enum ggml_glu_op op);
GGML_API const char *ggml_op_desc(const struct ggml_tensor *t);

/* Bytes of one element (of one block for quantized types). */
GGML_API size_t ggml_element_size(const struct ggml_tensor *tensor);
/* True for block-quantized types. */
GGML_API bool   ggml_is_quantized(enum ggml_type type);
/* The tensor type that a legacy file type stores most tensors in. */
GGML_API enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype);

/* Shape predicates. */
GGML_API bool ggml_is_transposed(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_permuted(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_empty(const struct ggml_tensor *tensor);
/* True when the tensor is a view of another one (view_src set). */
GGML_API bool ggml_is_view(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_scalar(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_vector(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_matrix(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_3d(const struct ggml_tensor *tensor);
GGML_API int  ggml_n_dims(const struct ggml_tensor *tensor); /* 1 for scalars */

/* Contiguity: _0 all dims, _1 dims >= 1, _2 dims >= 2 (rows may be strided below that). */
GGML_API bool ggml_is_contiguous(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_contiguous_0(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_contiguous_1(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_contiguous_2(const struct ggml_tensor *tensor);
/* Contiguity of the low dimensions only: _to_N checks dims < N. */
GGML_API bool ggml_is_contiguous_to_1(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_contiguous_to_2(const struct ggml_tensor *tensor);
GGML_API bool ggml_is_contiguous_to_3(const struct ggml_tensor *tensor);
/* One gap-free block of memory, possibly permuted. */
GGML_API bool ggml_is_contiguously_allocated(const struct ggml_tensor *tensor);
/* Stored as CxWxHxN and permuted to WxHxCxN. */
GGML_API bool ggml_is_contiguous_channels(const struct ggml_tensor *tensor);
/* Elements of dimension 0 are contiguous. */
GGML_API bool ggml_is_contiguous_rows(const struct ggml_tensor *tensor);

GGML_API bool ggml_are_same_shape(const struct ggml_tensor *t0, const struct ggml_tensor *t1);
GGML_API bool ggml_are_same_stride(const struct ggml_tensor *t0, const struct ggml_tensor *t1);
/* True when t0 can be broadcast to t1 by repetition (t1->ne[i] % t0->ne[i] == 0). */
GGML_API bool ggml_can_repeat(const struct ggml_tensor *t0, const struct ggml_tensor *t1);

/* Arena bytes a tensor's metadata takes (add ggml_nbytes for its data). */
GGML_API size_t ggml_tensor_overhead(void);

/* Check that a row of the given type holds no NaN/Inf scales or values. */
GGML_API bool ggml_validate_row_data(enum ggml_type type, const void *data, size_t nbytes);

/* -------------------------------------------------------------- contexts */

/* Create a context; returns NULL (with ggmlc_last_error set) if the arena cannot be allocated. */
GGML_API struct ggml_context *ggml_init(struct ggml_init_params params);
/* Forget every object of the context, keeping its arena. */
GGML_API void ggml_reset(struct ggml_context *ctx);
/* Free the context and the arena it allocated. NULL is ignored. */
GGML_API void ggml_free(struct ggml_context *ctx);

/* Bytes of the arena in use. */
GGML_API size_t ggml_used_mem(const struct ggml_context *ctx);

GGML_API bool   ggml_get_no_alloc(struct ggml_context *ctx);
GGML_API void   ggml_set_no_alloc(struct ggml_context *ctx, bool no_alloc);
GGML_API void  *ggml_get_mem_buffer(const struct ggml_context *ctx);
GGML_API size_t ggml_get_mem_size(const struct ggml_context *ctx);
/* Largest ggml_nbytes of the context's tensors. */
GGML_API size_t ggml_get_max_tensor_size(const struct ggml_context *ctx);

/* New contiguous tensors; NULL on a bad type or size or when the arena is full. */
GGML_API struct ggml_tensor *ggml_new_tensor(struct ggml_context *ctx, enum ggml_type type, int n_dims, const int64_t *ne);
GGML_API struct ggml_tensor *ggml_new_tensor_1d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0);
GGML_API struct ggml_tensor *ggml_new_tensor_2d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1);
GGML_API struct ggml_tensor *ggml_new_tensor_3d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2);
GGML_API struct ggml_tensor *ggml_new_tensor_4d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

/* Raw bytes from the arena (work buffers). */
GGML_API void *ggml_new_buffer(struct ggml_context *ctx, size_t nbytes);

/* A new tensor of the same type and shape; a view sharing src's data. */
GGML_API struct ggml_tensor *ggml_dup_tensor(struct ggml_context *ctx, const struct ggml_tensor *src);
GGML_API struct ggml_tensor *ggml_view_tensor(struct ggml_context *ctx, struct ggml_tensor *src);

/* Iterate over a context's tensors; find one by name. */
GGML_API struct ggml_tensor *ggml_get_first_tensor(const struct ggml_context *ctx);
GGML_API struct ggml_tensor *ggml_get_next_tensor(const struct ggml_context *ctx, struct ggml_tensor *tensor);
GGML_API struct ggml_tensor *ggml_get_tensor(struct ggml_context *ctx, const char *name);

/* Flat element index to coordinates. */
GGML_API void ggml_unravel_index(const struct ggml_tensor *tensor, int64_t i, int64_t *i0, int64_t *i1, int64_t *i2, int64_t *i3);

/* The unary or glu function of a GGML_OP_UNARY / GGML_OP_GLU node. */
GGML_API enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor *tensor);
GGML_API enum ggml_glu_op   ggml_get_glu_op(const struct ggml_tensor *tensor);

GGML_API void  *ggml_get_data(const struct ggml_tensor *tensor);
GGML_API float *ggml_get_data_f32(const struct ggml_tensor *tensor);

/* Tensor names (truncated to GGML_MAX_NAME-1 bytes); set/format return the tensor. */
GGML_API const char        *ggml_get_name(const struct ggml_tensor *tensor);
GGML_API struct ggml_tensor *ggml_set_name(struct ggml_tensor *tensor, const char *name);
GGML_ATTRIBUTE_FORMAT(2, 3)
GGML_API struct ggml_tensor *ggml_format_name(struct ggml_tensor *tensor, const char *fmt, ...);

/* Mark graph roles (see enum ggml_tensor_flag).  A loss must be an F32 scalar, as in ggml
 * (reduce it with ggml_sum or ggml_mean first): another tensor is refused with
 * GGMLC_ERR_SHAPE (or _TYPE) and left unmarked, and ggml_build_backward_expand then fails. */
GGML_API void ggml_set_input(struct ggml_tensor *tensor);
GGML_API void ggml_set_output(struct ggml_tensor *tensor);
GGML_API void ggml_set_param(struct ggml_tensor *tensor);
GGML_API void ggml_set_loss(struct ggml_tensor *tensor);

/* ------------------------------------------------------------- operators
 *
 * Each returns a new node (or, for _inplace variants, a view of the first
 * operand that the computation overwrites), or NULL on bad operands.
 */

/* Copy of a (same type). */
GGML_API struct ggml_tensor *ggml_dup(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_dup_inplace(struct ggml_context *ctx, struct ggml_tensor *a);

/* a + b, b broadcast over a. */
GGML_API struct ggml_tensor *ggml_add(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_add_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* a + b, result of the given type. */
GGML_API struct ggml_tensor *ggml_add_cast(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_type type);
/* dst[i0,i1,i2] = a[i0,i1,i2] + b[i0, ids[i1,i2]]. */
GGML_API struct ggml_tensor *ggml_add_id(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *ids);
/* a + scalar b. */
GGML_API struct ggml_tensor *ggml_add1(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_add1_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* dst = a; view(dst, nb1, nb2, nb3, offset) += b. */
GGML_API struct ggml_tensor *ggml_acc(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
GGML_API struct ggml_tensor *ggml_acc_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
/* a - b, a * b, a / b with b broadcast. */
GGML_API struct ggml_tensor *ggml_sub(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_sub_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_mul(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_mul_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_div(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_div_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);

/* Element-wise math. */
GGML_API struct ggml_tensor *ggml_sqr(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sqr_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sqrt(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sqrt_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_log(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_log_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_expm1(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_expm1_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_softplus(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_softplus_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sin(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sin_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_cos(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_cos_inplace(struct ggml_context *ctx, struct ggml_tensor *a);

/* Reductions: sum of all elements (a 1-element tensor); per-row sums [1,ne1,ne2,ne3]; cumulative sums along rows. */
GGML_API struct ggml_tensor *ggml_sum(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sum_rows(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_cumsum(struct ggml_context *ctx, struct ggml_tensor *a);
/* Per-row mean; per-row index of the maximum (I32); number of equal elements (I64 scalar). */
GGML_API struct ggml_tensor *ggml_mean(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_argmax(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_count_equal(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);

/* Repeat a to the shape of b (or to ne0..ne3); repeat_back sums the repetitions of a into b's shape. */
GGML_API struct ggml_tensor *ggml_repeat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_repeat_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
GGML_API struct ggml_tensor *ggml_repeat_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Concatenate a and b along dimension dim. */
GGML_API struct ggml_tensor *ggml_concat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int dim);

/* Activations (GGML_OP_UNARY). */
GGML_API struct ggml_tensor *ggml_abs(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_abs_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sgn(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sgn_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_neg(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_neg_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_step(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_step_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_tanh(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_tanh_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_elu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_elu_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_relu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_relu_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_leaky_relu(struct ggml_context *ctx, struct ggml_tensor *a, float negative_slope, bool inplace);
GGML_API struct ggml_tensor *ggml_sigmoid(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_sigmoid_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
/* gelu: tanh approximation; gelu_erf: exact; gelu_quick: x*sigmoid(1.702x). */
GGML_API struct ggml_tensor *ggml_gelu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_gelu_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_gelu_erf(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_gelu_erf_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_gelu_quick(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_gelu_quick_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_silu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_silu_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
/* Gradient of silu: a = dy, b = x (ggml's operand order). */
GGML_API struct ggml_tensor *ggml_silu_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* x*relu6(x+3)/6 and relu6(x+3)/6. */
GGML_API struct ggml_tensor *ggml_hardswish(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_hardsigmoid(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_exp(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_exp_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_floor(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_floor_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_ceil(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_ceil_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_round(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_round_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_trunc(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_trunc_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
/* xIELU: x*(softplus(alpha_p)*x + beta) for x > 0, else (expm1(min(x,eps)) - x)*(beta+softplus(alpha_n)) + beta*x. */
GGML_API struct ggml_tensor *ggml_xielu(struct ggml_context *ctx, struct ggml_tensor *a, float alpha_n, float alpha_p, float beta, float eps);
/* ggmlc extension: the gradient of unary function op at x = a given the upstream gradient
 * b = dy, i.e. dy * op'(x).  Autograd uses it for every activation. */
GGML_API struct ggml_tensor *ggml_unary_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_unary_op op);
/* Apply any unary function. */
GGML_API struct ggml_tensor *ggml_unary(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_unary_op op);
GGML_API struct ggml_tensor *ggml_unary_inplace(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_unary_op op);

/* Gated linear units.  One-tensor form: rows of 2n split in halves, value first and
 * gate second (swapped: gate first); result has n columns.  _split: a = value rows, b = gate rows. */
GGML_API struct ggml_tensor *ggml_glu(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_glu_op op, bool swapped);
GGML_API struct ggml_tensor *ggml_reglu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_reglu_swapped(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu_swapped(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_swiglu(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_swiglu_swapped(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu_erf(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu_erf_swapped(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu_quick(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_geglu_quick_swapped(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_glu_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_glu_op op);
GGML_API struct ggml_tensor *ggml_reglu_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_geglu_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_swiglu_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_geglu_erf_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_geglu_quick_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* gpt-oss SwiGLU: x = min(a, limit), g = clamp(b, -limit, limit); x*sigmoid(alpha*x)*(g+1). */
GGML_API struct ggml_tensor *ggml_swiglu_oai(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float alpha, float limit);

/* Normalisations along rows: (x-mean)/sqrt(var+eps); x/sqrt(mean(x^2)+eps); groups of channels; x/max(|x|, eps). */
GGML_API struct ggml_tensor *ggml_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
GGML_API struct ggml_tensor *ggml_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
GGML_API struct ggml_tensor *ggml_rms_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
GGML_API struct ggml_tensor *ggml_rms_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
/* Normalise groups of ne[2]/n_groups channels over ne0*ne1*group elements. */
GGML_API struct ggml_tensor *ggml_group_norm(struct ggml_context *ctx, struct ggml_tensor *a, int n_groups, float eps);
GGML_API struct ggml_tensor *ggml_group_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_groups, float eps);
GGML_API struct ggml_tensor *ggml_l2_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
GGML_API struct ggml_tensor *ggml_l2_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps);
/* Gradient of rms_norm: a = dy, b = x (ggml's operand order). */
GGML_API struct ggml_tensor *ggml_rms_norm_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float eps);

/* Matrix product: a [K, N, B2, B3], b [K, M, B2*x, B3*y] -> [N, M, B2*x, B3*y]
 * (each row of the result is a times a row of b; a is broadcast over b's dims 2 and 3). */
GGML_API struct ggml_tensor *ggml_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Request f32 accumulation for a product node. */
GGML_API void ggml_mul_mat_set_prec(struct ggml_tensor *a, enum ggml_prec prec);
/* Attach a hint to a matrix product node (a must be GGML_OP_MUL_MAT); results do not depend on it. */
GGML_API void ggml_mul_mat_set_hint(struct ggml_tensor *a, enum ggml_op_hint hint);
/* Indirect product (mixture of experts): as [K, N, n_as], b [K, n_used or 1, T], ids I32 [n_used, T]. */
GGML_API struct ggml_tensor *ggml_mul_mat_id(struct ggml_context *ctx, struct ggml_tensor *as, struct ggml_tensor *b, struct ggml_tensor *ids);
/* Outer product: a [M, K], b [P, K] -> [M, P] (sum over K of a column times b column). */
GGML_API struct ggml_tensor *ggml_out_prod(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);

/* s*a; s*a + b. */
GGML_API struct ggml_tensor *ggml_scale(struct ggml_context *ctx, struct ggml_tensor *a, float s);
GGML_API struct ggml_tensor *ggml_scale_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float s);
GGML_API struct ggml_tensor *ggml_scale_bias(struct ggml_context *ctx, struct ggml_tensor *a, float s, float b);
GGML_API struct ggml_tensor *ggml_scale_bias_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float s, float b);

/* Copy of a with view(a, nb1, nb2, nb3, offset) replaced by b (in bytes). */
GGML_API struct ggml_tensor *ggml_set(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
GGML_API struct ggml_tensor *ggml_set_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
GGML_API struct ggml_tensor *ggml_set_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t offset);
GGML_API struct ggml_tensor *ggml_set_1d_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t offset);
GGML_API struct ggml_tensor *ggml_set_2d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t offset);
GGML_API struct ggml_tensor *ggml_set_2d_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t offset);

/* Copy a into b (same element count, converting types); returns a view of b. */
GGML_API struct ggml_tensor *ggml_cpy(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Convert a to another type (f32 -> i32 truncates). */
GGML_API struct ggml_tensor *ggml_cast(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_type type);
/* Contiguous copy of a, optionally with a new shape of the same element count. */
GGML_API struct ggml_tensor *ggml_cont(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_cont_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0);
GGML_API struct ggml_tensor *ggml_cont_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1);
GGML_API struct ggml_tensor *ggml_cont_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2);
GGML_API struct ggml_tensor *ggml_cont_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

/* Views of a contiguous a with a new shape (b gives the shape for ggml_reshape). */
GGML_API struct ggml_tensor *ggml_reshape(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_reshape_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0);
GGML_API struct ggml_tensor *ggml_reshape_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1);
GGML_API struct ggml_tensor *ggml_reshape_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2);
GGML_API struct ggml_tensor *ggml_reshape_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

/* Strided views of a at a byte offset; nb1..nb3 are the byte strides of the view. */
GGML_API struct ggml_tensor *ggml_view_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, size_t offset);
GGML_API struct ggml_tensor *ggml_view_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
GGML_API struct ggml_tensor *ggml_view_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset);
GGML_API struct ggml_tensor *ggml_view_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset);

/* View with dimension i of a moved to position axis_i. */
GGML_API struct ggml_tensor *ggml_permute(struct ggml_context *ctx, struct ggml_tensor *a, int axis0, int axis1, int axis2, int axis3);
/* ggml_permute(ctx, a, 1, 0, 2, 3). */
GGML_API struct ggml_tensor *ggml_transpose(struct ggml_context *ctx, struct ggml_tensor *a);

/* Gather rows: a [E, R, B2, B3], b I32 [n, B2, B3] -> [E, n, B2, B3] (quantized a dequantized to f32). */
GGML_API struct ggml_tensor *ggml_get_rows(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Gradient of get_rows: a = dy, b = indices, c gives the shape. */
GGML_API struct ggml_tensor *ggml_get_rows_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c);
/* Scatter rows of b into a at indices c (I64 or I32); returns a view of a. */
GGML_API struct ggml_tensor *ggml_set_rows(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c);

/* Diagonal matrix from a row vector. */
GGML_API struct ggml_tensor *ggml_diag(struct ggml_context *ctx, struct ggml_tensor *a);
/* Elements above the diagonal (shifted by n_past) set to -inf or to 0. */
GGML_API struct ggml_tensor *ggml_diag_mask_inf(struct ggml_context *ctx, struct ggml_tensor *a, int n_past);
GGML_API struct ggml_tensor *ggml_diag_mask_inf_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_past);
GGML_API struct ggml_tensor *ggml_diag_mask_zero(struct ggml_context *ctx, struct ggml_tensor *a, int n_past);
GGML_API struct ggml_tensor *ggml_diag_mask_zero_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_past);

/* Softmax along rows. */
GGML_API struct ggml_tensor *ggml_soft_max(struct ggml_context *ctx, struct ggml_tensor *a);
GGML_API struct ggml_tensor *ggml_soft_max_inplace(struct ggml_context *ctx, struct ggml_tensor *a);
/* softmax(a*scale + mask*slope): mask [ne0, >=ne01, ne12, ne13] F16/F32 broadcast over dims 2, 3;
 * slope is the ALiBi slope of the head (1 when max_bias == 0). */
GGML_API struct ggml_tensor *ggml_soft_max_ext(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *mask, float scale, float max_bias);
GGML_API struct ggml_tensor *ggml_soft_max_ext_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *mask, float scale, float max_bias);
/* Attention sinks: one extra logit per head (F32 [ne02]) joining each row's normalisation. */
GGML_API void ggml_soft_max_add_sinks(struct ggml_tensor *a, struct ggml_tensor *sinks);
/* Gradient of soft_max_ext: a = dy, b = the forward softmax output. */
GGML_API struct ggml_tensor *ggml_soft_max_ext_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float scale, float max_bias);
GGML_API struct ggml_tensor *ggml_soft_max_ext_back_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float scale, float max_bias);

/* Rotary position embedding; b = I32 positions [ne2] (4*ne2 for multi-section modes),
 * c = optional F32 frequency factors [n_dims/2]. */
GGML_API struct ggml_tensor *ggml_rope(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims, int mode);
GGML_API struct ggml_tensor *ggml_rope_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int n_dims, int mode);
GGML_API struct ggml_tensor *ggml_rope_ext(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);
GGML_API struct ggml_tensor *ggml_rope_multi(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);
GGML_API struct ggml_tensor *ggml_rope_ext_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);
GGML_API struct ggml_tensor *ggml_rope_multi_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);
GGML_DEPRECATED(GGML_API struct ggml_tensor *ggml_rope_custom(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow), "use ggml_rope_ext instead");
GGML_DEPRECATED(GGML_API struct ggml_tensor *ggml_rope_custom_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow), "use ggml_rope_ext_inplace instead");
/* Rotate only dimensions [n_offs, n_offs + n_dims) of a GGML_OP_ROPE or ROPE_BACK node
 * (ggml's offset form); the others pass through.  Sets a's parameter and returns a; NULL
 * with an error for an odd or negative offset, one past ne[0], or a vision rope. */
GGML_API struct ggml_tensor *ggml_rope_set_offset(struct ggml_tensor *a, int n_offs);
/* YaRN correction range: the first and last dimensions that get interpolated. */
GGML_API void ggml_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]);
/* Gradients of rope: a = dy, other arguments as in the forward call. */
GGML_API struct ggml_tensor *ggml_rope_ext_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);
GGML_API struct ggml_tensor *ggml_rope_multi_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        int n_dims, int sections[4], int mode, int n_ctx_orig, float freq_base, float freq_scale,
        float ext_factor, float attn_factor, float beta_fast, float beta_slow);

/* Clamp to [min, max]. */
GGML_API struct ggml_tensor *ggml_clamp(struct ggml_context *ctx, struct ggml_tensor *a, float min, float max);

/* im2col: a = kernel (for its shape), b = data; produces the patch matrix of a convolution. */
GGML_API struct ggml_tensor *ggml_im2col(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int s0, int s1, int p0, int p1, int d0, int d1, bool is_2D, enum ggml_type dst_type);
/* Gradient of im2col: b = gradient of the patches, ne = shape of the im2col input. */
GGML_API struct ggml_tensor *ggml_im2col_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t *ne,
        int s0, int s1, int p0, int p1, int d0, int d1, bool is_2D);
/* Overlap-add of columns a [K*OC, T] into [(T-1)*s0 + K - 2*p0, OC] (the second half of a
 * transposed 1-D convolution computed as mul_mat then col2im). */
GGML_API struct ggml_tensor *ggml_col2im_1d(struct ggml_context *ctx, struct ggml_tensor *a, int s0, int oc, int p0);

/* 1-D convolution: kernel a [K, IC, OC], data b [L, IC, N] -> [OL, OC, N]. */
GGML_API struct ggml_tensor *ggml_conv_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0);
GGML_API struct ggml_tensor *ggml_conv_1d_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s, int d);
GGML_API struct ggml_tensor *ggml_conv_1d_dw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0);
GGML_API struct ggml_tensor *ggml_conv_1d_dw_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int d0);
GGML_API struct ggml_tensor *ggml_conv_transpose_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0);

/* 2-D convolution through im2col: kernel a [KW, KH, IC, OC], data b [W, H, IC, N] -> [OW, OH, OC, N]. */
GGML_API struct ggml_tensor *ggml_conv_2d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int s0, int s1, int p0, int p1, int d0, int d1);
/* 3-D im2col and convolution: a [KW, KH, KD, IC*OC], b [W, H, D, IC*N] -> [OW, OH, OD, OC*N]. */
GGML_API struct ggml_tensor *ggml_im2col_3d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t IC,
        int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2, enum ggml_type dst_type);
GGML_API struct ggml_tensor *ggml_conv_3d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t IC,
        int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2);
/* Kernel-sized stride without padding; stride 1 with half padding. */
GGML_API struct ggml_tensor *ggml_conv_2d_sk_p0(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
GGML_API struct ggml_tensor *ggml_conv_2d_s1_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Depthwise 2-D convolution via im2col (a [KW, KH, 1, C]). */
GGML_API struct ggml_tensor *ggml_conv_2d_dw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int s0, int s1, int p0, int p1, int d0, int d1);
/* Depthwise 2-D convolution computed directly: a [KW, KH, 1, C], b [W, H, C, N] -> [OW, OH, C, N]. */
GGML_API struct ggml_tensor *ggml_conv_2d_dw_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int stride0, int stride1, int pad0, int pad1, int dilation0, int dilation1);
/* Transposed 2-D convolution without padding: a [KW, KH, OC, IC], b [W, H, IC, N]. */
GGML_API struct ggml_tensor *ggml_conv_transpose_2d_p0(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int stride);
/* 2-D convolution computed directly (GGML_OP_CONV_2D), same shapes as ggml_conv_2d. */
GGML_API struct ggml_tensor *ggml_conv_2d_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int s0, int s1, int p0, int p1, int d0, int d1);
/* 3-D convolution computed directly: a [KW, KH, KD, IC*OC], b [W, H, D, C*N]. */
GGML_API struct ggml_tensor *ggml_conv_3d_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
        int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2,
        int n_channels, int n_batch, int n_channels_out);

enum ggml_op_pool {
    GGML_OP_POOL_MAX,
    GGML_OP_POOL_AVG,
    GGML_OP_POOL_COUNT,
};

/* Pooling over dimension 0 (1-D) or dimensions 0 and 1 (2-D); padding counts as absent for avg. */
GGML_API struct ggml_tensor *ggml_pool_1d(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op_pool op, int k0, int s0, int p0);
GGML_API struct ggml_tensor *ggml_pool_2d(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op_pool op,
        int k0, int k1, int s0, int s1, float p0, float p1);
/* Gradient of pool_2d: a = dy, af = the forward input. */
GGML_API struct ggml_tensor *ggml_pool_2d_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *af, enum ggml_op_pool op,
        int k0, int k1, int s0, int s1, float p0, float p1);

enum ggml_scale_mode {
    GGML_SCALE_MODE_NEAREST  = 0,
    GGML_SCALE_MODE_BILINEAR = 1,
    GGML_SCALE_MODE_BICUBIC  = 2,
    GGML_SCALE_MODE_COUNT,
};

enum ggml_scale_flag {
    GGML_SCALE_FLAG_ALIGN_CORNERS = (1 << 8),
    GGML_SCALE_FLAG_ANTIALIAS     = (1 << 9), /* bilinear only: PyTorch's antialias=True (CPU) */
};

/* Multiply ne0 and ne1 by an integer factor. */
GGML_API struct ggml_tensor *ggml_upscale(struct ggml_context *ctx, struct ggml_tensor *a, int scale_factor, enum ggml_scale_mode mode);
GGML_DEPRECATED(GGML_API struct ggml_tensor *ggml_upscale_ext(struct ggml_context *ctx, struct ggml_tensor *a,
        int ne0, int ne1, int ne2, int ne3, enum ggml_scale_mode mode), "use ggml_interpolate instead");
/* Resample to the given shape; mode = ggml_scale_mode | ggml_scale_flag. */
GGML_API struct ggml_tensor *ggml_interpolate(struct ggml_context *ctx, struct ggml_tensor *a,
        int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint32_t mode);

/* Zero padding at the end of each dimension; _ext pads both ends. */
GGML_API struct ggml_tensor *ggml_pad(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1, int p2, int p3);
GGML_API struct ggml_tensor *ggml_pad_ext(struct ggml_context *ctx, struct ggml_tensor *a,
        int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);
/* Circular padding: the values come from the other end of each dimension (a torus). */
GGML_API struct ggml_tensor *ggml_pad_circular(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1, int p2, int p3);
GGML_API struct ggml_tensor *ggml_pad_ext_circular(struct ggml_context *ctx, struct ggml_tensor *a,
        int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);
/* Reflection padding of dimension 0: [a b c d] -> [b a b c d c]. */
GGML_API struct ggml_tensor *ggml_pad_reflect_1d(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1);
/* Cyclic shift of each dimension. */
GGML_API struct ggml_tensor *ggml_roll(struct ggml_context *ctx, struct ggml_tensor *a, int shift0, int shift1, int shift2, int shift3);
/* Zero everything outside the chosen triangle of each matrix. */
GGML_API struct ggml_tensor *ggml_tri(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_tri_type type);
/* Every element set to c. */
GGML_API struct ggml_tensor *ggml_fill(struct ggml_context *ctx, struct ggml_tensor *a, float c);
GGML_API struct ggml_tensor *ggml_fill_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float c);
/* Sinusoidal embedding of timesteps [N] -> [dim, N] (cos half first, as in Stable Diffusion). */
GGML_API struct ggml_tensor *ggml_timestep_embedding(struct ggml_context *ctx, struct ggml_tensor *timesteps, int dim, int max_period);

enum ggml_sort_order {
    GGML_SORT_ORDER_ASC,
    GGML_SORT_ORDER_DESC,
};

/* Row-wise sort indices (I32). */
GGML_API struct ggml_tensor *ggml_argsort(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_sort_order order);
/* [start, stop) with the given step (F32). */
GGML_API struct ggml_tensor *ggml_arange(struct ggml_context *ctx, float start, float stop, float step);
/* Indices (I32) of the k largest elements of each row, largest first. */
GGML_API struct ggml_tensor *ggml_top_k(struct ggml_context *ctx, struct ggml_tensor *a, int k);
/* The first k columns of a descending argsort (a view): the top k indices, largest first. */
GGML_API struct ggml_tensor *ggml_argsort_top_k(struct ggml_context *ctx, struct ggml_tensor *a, int k);

/* Fused attention:
 *   q    [Dk, n_batch, n_head,    B3]
 *   k    [Dk, n_kv,    n_head_kv, B3]
 *   v    [Dv, n_kv,    n_head_kv, B3]   (not transposed)
 *   mask [n_kv, >= n_batch, mh2, mh3]   optional, F16/F32, broadcast over heads
 *   res  [Dv, n_head, n_batch, B3]      (permuted)
 * softmax(q k^T * scale (+ softcap tanh) + mask * slope) v. */
GGML_API struct ggml_tensor *ggml_flash_attn_ext(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
        struct ggml_tensor *v, struct ggml_tensor *mask, float scale, float max_bias, float logit_softcap);
GGML_API void ggml_flash_attn_ext_set_prec(struct ggml_tensor *a, enum ggml_prec prec);
GGML_API enum ggml_prec ggml_flash_attn_ext_get_prec(const struct ggml_tensor *a);
/* Attention sinks (F32 [n_head]) for flash_attn_ext. */
GGML_API void ggml_flash_attn_ext_add_sinks(struct ggml_tensor *a, struct ggml_tensor *sinks);
/* Gradients of (non-ext) attention softmax(q k^T) v with respect to q, k, v packed in one tensor; d = dy. */
GGML_API struct ggml_tensor *ggml_flash_attn_back(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
        struct ggml_tensor *v, struct ggml_tensor *d, bool masked);

/* Mamba: causal 1-D convolution of sx with c; selective scan. */
GGML_API struct ggml_tensor *ggml_ssm_conv(struct ggml_context *ctx, struct ggml_tensor *sx, struct ggml_tensor *c);
/* The result holds y (x's shape), then K state slots of n_seqs states each: slot 0 the
 * state after the last token, slot k (1 <= k < min(K, n_tokens)) the state after token
 * n_tokens - 1 - k (for rolling a sequence back); slots k >= n_tokens are left unwritten.
 * K > 1 needs Mamba-2's per-head decay (A of [1, n_head]). */
GGML_API struct ggml_tensor *ggml_ssm_scan(struct ggml_context *ctx, struct ggml_tensor *s,
                                           struct ggml_tensor *x, struct ggml_tensor *dt,
                                           struct ggml_tensor *A, struct ggml_tensor *B,
                                           struct ggml_tensor *C, struct ggml_tensor *ids,
                                           int64_t K);
/* ggml's API before August 2026 had no K: an 8-argument call means K = 1, so clients of
 * either generation build unchanged (a macro picks by the argument count; the name
 * without arguments, e.g. as a function pointer, is the 9-argument function). */
static inline struct ggml_tensor *ggmlc_ssm_scan_without_k(
    struct ggml_context *ctx, struct ggml_tensor *s, struct ggml_tensor *x, struct ggml_tensor *dt,
    struct ggml_tensor *A, struct ggml_tensor *B, struct ggml_tensor *C, struct ggml_tensor *ids) {
    return ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids, 1);
}
#define GGMLC_PICK_10TH(a1, a2, a3, a4, a5, a6, a7, a8, a9, name, ...) name
#define ggml_ssm_scan(...) \
    GGMLC_PICK_10TH(__VA_ARGS__, ggml_ssm_scan, ggmlc_ssm_scan_without_k, )(__VA_ARGS__)

/* Window partition (with zero padding) and its inverse (SAM). */
GGML_API struct ggml_tensor *ggml_win_part(struct ggml_context *ctx, struct ggml_tensor *a, int w);
GGML_API struct ggml_tensor *ggml_win_unpart(struct ggml_context *ctx, struct ggml_tensor *a, int w0, int h0, int w);

/* Relative position tables (SAM). */
GGML_API struct ggml_tensor *ggml_get_rel_pos(struct ggml_context *ctx, struct ggml_tensor *a, int qh, int kh);
GGML_API struct ggml_tensor *ggml_add_rel_pos(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *pw, struct ggml_tensor *ph);
GGML_API struct ggml_tensor *ggml_add_rel_pos_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *pw, struct ggml_tensor *ph);

/* Linear-attention recurrences: RWKV v6, gated linear attention, RWKV v7.
 * The result holds the outputs followed by the final state. */
GGML_API struct ggml_tensor *ggml_rwkv_wkv6(struct ggml_context *ctx, struct ggml_tensor *k, struct ggml_tensor *v, struct ggml_tensor *r,
        struct ggml_tensor *tf, struct ggml_tensor *td, struct ggml_tensor *state);
GGML_API struct ggml_tensor *ggml_gated_linear_attn(struct ggml_context *ctx, struct ggml_tensor *k, struct ggml_tensor *v, struct ggml_tensor *q,
        struct ggml_tensor *g, struct ggml_tensor *state, float scale);
GGML_API struct ggml_tensor *ggml_rwkv_wkv7(struct ggml_context *ctx, struct ggml_tensor *r, struct ggml_tensor *w, struct ggml_tensor *k,
        struct ggml_tensor *v, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *state);

/* Solve A X = B for triangular A (left) or X A = B (!left); lower/upper; uni = unit diagonal. */
GGML_API struct ggml_tensor *ggml_solve_tri(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, bool left, bool lower, bool uni);

/* Gated delta rule (linear attention with a decaying recurrent state, Qwen3-Next, Kimi):
 *   q, k  [S, H_k, T, n_seqs]   v [S, H, T, n_seqs]   (H % H_k == 0, head h uses k-head h % H_k)
 *   g     [1 or S, H, T, n_seqs]: log of the decay (scalar per head, or per key row)
 *   beta  [1, H, T, n_seqs]       state [S, S, H, n_seqs]: the initial state
 * Per token: state = state * exp(g); d = beta * (v - state^T k); state += k d^T;
 * out = state^T q / sqrt(S).  The result is F32 [S*H*T*n_seqs + K*S*S*H*n_seqs]: the outputs
 * [S, H, T, n_seqs] followed by K state snapshots, the latest first (slot s holds the state s
 * tokens before the end; slots beyond T are left zero). */
GGML_API struct ggml_tensor *ggml_gated_delta_net(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
        struct ggml_tensor *v, struct ggml_tensor *g, struct ggml_tensor *beta, struct ggml_tensor *state, int64_t K);
/* stable-diffusion.cpp's int8 products (ggml of its fork, 8e800cef).
 * ggml_quantize_i8_convrot: x contiguous F32 [k, rows...]; each row is cut in groups of
 * group_size values (a power of 4 up to 256 dividing k), each group scaled by
 * 1/sqrt(group_size) and rotated by ggml's radix-4 butterfly (a, b, c, d) -> (a+b+c-d,
 * a+b-c+d, a-b+c+d, -a+b+c+d) over strides 1, 4, 16, ...; the row's scale is amax/127 and
 * values round half to even, clamped to +-127.  The result is I8 [k, pad4(rows) +
 * ceil(4*rows/k)]: the rows (padding rows zero), then the f32 scales.
 * ggml_mul_mat_i8_tensorwise: w I8 [k, n] (2-D, contiguous, already rotated offline when
 * group_size > 0), x F32 [k, m, ...] or the result of ggml_quantize_i8_convrot of such;
 * F32 x is quantized (and rotated when group_size > 0) as above.  The result is F32
 * [n, m, ...]: (integer dot) * row scale * weight_scale[i] (+ bias[i]), weight_scale and
 * bias F32 with one value per row of w (bias may be NULL); a MUL_MAT node with src[2] the
 * scales and src[3] the bias, as in ggml.  CPU only. */
GGML_API struct ggml_tensor *ggml_mul_mat_i8_tensorwise(struct ggml_context *ctx, struct ggml_tensor *w, struct ggml_tensor *x,
        struct ggml_tensor *weight_scale, struct ggml_tensor *bias, int group_size);
GGML_API struct ggml_tensor *ggml_quantize_i8_convrot(struct ggml_context *ctx, struct ggml_tensor *x, int group_size);
/* DeepSeek's sparse-attention indexer: q [D, H, T, S] F32, k [D, 1, n_kv, S] (F32 or a type
 * with a conversion), weights [H, T, 1, S] F32, mask [n_kv, T, 1, S_m] F16 with S_m | S; the
 * result F32 [n_kv, T, 1, S] holds sum_h relu(q[:, h, t] . k[:, j]) * weights[h, t] + mask[j, t]
 * (CPU).  The V4 hyper-connection ops below are declared so that ggml's programs compile;
 * not implemented yet, their constructors return NULL with an error. */
GGML_API struct ggml_tensor *ggml_lightning_indexer(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
        struct ggml_tensor *weights, struct ggml_tensor *mask);
GGML_API struct ggml_tensor *ggml_dsv4_hc_comb(struct ggml_context *ctx, struct ggml_tensor *mixes, struct ggml_tensor *scale,
        struct ggml_tensor *base, float eps, int32_t n_iter);
GGML_API struct ggml_tensor *ggml_dsv4_hc_pre(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *weights);
GGML_API struct ggml_tensor *ggml_dsv4_hc_post(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *residual,
        struct ggml_tensor *post, struct ggml_tensor *comb);

/* ---------------------------------------------------------- custom ops
 * fun is called once per task with ith in [0, nth); n_tasks = GGML_N_TASKS_MAX
 * uses every thread.  The result has a's shape (custom_4d: the given shape). */
typedef void (*ggml_custom1_op_t)(struct ggml_tensor *dst, const struct ggml_tensor *a, int ith, int nth, void *userdata);
typedef void (*ggml_custom2_op_t)(struct ggml_tensor *dst, const struct ggml_tensor *a, const struct ggml_tensor *b, int ith, int nth, void *userdata);
typedef void (*ggml_custom3_op_t)(struct ggml_tensor *dst, const struct ggml_tensor *a, const struct ggml_tensor *b, const struct ggml_tensor *c,
        int ith, int nth, void *userdata);

GGML_API struct ggml_tensor *ggml_map_custom1(struct ggml_context *ctx, struct ggml_tensor *a, ggml_custom1_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_map_custom1_inplace(struct ggml_context *ctx, struct ggml_tensor *a, ggml_custom1_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_map_custom2(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, ggml_custom2_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_map_custom2_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, ggml_custom2_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_map_custom3(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        ggml_custom3_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_map_custom3_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
        ggml_custom3_op_t fun, int n_tasks, void *userdata);

typedef void (*ggml_custom_op_t)(struct ggml_tensor *dst, int ith, int nth, void *userdata);
/* A custom node of the given type and shape whose sources are args[0..n_args). */
GGML_API struct ggml_tensor *ggml_custom_4d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
        struct ggml_tensor **args, int n_args, ggml_custom_op_t fun, int n_tasks, void *userdata);
GGML_API struct ggml_tensor *ggml_custom_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor **args, int n_args,
        ggml_custom_op_t fun, int n_tasks, void *userdata);

/* ------------------------------------------------------ losses, optimizers */

/* Mean over rows of -sum(labels * log_softmax(logits)); a scalar. */
GGML_API struct ggml_tensor *ggml_cross_entropy_loss(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b);
/* Its gradient with respect to the logits: a = upstream gradient (scalar), b = logits, c = labels
 * (ggml's order; the older order logits, labels, gradient is recognised too). */
GGML_API struct ggml_tensor *ggml_cross_entropy_loss_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c);
/* AdamW step on parameter a with moments m, v; adamw_params F32 [7] =
 * {alpha, beta1, beta2, eps, wd, beta1h, beta2h} (beta1h = 1/(1-beta1^t), beta2h = 1/(1-beta2^t)). */
GGML_API struct ggml_tensor *ggml_opt_step_adamw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *grad,
        struct ggml_tensor *m, struct ggml_tensor *v, struct ggml_tensor *adamw_params);
/* SGD step: a = a*(1 - alpha*wd) - alpha*grad; sgd_params F32 [2] = {alpha, wd}. */
GGML_API struct ggml_tensor *ggml_opt_step_sgd(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *grad, struct ggml_tensor *sgd_params);

/* ---------------------------------------------------------------- graphs */

/* Add tensor and everything it depends on to the graph (each node once, in dependency order). */
GGML_API void ggml_build_forward_expand(struct ggml_cgraph *cgraph, struct ggml_tensor *tensor);
/* Add every branch tensors[0..n_tensors) to the graph (so the graph's shape does not depend
 * on idx) but compute only tensors[idx] and what it needs; returns tensors[idx]. */
GGML_API struct ggml_tensor *ggml_build_forward_select(struct ggml_cgraph *cgraph, struct ggml_tensor **tensors,
        int n_tensors, int idx);
/* Add tensor and its parents to the graph without marking them to be computed. */
GGML_API void ggml_build_forward_order(struct ggml_cgraph *cgraph, struct ggml_tensor *tensor);
/* Append the backward pass: gradients of the loss tensors with respect to every
 * parameter; grad_accs (one per node, may be NULL) holds gradient accumulators. */
GGML_API void ggml_build_backward_expand(struct ggml_context *ctx, struct ggml_cgraph *cgraph, struct ggml_tensor **grad_accs);

/* Graphs live in a context: default size GGML_DEFAULT_GRAPH_SIZE, no gradients. */
GGML_API struct ggml_cgraph *ggml_new_graph(struct ggml_context *ctx);
GGML_API struct ggml_cgraph *ggml_new_graph_custom(struct ggml_context *ctx, size_t size, bool grads);
GGML_API struct ggml_cgraph *ggml_graph_dup(struct ggml_context *ctx, struct ggml_cgraph *cgraph, bool force_grads);
GGML_API void ggml_graph_cpy(struct ggml_cgraph *src, struct ggml_cgraph *dst);
/* Zero gradients and optimizer moments, set the loss gradient to 1. */
GGML_API void ggml_graph_reset(struct ggml_cgraph *cgraph);
/* Drop all nodes and leafs. */
GGML_API void ggml_graph_clear(struct ggml_cgraph *cgraph);

GGML_API int                  ggml_graph_size(struct ggml_cgraph *cgraph);
/* Node i; negative i counts from the end. */
GGML_API struct ggml_tensor  *ggml_graph_node(struct ggml_cgraph *cgraph, int i);
GGML_API struct ggml_tensor **ggml_graph_nodes(struct ggml_cgraph *cgraph);
GGML_API int                  ggml_graph_n_nodes(struct ggml_cgraph *cgraph);
GGML_API void                 ggml_graph_add_node(struct ggml_cgraph *cgraph, struct ggml_tensor *tensor);

/* Arena bytes a graph takes. */
GGML_API size_t ggml_graph_overhead(void);
GGML_API size_t ggml_graph_overhead_custom(size_t size, bool grads);

GGML_API struct ggml_tensor *ggml_graph_get_tensor(const struct ggml_cgraph *cgraph, const char *name);
/* Gradient (or gradient accumulator) of a node after ggml_build_backward_expand, or NULL. */
GGML_API struct ggml_tensor *ggml_graph_get_grad(const struct ggml_cgraph *cgraph, const struct ggml_tensor *node);
GGML_API struct ggml_tensor *ggml_graph_get_grad_acc(const struct ggml_cgraph *cgraph, const struct ggml_tensor *node);

/* Print the nodes and leafs of a graph to the log. */
GGML_API void ggml_graph_print(const struct ggml_cgraph *cgraph);
/* Write a Graphviz description of gb (gf's nodes drawn differently) to filename. */
GGML_API void ggml_graph_dump_dot(const struct ggml_cgraph *gb, const struct ggml_cgraph *gf, const char *filename);

/* ---------------------------------------------------------------- logging */

typedef void (*ggml_log_callback)(enum ggml_log_level level, const char *text, void *user_data);
/* Route all log output to a callback (NULL: stderr). */
GGML_API void ggml_log_set(ggml_log_callback log_callback, void *user_data);
/* The callback and user data now in use (the built-in stderr logger after ggml_log_set(NULL, ...)),
 * so a library can install its own logger and put the caller's back; NULL out-pointers are skipped. */
GGML_API void ggml_log_get(ggml_log_callback *log_callback, void **user_data);

/* Zero a tensor's data (host memory or backend buffer). */
GGML_API struct ggml_tensor *ggml_set_zero(struct ggml_tensor *tensor);

/* ----------------------------------------------------------- quantization */

/* Prepare (idempotent, thread-safe) and release tables used by some quantizers. */
GGML_API void ggml_quantize_init(enum ggml_type type);
GGML_API void ggml_quantize_free(void);
/* True for types that cannot be quantized without an importance matrix. */
GGML_API bool ggml_quantize_requires_imatrix(enum ggml_type type);
/* Quantize nrows rows of n_per_row floats starting at row `start` into dst;
 * imatrix (n_per_row weights) may be NULL; returns bytes written. */
GGML_API size_t ggml_quantize_chunk(enum ggml_type type, const float *src, void *dst, int64_t start,
        int64_t nrows, int64_t n_per_row, const float *imatrix);

typedef void (*ggml_to_float_t)(const void *GGML_RESTRICT x, float *GGML_RESTRICT y, int64_t k);
typedef void (*ggml_from_float_t)(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t k);

struct ggml_type_traits {
    const char       *type_name;
    int64_t           blck_size;
    int64_t           blck_size_interleave;
    size_t            type_size;
    bool              is_quantized;
    ggml_to_float_t   to_float;
    ggml_from_float_t from_float_ref;
};
/* Traits of a type (never NULL for a valid type id). */
GGML_API const struct ggml_type_traits *ggml_get_type_traits(enum ggml_type type);

/* ------------------------------------------------------------ thread pools */

enum ggml_sched_priority {
    GGML_SCHED_PRIO_LOW = -1,
    GGML_SCHED_PRIO_NORMAL,
    GGML_SCHED_PRIO_MEDIUM,
    GGML_SCHED_PRIO_HIGH,
    GGML_SCHED_PRIO_REALTIME,
};

struct ggml_threadpool_params {
    bool                     cpumask[GGML_MAX_N_THREADS];
    int                      n_threads;
    enum ggml_sched_priority prio;
    uint32_t                 poll;
    bool                     strict_cpu;
    bool                     paused;
};

struct ggml_threadpool;
typedef struct ggml_threadpool *ggml_threadpool_t;

/* Default thread-pool parameters for n_threads threads. */
GGML_API struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads);
GGML_API void ggml_threadpool_params_init(struct ggml_threadpool_params *p, int n_threads);
GGML_API bool ggml_threadpool_params_match(const struct ggml_threadpool_params *p0, const struct ggml_threadpool_params *p1);

#ifdef __cplusplus
}
#endif

#endif /* GGML_H */
