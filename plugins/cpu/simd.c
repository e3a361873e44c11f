/* simd.c - CPU feature detection and SIMD path selection (see simd.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops-ew.h"
#include "simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_SIMD_X86 1
#endif

static struct cpu_simd_features features;
static enum cpu_simd_level best_level = CPU_SIMD_GENERIC;
static enum cpu_simd_level chosen_level = CPU_SIMD_GENERIC;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
/* Set once detect() is done: the accessors below are called per row by the kernels' table
 * lookups, where pthread_once was a tenth of a small model's time. */
static atomic_bool detected;

static const char *const level_names[CPU_SIMD_COUNT] = {"generic", "avx2", "avx512"};

#ifdef CPU_SIMD_X86
/* The register state the OS saves on context switches (XCR0); only valid with OSXSAVE. */
static unsigned long long read_xcr0(void) {
    unsigned int eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static void detect_x86(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return;
    const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28);
    const bool fma = ecx & (1u << 12), f16c = ecx & (1u << 29);
    if (!osxsave || !avx) return; /* no AVX state saved: SSE2 only */
    const unsigned long long xcr0 = read_xcr0();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;    /* SSE and AVX state */
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;  /* plus opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm) return;
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    features.avx2 = ebx & (1u << 5);
    features.fma = fma;
    features.f16c = f16c;
    if (os_zmm) {
        features.avx512f = ebx & (1u << 16);
        features.avx512dq = ebx & (1u << 17);
        features.avx512bw = ebx & (1u << 30);
        features.avx512vl = ebx & (1u << 31);
        features.avx512vnni = ecx & (1u << 11);
        const unsigned int max_sub = eax;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, eax, ebx, ecx, edx);
            features.avx512bf16 = eax & (1u << 5);
        }
    }
}
#endif

static enum cpu_simd_level level_from_env(void) {
    const char *want = ggmlc_getenv("GGMLC_CPU_PATH"); /* none in set-uid programs */
    if (!want || !*want) return best_level;
    for (int l = 0; l < CPU_SIMD_COUNT; l++) {
        if (strcmp(want, level_names[l]) != 0) continue;
        if ((enum cpu_simd_level)l > best_level) {
            fprintf(stderr, "ggmlc cpu: GGMLC_CPU_PATH=%s is not supported by this CPU; using %s\n", want,
                    level_names[best_level]);
            return best_level;
        }
        return (enum cpu_simd_level)l;
    }
    fprintf(stderr, "ggmlc cpu: unknown GGMLC_CPU_PATH=%s (generic, avx2, avx512); using %s\n", want,
            level_names[best_level]);
    return best_level;
}

static void detect(void) {
#ifdef CPU_SIMD_X86
    detect_x86();
#endif
    const struct cpu_simd_features *f = &features;
    if (f->avx2 && f->fma && f->f16c) best_level = CPU_SIMD_AVX2;
    if (best_level == CPU_SIMD_AVX2 && f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl)
        best_level = CPU_SIMD_AVX512;
    chosen_level = level_from_env();
    atomic_store_explicit(&detected, true, memory_order_release);
}

static inline void detect_once_only(void) {
    if (!atomic_load_explicit(&detected, memory_order_acquire)) pthread_once(&detect_once, detect);
}

const struct cpu_simd_features *cpu_simd_features(void) {
    detect_once_only();
    return &features;
}

enum cpu_simd_level cpu_simd_best_level(void) {
    detect_once_only();
    return best_level;
}

enum cpu_simd_level cpu_simd_level(void) {
    detect_once_only();
    return chosen_level;
}

const char *cpu_simd_level_name(enum cpu_simd_level level) {
    return level >= 0 && level < CPU_SIMD_COUNT ? level_names[level] : "unknown";
}

const char *cpu_simd_path(void) {
    return cpu_simd_level_name(cpu_simd_level());
}

enum cpu_simd_level cpu_simd_force_level(enum cpu_simd_level level) {
    detect_once_only();
    chosen_level = level < CPU_SIMD_GENERIC ? CPU_SIMD_GENERIC : level > best_level ? best_level : level;
    return chosen_level;
}

/* ------------------------------------------------------- f16 rows (ops-ew.h) */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EW_HAVE_F16C_ROWS 1
/* Eight values per F16C instruction: GCC 12 converts _Float16 one value at a time even
 * where F16C is enabled (in flash attention's F16 K/V rows of a decode step that was two
 * thirds of the op's time). */
__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(int64_t n, float *y, const ggml_fp16_t *x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = _cvtsh_ss(x[i]);
}
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(int64_t n, ggml_fp16_t *y, const float *x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("avx,f16c"))) static void round_f16_f16c(int64_t n, float *x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; i++) x[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}
#endif

void ew_f16_to_f32_row(int64_t n, float *y, const ggml_fp16_t *x) {
#ifdef EW_HAVE_F16C_ROWS
    if (__builtin_cpu_supports("f16c")) {
        f16_to_f32_f16c(n, y, x);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        _Float16 h;
        memcpy(&h, &x[i], sizeof h);
        y[i] = (float)h;
    }
}

void ew_f32_to_f16_row(int64_t n, ggml_fp16_t *y, const float *x) {
#ifdef EW_HAVE_F16C_ROWS
    if (__builtin_cpu_supports("f16c")) {
        f32_to_f16_f16c(n, y, x);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        const _Float16 h = (_Float16)x[i];
        memcpy(&y[i], &h, sizeof h);
    }
}

void ew_round_row(enum ggml_type type, int64_t n, float *x) {
    if (type == GGML_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) x[i] = ggmlc_bf16_to_fp32(ggmlc_fp32_to_bf16(x[i]));
        return;
    }
#ifdef EW_HAVE_F16C_ROWS
    if (__builtin_cpu_supports("f16c")) {
        round_f16_f16c(n, x);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) x[i] = (float)(_Float16)x[i];
}
