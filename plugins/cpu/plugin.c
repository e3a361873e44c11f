/*
 * plugin.c - the CPU plugin's descriptor, registry and device.
 *
 * The device computes in host memory: its buffer type is the core's host
 * buffer type, so tensors in any host buffer or context are usable as they are.
 * Its one extra buffer type, CPU_REPACK (repack.h), holds Q4_0 weights with
 * eight rows interleaved for the matrix products.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu-backend.h"
#include "graph.h"
#include "repack.h"
#include "simd.h"
#include "threadpool.h"

/* ------------------------------------------------------ device description */

static char cpu_description[128] = "CPU";
static char cpu_caps[256];

/* "model name" from /proc/cpuinfo, when there is one. */
static void read_cpu_model(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(cpu_description, sizeof cpu_description, "%s", colon);
        cpu_description[strcspn(cpu_description, "\n")] = '\0';
        break;
    }
    fclose(f);
}

static void append_cap(const char *name, int present) {
    if (!present) return;
    const size_t len = strlen(cpu_caps);
    snprintf(cpu_caps + len, sizeof cpu_caps - len, "%s%s", len ? " " : "", name);
}

static void build_caps(void) {
    cpu_caps[0] = '\0';
    append_cap("sse3", ggml_cpu_has_sse3());
    append_cap("ssse3", ggml_cpu_has_ssse3());
    append_cap("avx", ggml_cpu_has_avx());
    append_cap("avx2", ggml_cpu_has_avx2());
    append_cap("fma", ggml_cpu_has_fma());
    append_cap("f16c", ggml_cpu_has_f16c());
    append_cap("bmi2", ggml_cpu_has_bmi2());
    append_cap("avx_vnni", ggml_cpu_has_avx_vnni());
    append_cap("avx512", ggml_cpu_has_avx512());
    append_cap("avx512_vbmi", ggml_cpu_has_avx512_vbmi());
    append_cap("avx512_vnni", ggml_cpu_has_avx512_vnni());
    append_cap("avx512_bf16", ggml_cpu_has_avx512_bf16());
    append_cap("amx_int8", ggml_cpu_has_amx_int8());
    append_cap("neon", ggml_cpu_has_neon());
    append_cap("sve", ggml_cpu_has_sve());
    const size_t len = strlen(cpu_caps);
    snprintf(cpu_caps + len, sizeof cpu_caps - len, "%sthreads=%d simd=%s", len ? " " : "", cpu_default_threads(),
             cpu_simd_path());
}

/* Bytes of a /proc/meminfo field ("MemTotal:"), or 0. */
static size_t meminfo_bytes(const char *field) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0;
    const size_t n = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0) {
            kib = strtoull(line + n, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

static void dev_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) {
    const long page = sysconf(_SC_PAGESIZE);
    size_t t = meminfo_bytes("MemTotal:"), f = meminfo_bytes("MemAvailable:");
    if (t == 0 && page > 0) t = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)page;
    if (f == 0 && page > 0) f = (size_t)sysconf(_SC_AVPHYS_PAGES) * (size_t)page;
    if (free_mem) *free_mem = f;
    if (total) *total = t;
}

static const char *dev_name(ggml_backend_dev_t dev) { return "CPU"; }
static const char *dev_description(ggml_backend_dev_t dev) { return cpu_description; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) { return GGML_BACKEND_DEVICE_TYPE_CPU; }
static const char *dev_caps(ggml_backend_dev_t dev) { return cpu_caps; }
static ggml_backend_buffer_type_t dev_buffer_type(ggml_backend_dev_t dev) { return ggml_backend_cpu_buffer_type(); }

static ggml_backend_buffer_t dev_buffer_from_host_ptr(ggml_backend_dev_t dev, void *ptr, size_t size, size_t max_tensor_size) {
    return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) { return cpu_supports_node(op); }
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return ggml_backend_buft_is_host(buft) || (buft && buft == cpu_repack_buft());
}

/* -------------------------------------------------------------- registry */

static struct ggml_type_traits_cpu type_traits[GGML_TYPE_COUNT];

static const struct ggml_type_traits_cpu *proc_type_traits(enum ggml_type type) {
    static const struct ggml_type_traits_cpu none = {NULL, NULL, GGML_TYPE_COUNT, 1};
    return (unsigned)type < GGML_TYPE_COUNT ? &type_traits[type] : &none;
}

static void fill_type_traits(void) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const struct cpu_type_traits *tt = cpu_get_type_traits((enum ggml_type)t);
        type_traits[t] = (struct ggml_type_traits_cpu){tt->from_float, tt->vec_dot, tt->vec_dot_type, 1};
    }
}

static struct ggml_backend_feature features[24];

static struct ggml_backend_feature *proc_get_features(ggml_backend_reg_t reg) { return features; }

/* ggml's feature list: one {name, "1"} per detected SIMD extension of the caps string,
 * then {NULL, NULL}. */
static void fill_features(void) {
    static char names[sizeof cpu_caps];
    memcpy(names, cpu_caps, sizeof names);
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(names, " ", &save); tok && n + 1 < sizeof features / sizeof features[0];
         tok = strtok_r(NULL, " ", &save)) {
        if (strchr(tok, '=')) continue; /* settings such as threads=2, not instruction sets */
        for (char *c = tok; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        features[n++] = (struct ggml_backend_feature){tok, "1"};
    }
    features[n] = (struct ggml_backend_feature){NULL, NULL};
}

/* The version of the CPU-role contract this plugin serves (ggmlc-plugin.h). */
static const uint32_t cpu_role_version = GGMLC_CPU_ROLE_VERSION;

static void *reg_proc_address(ggml_backend_reg_t reg, const char *name) {
    static const struct {
        const char *name;
        void *fn;
    } procs[] = {
        {GGMLC_CPU_PROC_ROLE_VERSION, (void *)&cpu_role_version},
        {GGMLC_CPU_PROC_GRAPH_PLAN, (void *)cpu_proc_graph_plan},
        {GGMLC_CPU_PROC_GRAPH_COMPUTE, (void *)cpu_proc_graph_compute},
        {GGMLC_CPU_PROC_THREADPOOL_NEW, (void *)cpu_proc_threadpool_new},
        {GGMLC_CPU_PROC_THREADPOOL_FREE, (void *)cpu_proc_threadpool_free},
        {GGMLC_CPU_PROC_THREADPOOL_SIZE, (void *)cpu_proc_threadpool_size},
        {GGMLC_CPU_PROC_THREADPOOL_PAUSE, (void *)cpu_proc_threadpool_pause},
        {GGMLC_CPU_PROC_THREADPOOL_RESUME, (void *)cpu_proc_threadpool_resume},
        {GGMLC_CPU_PROC_SET_THREADPOOL, (void *)cpu_proc_set_threadpool},
        {GGMLC_CPU_PROC_TYPE_TRAITS, (void *)proc_type_traits},
        {GGMLC_CPU_PROC_SET_N_THREADS, (void *)cpu_proc_set_n_threads},
        {GGMLC_CPU_PROC_SET_ABORT, (void *)cpu_proc_set_abort_callback},
        {GGMLC_CPU_PROC_GET_FEATURES, (void *)proc_get_features},
        {"ggml_backend_dev_get_extra_bufts", (void *)cpu_repack_extra_bufts}, /* ggml's name: llama.cpp asks for it */
    };
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
        if (strcmp(procs[i].name, name) == 0) return procs[i].fn;
    return NULL;
}

static const struct ggmlc_reg_iface reg_iface = {
    .struct_size = sizeof(struct ggmlc_reg_iface),
    .get_proc_address = reg_proc_address,
};

/* ---------------------------------------------------------------- plugin */

static int plugin_probe(void) { return 1; /* any machine that runs this code has a CPU */ }

/* The `threads` option: 0 (or absent) = every CPU this process may use. */
static enum ggmlc_status parse_threads(const struct ggmlc_plugin_options *opts, int *n_threads) {
    const char *v = ggmlc_plugin_option(opts, "threads", "0");
    char *end;
    const long n = strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 0 || n > GGML_MAX_N_THREADS)
        return ggmlc_set_error(GGMLC_ERR_CONFIG, "backend %s: threads = '%s' is not a number of threads in 0..%d",
                               opts && opts->name ? opts->name : "cpu", v, GGML_MAX_N_THREADS);
    *n_threads = n == 0 ? cpu_count_online() : (int)n;
    return GGMLC_OK;
}

static enum ggmlc_status plugin_init(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) {
    int n_threads = 1;
    const enum ggmlc_status st = parse_threads(opts, &n_threads);
    if (st != GGMLC_OK) return st;
    cpu_set_default_threads(n_threads);
    cpu_vtable_init();
    read_cpu_model();
    build_caps();
    fill_features();
    fill_type_traits();

    ggml_backend_reg_t reg = ggmlc_reg_new("cpu", &reg_iface, NULL);
    if (!reg) return ggmlc_last_status() != GGMLC_OK ? ggmlc_last_status() : GGMLC_ERR_NOMEM;
    const struct ggmlc_device_iface dev_iface = {
        .struct_size = sizeof(struct ggmlc_device_iface),
        .get_name = dev_name,
        .get_description = dev_description,
        .get_memory = dev_memory,
        .get_type = dev_type,
        .get_caps = dev_caps,
        .init_backend = cpu_backend_new,
        .get_buffer_type = dev_buffer_type,
        .buffer_from_host_ptr = dev_buffer_from_host_ptr,
        .ops = cpu_op_table()->compute,
        .n_ops = GGML_OP_COUNT,
        .supports_op = dev_supports_op,
        .supports_buft = dev_supports_buft,
    };
    ggml_backend_dev_t dev = ggmlc_device_new(reg, &dev_iface, NULL);
    if (!dev || !cpu_repack_buft_create(dev)) return ggmlc_last_status() != GGMLC_OK ? ggmlc_last_status() : GGMLC_ERR_NOMEM;
    *reg_out = reg;
    return GGMLC_OK;
}

static void plugin_fini(void) { cpu_backend_shutdown(); }

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER,
    "cpu",
    PACKAGE_VERSION,
    "CPU backend: multithreaded kernels for every operator, SIMD chosen at run time",
    plugin_probe,
    plugin_init,
    plugin_fini,
};
