/*
 * ggmlc-info - what ggmlc sees on this machine: the configuration files it
 * read, every configured backend (loaded, failed and why, or disabled), the
 * devices, and with --ops which operators each device's plugin provides.
 *
 * Exit status: 0 when the CPU backend loaded, 1 when it did not, 2 on a
 * usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ggml-backend.h"
#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "tool-options.h"

static void usage(FILE *out) {
    fprintf(out,
            "Usage: ggmlc-info [--ops] [--help] [--version]\n"
            "Show the ggmlc configuration, its backends and their devices.\n\n"
            "  --ops      also list which operators each device supports\n"
            "  --help     show this help\n"
            "  --version  show the version of ggmlc\n\n"
            "Environment: GGMLC_CONFIG (configuration file), GGMLC_BACKENDS (backends to use, in\n"
            "order), GGMLC_DEBUG=loader (trace every file and path the loader tries).\n"
            "Exit status: 0 when the CPU backend loaded, 1 otherwise.\n");
}

static const char *or_dash(const char *s) { return s && *s ? s : "-"; }

static const char *dev_type_name(enum ggml_backend_dev_type type) {
    switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU:   return "CPU";
    case GGML_BACKEND_DEVICE_TYPE_GPU:   return "GPU";
    case GGML_BACKEND_DEVICE_TYPE_IGPU:  return "iGPU";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
    case GGML_BACKEND_DEVICE_TYPE_META:  return "meta";
    }
    return "?";
}

/* "1.5 GiB" into buf. */
static const char *human_size(size_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, size, "%zu B", bytes);
    else snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

static size_t max_len(size_t current, const char *s) {
    const size_t n = strlen(or_dash(s));
    return n > current ? n : current;
}

/* ------------------------------------------------------------ sections */

static void print_config_files(void) {
    printf("Configuration files:\n");
    const size_t n = ggmlc_config_file_count();
    for (size_t i = 0; i < n; i++) printf("  %s\n", ggmlc_config_file(i));
    if (n == 0) printf("  (none found: using the CPU plugin of the plugin folder)\n");
    printf("\n");
}

static const char *status_word(const struct ggmlc_backend_info *info) {
    if (info->loaded) return "loaded";
    if (!info->enabled) return "disabled";
    if (info->status == GGMLC_OK) return "unloaded";
    return "FAILED";
}

/* Returns whether the CPU backend is loaded. */
static bool print_backends(void) {
    const size_t n = ggmlc_backend_count();
    size_t w_name = 4, w_status = 6, w_version = 7;
    struct ggmlc_backend_info info;
    for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) {
        w_name = max_len(w_name, info.name);
        w_status = max_len(w_status, status_word(&info));
        w_version = max_len(w_version, info.version);
    }
    printf("Backends, in order of preference:\n");
    printf("  %-3s %-*s  %-*s  %-*s  %s\n", "#", (int)w_name, "name", (int)w_status, "status", (int)w_version, "version",
           "library");
    bool cpu_loaded = false;
    for (size_t i = 0; i < n && ggmlc_backend_get_info(i, &info); i++) {
        char rank[16];
        if (info.priority >= 0) snprintf(rank, sizeof rank, "%d", info.priority + 1);
        else snprintf(rank, sizeof rank, "-");
        printf("  %-3s %-*s  %-*s  %-*s  %s\n", rank, (int)w_name, info.name, (int)w_status, status_word(&info),
               (int)w_version, or_dash(info.version), or_dash(info.path ? info.path : info.library));
        if (info.reason) printf("  %-3s %-*s  %s\n", "", (int)w_name, "", info.reason);
        if (info.loaded && strcasecmp(info.name, "cpu") == 0) cpu_loaded = true;
    }
    if (n == 0) printf("  (none)\n");
    printf("\n");
    return cpu_loaded;
}

static void print_devices(void) {
    const size_t n = ggml_backend_dev_count();
    size_t w_name = 4, w_reg = 7, w_mem = strlen("memory (free / total)");
    char mem[n ? n : 1][48];
    for (size_t i = 0; i < n; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        size_t free_mem, total;
        ggml_backend_dev_memory(dev, &free_mem, &total);
        char a[16], b[16];
        snprintf(mem[i], sizeof mem[i], "%s / %s", human_size(free_mem, a, sizeof a), human_size(total, b, sizeof b));
        w_name = max_len(w_name, ggml_backend_dev_name(dev));
        w_reg = max_len(w_reg, ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)));
        w_mem = max_len(w_mem, mem[i]);
    }
    printf("Devices, in order of preference:\n");
    printf("  %-3s %-*s  %-5s  %-*s  %-*s  %s\n", "#", (int)w_name, "name", "type", (int)w_reg, "backend", (int)w_mem,
           "memory (free / total)", "description");
    for (size_t i = 0; i < n; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        printf("  %-3zu %-*s  %-5s  %-*s  %-*s  %s\n", i, (int)w_name, ggml_backend_dev_name(dev),
               dev_type_name(ggml_backend_dev_type(dev)), (int)w_reg, ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)),
               (int)w_mem, mem[i], ggml_backend_dev_description(dev));
        const char *caps = ggmlc_device_caps(dev);
        if (*caps) printf("  %-3s %-*s  caps: %s\n", "", (int)w_name, "", caps);
        const char *why;
        const bool eligible = ggmlc_device_is_default_choice(dev, &why);
        printf("  %-3s %-*s  rank: %s: %s\n", "", (int)w_name, "",
               eligible ? "default choice" : "only when named", why);
    }
    if (n == 0) printf("  (none)\n");
    ggml_backend_dev_t best = ggmlc_device_default();
    printf("Default device (ggml_backend_init_best, ggmlc-train, the model API): %s\n",
           best ? ggml_backend_dev_name(best) : "none");
    printf("  (the first default-choice GPU in the order above, else the CPU)\n\n");
}

/* ----------------------------------------------------------- op table */

/* A small F32 node of op with sub-operator sub, for asking supports_op about UNARY and GLU. */
static bool device_has_sub_op(ggml_backend_dev_t dev, struct ggml_context *ctx, enum ggml_op op, int sub) {
    struct ggml_tensor *src = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor *node = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, op == GGML_OP_GLU ? 4 : 8, 4);
    if (!src || !node) return false;
    node->op = op;
    node->op_params[0] = sub;
    node->src[0] = src;
    return ggmlc_device_op(dev, node) != NULL;
}

static void print_op_row(const char *label, size_t w_label, size_t n_dev, const size_t *w_dev, const bool *has) {
    printf("  %-*s", (int)w_label, label);
    for (size_t d = 0; d < n_dev; d++) printf("  %-*s", d + 1 < n_dev ? (int)w_dev[d] : 0, has[d] ? "x" : ".");
    printf("\n");
}

static void print_ops(void) {
    const size_t n_dev = ggml_backend_dev_count();
    if (n_dev == 0) return;
    size_t *w_dev = calloc(n_dev, sizeof *w_dev);
    bool *has = calloc(n_dev, sizeof *has);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead(), NULL, true});
    if (!w_dev || !has || !ctx) {
        fprintf(stderr, "ggmlc-info: out of memory\n");
        free(w_dev);
        free(has);
        return;
    }
    const size_t w_label = 26;
    printf("Operators (x: the device's plugin computes it; UNARY and GLU per sub-operator, for f32):\n");
    printf("  %-*s", (int)w_label, "operator");
    for (size_t d = 0; d < n_dev; d++) {
        w_dev[d] = max_len(1, ggml_backend_dev_name(ggml_backend_dev_get(d)));
        printf("  %s", ggml_backend_dev_name(ggml_backend_dev_get(d)));
    }
    printf("\n");
    for (int op = 1; op < GGML_OP_COUNT; op++) { /* 0 is NONE */
        if (op == GGML_OP_UNARY || op == GGML_OP_GLU) {
            const int n_sub = op == GGML_OP_UNARY ? GGML_UNARY_OP_COUNT : GGML_GLU_OP_COUNT;
            for (int sub = 0; sub < n_sub; sub++) {
                char label[64];
                snprintf(label, sizeof label, "%s:%s", ggml_op_name(op),
                         op == GGML_OP_UNARY ? ggml_unary_op_name(sub) : ggml_glu_op_name(sub));
                for (size_t d = 0; d < n_dev; d++) {
                    ggml_reset(ctx);
                    has[d] = device_has_sub_op(ggml_backend_dev_get(d), ctx, op, sub);
                }
                print_op_row(label, w_label, n_dev, w_dev, has);
            }
            continue;
        }
        for (size_t d = 0; d < n_dev; d++)
            has[d] = ggmlc_op_is_view(op) || ggmlc_device_has_op(ggml_backend_dev_get(d), op);
        print_op_row(ggml_op_name(op), w_label, n_dev, w_dev, has);
    }
    ggml_free(ctx);
    free(w_dev);
    free(has);
}

int main(int argc, char **argv) {
    bool ops = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0) {
            ops = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            tool_print_version("ggmlc-info");
            return 0;
        } else {
            fprintf(stderr, "ggmlc-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    ggmlc_init(); /* problems are logged to stderr as they are found, and listed below */
    printf("ggmlc %s, plugin ABI %d.%d\n\n", ggmlc_version(), GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR);
    print_config_files();
    const bool cpu_loaded = print_backends();
    print_devices();
    if (ops) print_ops();
    if (!cpu_loaded) fprintf(stderr, "ggmlc-info: the CPU backend is not loaded\n");
    ggmlc_shutdown();
    return cpu_loaded ? 0 : 1;
}
