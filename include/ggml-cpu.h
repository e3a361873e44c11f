/*
 * ggml-cpu.h - computing graphs on the CPU, and host-memory tensor helpers.
 *
 * These functions use the CPU plugin named in the configuration (see
 * ggmlc.h).  Tensors must live in host memory: a context created without
 * no_alloc, or a host backend buffer.
 */
#ifndef GGML_CPU_H
#define GGML_CPU_H

#include "ggml.h"
#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plan of a CPU computation: work buffer and thread count.
 * Fill work_data with work_size bytes before ggml_graph_compute. */
struct ggml_cplan {
    size_t   work_size;
    uint8_t *work_data;
    int      n_threads;
    struct ggml_threadpool *threadpool;
    ggml_abort_callback abort_callback;
    void    *abort_callback_data;
    bool     use_ref; /* ignored: ggmlc always runs its best kernels */
};

enum ggml_numa_strategy {
    GGML_NUMA_STRATEGY_DISABLED   = 0,
    GGML_NUMA_STRATEGY_DISTRIBUTE = 1,
    GGML_NUMA_STRATEGY_ISOLATE    = 2,
    GGML_NUMA_STRATEGY_NUMACTL    = 3,
    GGML_NUMA_STRATEGY_MIRROR     = 4,
    GGML_NUMA_STRATEGY_COUNT,
};

/* NUMA placement hint (accepted, currently without effect); ggml_is_numa is false. */
GGML_API void ggml_numa_init(enum ggml_numa_strategy numa);
GGML_API bool ggml_is_numa(void);

/* Scalar tensors and element access on host tensors (any F32/F16/BF16/I8/I16/I32 tensor). */
GGML_API struct ggml_tensor *ggml_new_i32(struct ggml_context *ctx, int32_t value);
GGML_API struct ggml_tensor *ggml_new_f32(struct ggml_context *ctx, float value);
GGML_API struct ggml_tensor *ggml_set_i32(struct ggml_tensor *tensor, int32_t value);
GGML_API struct ggml_tensor *ggml_set_f32(struct ggml_tensor *tensor, float value);
GGML_API int32_t ggml_get_i32_1d(const struct ggml_tensor *tensor, int i);
GGML_API void    ggml_set_i32_1d(const struct ggml_tensor *tensor, int i, int32_t value);
GGML_API int32_t ggml_get_i32_nd(const struct ggml_tensor *tensor, int i0, int i1, int i2, int i3);
GGML_API void    ggml_set_i32_nd(const struct ggml_tensor *tensor, int i0, int i1, int i2, int i3, int32_t value);
GGML_API float   ggml_get_f32_1d(const struct ggml_tensor *tensor, int i);
GGML_API void    ggml_set_f32_1d(const struct ggml_tensor *tensor, int i, float value);
GGML_API float   ggml_get_f32_nd(const struct ggml_tensor *tensor, int i0, int i1, int i2, int i3);
GGML_API void    ggml_set_f32_nd(const struct ggml_tensor *tensor, int i0, int i1, int i2, int i3, float value);

/* Thread pools shared between computations. */
GGML_API struct ggml_threadpool *ggml_threadpool_new(struct ggml_threadpool_params *params);
GGML_API void ggml_threadpool_free(struct ggml_threadpool *threadpool);
GGML_API int  ggml_threadpool_get_n_threads(struct ggml_threadpool *threadpool);
GGML_API void ggml_threadpool_pause(struct ggml_threadpool *threadpool);
GGML_API void ggml_threadpool_resume(struct ggml_threadpool *threadpool);

/* Plan a computation with n_threads threads (<= 0: the configured count). */
GGML_API struct ggml_cplan ggml_graph_plan(const struct ggml_cgraph *cgraph, int n_threads, struct ggml_threadpool *threadpool);
/* Compute a planned graph. */
GGML_API enum ggml_status ggml_graph_compute(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan);
/* Plan, allocate the work buffer in ctx (falls back to the heap) and compute. */
GGML_API enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context *ctx, struct ggml_cgraph *cgraph, int n_threads);

/* CPU features, as detected at run time (1 = present). */
GGML_API int ggml_cpu_has_sse3(void);
GGML_API int ggml_cpu_has_ssse3(void);
GGML_API int ggml_cpu_has_avx(void);
GGML_API int ggml_cpu_has_avx_vnni(void);
GGML_API int ggml_cpu_has_avx2(void);
GGML_API int ggml_cpu_has_bmi2(void);
GGML_API int ggml_cpu_has_f16c(void);
GGML_API int ggml_cpu_has_fma(void);
GGML_API int ggml_cpu_has_avx512(void);
GGML_API int ggml_cpu_has_avx512_vbmi(void);
GGML_API int ggml_cpu_has_avx512_vnni(void);
GGML_API int ggml_cpu_has_avx512_bf16(void);
GGML_API int ggml_cpu_has_amx_int8(void);
GGML_API int ggml_cpu_has_neon(void);
GGML_API int ggml_cpu_has_arm_fma(void);
GGML_API int ggml_cpu_has_fp16_va(void);
GGML_API int ggml_cpu_has_dotprod(void);
GGML_API int ggml_cpu_has_matmul_int8(void);
GGML_API int ggml_cpu_has_sve(void);
GGML_API int ggml_cpu_get_sve_cnt(void);
GGML_API int ggml_cpu_has_sme(void);
GGML_API int ggml_cpu_has_sme2(void);
GGML_API int ggml_cpu_get_rvv_vlen(void); /* RISC-V vector length in bytes (0: none) */
GGML_API int ggml_cpu_has_riscv_v(void);
GGML_API int ggml_cpu_has_vsx(void);
GGML_API int ggml_cpu_has_vxe(void);
GGML_API int ggml_cpu_has_wasm_simd(void);
GGML_API int ggml_cpu_has_llamafile(void);

/* Dot product of n elements of type vx with n elements of vec_dot_type; s gets the result. */
typedef void (*ggml_vec_dot_t)(int n, float *GGML_RESTRICT s, size_t bs, const void *GGML_RESTRICT x, size_t bx,
                               const void *GGML_RESTRICT y, size_t by, int nrc);

struct ggml_type_traits_cpu {
    ggml_from_float_t from_float;
    ggml_vec_dot_t    vec_dot;
    enum ggml_type    vec_dot_type;
    int64_t           nrows;
};

/* The CPU kernels of a type (fields NULL where the CPU plugin lacks them). */
GGML_API const struct ggml_type_traits_cpu *ggml_get_type_traits_cpu(enum ggml_type type);

/* Initialise the CPU plugin (idempotent; called by every function here). */
GGML_API void ggml_cpu_init(void);

/* The CPU backend: a backend on the CPU plugin's device. */
GGML_API ggml_backend_t ggml_backend_cpu_init(void);
GGML_API bool ggml_backend_is_cpu(ggml_backend_t backend);
GGML_API void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads);
GGML_API void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool);
GGML_API void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback, void *abort_callback_data);
/* ggml switches its CPU backend to reference kernels; ggmlc's CPU plugin has one set of
 * kernels, so this only checks that backend_cpu is a CPU backend. */
GGML_API void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref);
GGML_API ggml_backend_reg_t ggml_backend_cpu_reg(void);

/* Row conversions used by the CPU kernels. */
GGML_API void ggml_cpu_fp32_to_fp32(const float *x, float *y, int64_t n);
GGML_API void ggml_cpu_fp32_to_i32(const float *x, int32_t *y, int64_t n); /* truncates toward 0 */
GGML_API void ggml_cpu_fp32_to_fp16(const float *x, ggml_fp16_t *y, int64_t n);
GGML_API void ggml_cpu_fp16_to_fp32(const ggml_fp16_t *x, float *y, int64_t n);
GGML_API void ggml_cpu_fp32_to_bf16(const float *x, ggml_bf16_t *y, int64_t n);
GGML_API void ggml_cpu_bf16_to_fp32(const ggml_bf16_t *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* GGML_CPU_H */
