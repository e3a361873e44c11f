/*
 * cpu-features.c - ggml_cpu_has_*: the instruction sets of the CPU we run
 * on, read with cpuid at run time (never from compile-time flags), and for
 * AVX and AVX-512 also whether the OS saves their registers (xgetbv).
 */
#include <pthread.h>
#include <stdbool.h>

#include "ggml-impl.h"
#include "ggml-cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

struct cpu_features {
    bool sse3, ssse3, avx, avx2, avx_vnni, bmi2, f16c, fma;
    bool avx512, avx512_vbmi, avx512_vnni, avx512_bf16, amx_int8;
};

static struct cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) || defined(__i386__)
static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ __volatile__("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static void detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    features.sse3 = c & (1u << 0);
    features.ssse3 = c & (1u << 9);
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool os_avx = (xcr0 & 0x6) == 0x6;       /* XMM and YMM state */
    const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;  /* plus opmask and ZMM state */
    const bool os_amx = (xcr0 & 0x60000) == 0x60000; /* tile config and data */
    features.avx = avx && os_avx;
    features.fma = fma && os_avx;
    features.f16c = f16c && os_avx;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    features.avx2 = (b & (1u << 5)) && os_avx;
    features.bmi2 = b & (1u << 8);
    features.avx512 = (b & (1u << 16)) && os_avx512; /* AVX512F */
    features.avx512_vbmi = (c & (1u << 1)) && os_avx512;
    features.avx512_vnni = (c & (1u << 11)) && os_avx512;
    features.amx_int8 = (d & (1u << 25)) && os_amx;
    __cpuid_count(7, 1, a, b, c, d);
    features.avx_vnni = (a & (1u << 4)) && os_avx;
    features.avx512_bf16 = (a & (1u << 5)) && os_avx512;
}
#else
static void detect(void) {}
#endif

static const struct cpu_features *get(void) {
    pthread_once(&features_once, detect);
    return &features;
}

int ggml_cpu_has_sse3(void) { return get()->sse3; }
int ggml_cpu_has_ssse3(void) { return get()->ssse3; }
int ggml_cpu_has_avx(void) { return get()->avx; }
int ggml_cpu_has_avx_vnni(void) { return get()->avx_vnni; }
int ggml_cpu_has_avx2(void) { return get()->avx2; }
int ggml_cpu_has_bmi2(void) { return get()->bmi2; }
int ggml_cpu_has_f16c(void) { return get()->f16c; }
int ggml_cpu_has_fma(void) { return get()->fma; }
int ggml_cpu_has_avx512(void) { return get()->avx512; }
int ggml_cpu_has_avx512_vbmi(void) { return get()->avx512_vbmi; }
int ggml_cpu_has_avx512_vnni(void) { return get()->avx512_vnni; }
int ggml_cpu_has_avx512_bf16(void) { return get()->avx512_bf16; }
int ggml_cpu_has_amx_int8(void) { return get()->amx_int8; }

/* Other architectures' extensions: ggmlc's kernels for them are the portable ones;
 * NEON and its FMA are part of every AArch64 CPU. */
#if defined(__aarch64__)
int ggml_cpu_has_neon(void) { return 1; }
int ggml_cpu_has_arm_fma(void) { return 1; }
#else
int ggml_cpu_has_neon(void) { return 0; }
int ggml_cpu_has_arm_fma(void) { return 0; }
#endif
int ggml_cpu_has_fp16_va(void) { return 0; }
int ggml_cpu_has_dotprod(void) { return 0; }
int ggml_cpu_has_matmul_int8(void) { return 0; }
int ggml_cpu_has_sve(void) { return 0; }
int ggml_cpu_get_sve_cnt(void) { return 0; }
int ggml_cpu_has_sme(void) { return 0; }
int ggml_cpu_has_sme2(void) { return 0; }
int ggml_cpu_get_rvv_vlen(void) { return 0; }
int ggml_cpu_has_riscv_v(void) { return 0; }
int ggml_cpu_has_vsx(void) { return 0; }
int ggml_cpu_has_vxe(void) { return 0; }
int ggml_cpu_has_wasm_simd(void) { return 0; }
int ggml_cpu_has_llamafile(void) { return 0; }
