/*
 * ggmlc-gguf - inspect, quantize and dequantize GGUF files.
 *
 *   ggmlc-gguf info FILE               metadata and a table of the tensors
 *   ggmlc-gguf quantize IN OUT TYPE    weight matrices to TYPE (q4_0, q4_K, ...)
 *   ggmlc-gguf dequantize IN OUT       every quantized/half tensor to f32
 *
 * Exit status: 0 on success, 1 when a file cannot be read or written,
 * 2 for a usage error (unknown command or type).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ggml.h"
#include "ggmlc.h"
#include "gguf.h"
#include "tool-options.h"

#define EXIT_USAGE 2

static void print_usage(FILE *out) {
    fprintf(
        out,
        "usage: ggmlc-gguf info FILE\n"
        "       ggmlc-gguf quantize IN OUT TYPE   (TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K\n"
        "                                          iq4_nl iq4_xs mxfp4 f16 bf16 f32)\n"
        "       ggmlc-gguf dequantize IN OUT\n"
        "       ggmlc-gguf --help | --version\n");
}

static int usage(void) {
    print_usage(stderr);
    return EXIT_USAGE;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static void shape_str(const struct ggml_tensor *t, char *buf, size_t size) {
    int n = snprintf(buf, size, "[%" PRId64, t->ne[0]);
    for (int d = 1; d < ggml_n_dims(t); d++) n += snprintf(buf + n, size - (size_t)n, ", %" PRId64, t->ne[d]);
    snprintf(buf + n, size - (size_t)n, "]");
}

/* The tensor of the first tensor info in the ggml context gguf_init_from_file made: its
 * tensors follow the infos' order, after the data blob when the data was loaded (walking
 * them in step, not looking each up by name, keeps a table of many tensors linear). */
static struct ggml_tensor *first_info_tensor(struct ggml_context *ctx, bool no_alloc) {
    struct ggml_tensor *t = ggml_get_first_tensor(ctx);
    return no_alloc || !t ? t : ggml_get_next_tensor(ctx, t);
}

/* ---------------------------------------------------------------- info */

static void print_scalar(enum gguf_type type, const void *p) {
    switch (type) {
    case GGUF_TYPE_UINT8:   printf("%u", *(const uint8_t *)p); break;
    case GGUF_TYPE_INT8:    printf("%d", *(const int8_t *)p); break;
    case GGUF_TYPE_UINT16:  printf("%u", *(const uint16_t *)p); break;
    case GGUF_TYPE_INT16:   printf("%d", *(const int16_t *)p); break;
    case GGUF_TYPE_UINT32:  printf("%" PRIu32, *(const uint32_t *)p); break;
    case GGUF_TYPE_INT32:   printf("%" PRId32, *(const int32_t *)p); break;
    case GGUF_TYPE_FLOAT32: printf("%g", *(const float *)p); break;
    case GGUF_TYPE_BOOL:    printf("%s", *(const uint8_t *)p ? "true" : "false"); break;
    case GGUF_TYPE_UINT64:  printf("%" PRIu64, *(const uint64_t *)p); break;
    case GGUF_TYPE_INT64:   printf("%" PRId64, *(const int64_t *)p); break;
    case GGUF_TYPE_FLOAT64: printf("%g", *(const double *)p); break;
    default:                printf("?"); break;
    }
}

/* The code point of the valid UTF-8 sequence at s and its length (1 to 4); 0 when the bytes
 * there are not valid UTF-8 (stray, overlong, surrogate or beyond U+10FFFF). */
static int utf8_decode(const unsigned char *s, uint32_t *cp) {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    int len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0) return 0;
    uint32_t v = len == 1 ? s[0] : s[0] & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min_cp[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

/* Characters that must not reach a terminal as they are: C0 and C1 controls (escape
 * sequences start with them), DEL, and the bidirectional overrides and isolates that
 * reorder how the rest of the line is shown. */
static bool unsafe_char(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Print s with unsafe characters and invalid UTF-8 escaped (\xNN for a byte, \u{XXXX} for a
 * character; in quoted mode also \" and \\), at most max_chars characters of it; returns
 * the columns printed (wide characters counted as one) and whether s was cut. */
static int print_escaped(FILE *out, const char *s, size_t max_chars, bool quoted, bool *cut) {
    const unsigned char *p = (const unsigned char *)s;
    int columns = 0;
    for (size_t chars = 0; *p && chars < max_chars; chars++) {
        uint32_t cp = 0;
        const int len = utf8_decode(p, &cp);
        if (len == 0) {
            columns += fprintf(out, "\\x%02x", *p++);
            continue;
        }
        if (unsafe_char(cp)) columns += fprintf(out, cp < 0x80 ? "\\x%02x" : "\\u{%04x}", (unsigned)cp);
        else if (quoted && (cp == '"' || cp == '\\')) columns += fprintf(out, "\\%c", (int)cp);
        else columns += fprintf(out, "%.*s", len, (const char *)p) > 0;
        p += len;
    }
    *cut = *p != '\0';
    return columns;
}

/* A name (key, tensor name) escaped, padded to width columns. */
static void print_name(const char *name, int width) {
    bool cut;
    int columns = print_escaped(stdout, name, 200, false, &cut);
    if (cut) columns += printf("...");
    if (columns < width) printf("%*s", width - columns, "");
}

/* An error on stderr: "ggmlc-gguf: [NAME: ]MESSAGE", both escaped (they may come from the file). */
static void report(const char *name, const char *message) {
    bool cut;
    tool_discard_errors(); /* message carries what the library logged (tool-options.h) */
    fputs("ggmlc-gguf: ", stderr);
    if (name) {
        print_escaped(stderr, name, SIZE_MAX, false, &cut);
        fputs(": ", stderr);
    }
    print_escaped(stderr, message, SIZE_MAX, false, &cut);
    fputc('\n', stderr);
}

/* A string value, quoted, shortened and escaped. */
static void print_string(const char *s) {
    bool cut;
    putchar('"');
    print_escaped(stdout, s, 60, true, &cut);
    printf(cut ? "\"..." : "\"");
}

static void print_kv(const struct gguf_context *g, int64_t id) {
    const enum gguf_type type = gguf_get_kv_type(g, id);
    printf("  ");
    print_name(gguf_get_key(g, id), 40);
    printf(" ");
    if (type == GGUF_TYPE_STRING) {
        printf("str   ");
        print_string(gguf_get_val_str(g, id));
    } else if (type == GGUF_TYPE_ARRAY) {
        const enum gguf_type et = gguf_get_arr_type(g, id);
        const size_t n = gguf_get_arr_n(g, id);
        char label[32];
        snprintf(label, sizeof label, "%s[%zu]", gguf_type_name(et), n);
        printf("%-6s [", label);
        const uint8_t *data = et == GGUF_TYPE_STRING ? NULL : gguf_get_arr_data(g, id);
        for (size_t i = 0; i < n && i < 8; i++) {
            if (i) printf(", ");
            if (et == GGUF_TYPE_STRING) print_string(gguf_get_arr_str(g, id, i));
            else {
                static const size_t sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
                print_scalar(et, data + i * sizes[et]);
            }
        }
        printf(n > 8 ? ", ...]" : "]");
    } else {
        printf("%-6s ", gguf_type_name(type));
        print_scalar(type, gguf_get_val_data(g, id));
    }
    printf("\n");
}

static int cmd_info(const char *path) {
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){true, &ctx});
    if (!g) {
        report(NULL, ggmlc_last_error());
        return 1;
    }
    printf("%s: GGUF version %u, alignment %zu, data at byte %zu\n", path, gguf_get_version(g), gguf_get_alignment(g),
           gguf_get_data_offset(g));
    printf("%" PRId64 " key-value pairs:\n", gguf_get_n_kv(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) print_kv(g, i);
    printf("%" PRId64 " tensors:\n", gguf_get_n_tensors(g));
    printf("  %4s  %-40s %-7s %-24s %12s %12s\n", "#", "name", "type", "shape", "bytes", "offset");
    size_t total = 0;
    const struct ggml_tensor *t = first_info_tensor(ctx, true);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++, t = ggml_get_next_tensor(ctx, (struct ggml_tensor *)t)) {
        char shape[96];
        shape_str(t, shape, sizeof shape);
        printf("  %4" PRId64 "  ", i);
        print_name(gguf_get_tensor_name(g, i), 40);
        printf(" %-7s %-24s %12zu %12zu\n", ggml_type_name(gguf_get_tensor_type(g, i)), shape, gguf_get_tensor_size(g, i),
               gguf_get_tensor_offset(g, i));
        total += gguf_get_tensor_size(g, i);
    }
    printf("total tensor data: %zu bytes (%.2f MiB)\n", total, mib(total));
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}

/* ---------------------------------------------------- quantize/dequantize */

static bool parse_type(const char *name, enum ggml_type *type) {
    static const enum ggml_type allowed[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K,
        GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
        GGML_TYPE_MXFP4, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcasecmp(name, ggml_type_name(allowed[i])) == 0) { *type = allowed[i]; return true; }
    return false;
}

/* The type a weight gets: 1-D tensors and norms stay as they are; rows that are not whole
 * super-blocks fall back to a 32-value format of similar precision. */
static enum ggml_type target_type(const struct ggml_tensor *t, enum ggml_type want) {
    const bool is_float = t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16 || t->type == GGML_TYPE_BF16;
    if (!is_float || ggml_n_dims(t) < 2 || strstr(t->name, "norm") != NULL) return t->type;
    if (t->ne[0] % ggml_blck_size(want) == 0) return want;
    enum ggml_type fallback;
    switch (want) {
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: fallback = GGML_TYPE_Q5_0; break;
    case GGML_TYPE_Q5_K:   fallback = GGML_TYPE_Q5_1; break;
    case GGML_TYPE_IQ4_XS: fallback = GGML_TYPE_IQ4_NL; break;
    default:               fallback = GGML_TYPE_Q8_0; break;
    }
    return t->ne[0] % ggml_blck_size(fallback) == 0 ? fallback : GGML_TYPE_F16;
}

/* Convert one tensor (contiguous, in host memory) to dst_type; returns new malloc'd data or NULL. */
static void *convert(const struct ggml_tensor *t, enum ggml_type dst_type, size_t *out_size) {
    const int64_t n_per_row = t->ne[0], nrows = ggml_nrows(t);
    *out_size = ggml_row_size(dst_type, n_per_row) * (size_t)nrows;
    void *out = malloc(*out_size ? *out_size : 1);
    float *row = malloc((size_t)n_per_row * sizeof *row);
    if (!out || !row) { free(out); free(row); return NULL; }
    const size_t src_row = ggml_row_size(t->type, n_per_row);
    for (int64_t r = 0; r < nrows; r++) {
        const void *src = (const char *)t->data + (size_t)r * src_row;
        if (t->type == GGML_TYPE_F32) memcpy(row, src, (size_t)n_per_row * sizeof *row);
        else ggml_get_type_traits(t->type)->to_float(src, row, n_per_row);
        if (ggml_quantize_chunk(dst_type, row, (char *)out + (size_t)r * ggml_row_size(dst_type, n_per_row), 0, 1,
                                n_per_row, NULL) == 0 && *out_size) {
            free(out);
            free(row);
            return NULL;
        }
    }
    free(row);
    return out;
}

/* Bytes of the data of the first n tensors of ctx (the file's, after its info tensor). */
static size_t total_bytes(struct ggml_context *ctx, int64_t n) {
    size_t total = 0;
    const struct ggml_tensor *t = first_info_tensor(ctx, false);
    for (int64_t i = 0; i < n && t; i++, t = ggml_get_next_tensor(ctx, (struct ggml_tensor *)t))
        total += ggml_nbytes(t);
    return total;
}

/* Read IN, convert each tensor (to f32 when dequantizing, else by target_type), write OUT. */
static int transform(const char *in, const char *out, enum ggml_type want, bool dequantize) {
    if (ggmlc_check_writable(out) != GGMLC_OK) { /* before converting every tensor, not after */
        report(NULL, ggmlc_last_error());
        return 1;
    }
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(in, (struct gguf_init_params){false, &ctx});
    if (!g) {
        report(NULL, ggmlc_last_error());
        return 1;
    }
    struct gguf_context *o = gguf_init_empty();
    gguf_set_kv(o, g);
    if (!dequantize) gguf_set_val_u32(o, "general.quantization_version", 2);
    const int64_t n = gguf_get_n_tensors(g);
    void **buffers = calloc((size_t)n + 1, sizeof *buffers);
    size_t before = 0, after = 0;
    int status = 0;
    struct ggmlc_progress progress; /* a bar on a terminal's stderr, nothing on a pipe */
    ggmlc_progress_begin(&progress, dequantize ? "dequantizing" : "quantizing",
                         (int64_t)total_bytes(ctx, n));
    ggmlc_progress_update(&progress, 0);
    const struct ggml_tensor *t = first_info_tensor(ctx, false);
    for (int64_t i = 0; i < n && status == 0; i++, t = ggml_get_next_tensor(ctx, (struct ggml_tensor *)t)) {
        enum ggml_type dst = t->type;
        if (dequantize) {
            if (ggml_is_quantized(t->type) || t->type == GGML_TYPE_F16 || t->type == GGML_TYPE_BF16) dst = GGML_TYPE_F32;
            if (dst != t->type && !ggml_get_type_traits(t->type)->to_float) {
                char msg[96];
                snprintf(msg, sizeof msg, "cannot dequantize type %s", ggml_type_name(t->type));
                report(t->name, msg);
                status = 1;
                break;
            }
        } else {
            dst = target_type(t, want);
        }
        size_t size = ggml_nbytes(t);
        struct ggml_tensor copy = *t;
        if (dst != t->type) {
            buffers[i] = convert(t, dst, &size);
            if (!buffers[i]) {
                char msg[512];
                snprintf(msg, sizeof msg, "conversion to %s failed: %s", ggml_type_name(dst), ggmlc_last_error());
                report(t->name, msg);
                status = 1;
                break;
            }
            copy.type = dst;
            copy.data = buffers[i];
            copy.nb[0] = ggml_type_size(dst);
            copy.nb[1] = ggml_row_size(dst, t->ne[0]);
            for (int d = 2; d < GGML_MAX_DIMS; d++) copy.nb[d] = copy.nb[d - 1] * (size_t)t->ne[d - 1];
        }
        gguf_add_tensor(o, &copy);
        ggmlc_progress_clear(&progress);
        char shape[96];
        shape_str(t, shape, sizeof shape);
        printf("[%4" PRId64 "/%4" PRId64 "] ", i + 1, n);
        print_name(t->name, 40);
        printf(" %-7s %-20s -> %-7s %9.2f MiB -> %9.2f MiB\n", ggml_type_name(t->type), shape, ggml_type_name(dst),
               mib(ggml_nbytes(t)), mib(size));
        fflush(stdout);
        before += ggml_nbytes(t);
        after += size;
        ggmlc_progress_update(&progress, (int64_t)before);
    }
    ggmlc_progress_end(&progress);
    if (status == 0 && !gguf_write_to_file(o, out, false)) {
        report(NULL, ggmlc_last_error());
        status = 1;
    }
    if (status == 0)
        printf("tensor data: %.2f MiB -> %.2f MiB (%.1f%%), written to %s\n", mib(before), mib(after),
               before ? 100.0 * (double)after / (double)before : 100.0, out);
    for (int64_t i = 0; i < n; i++) free(buffers[i]);
    free(buffers);
    gguf_free(o);
    gguf_free(g);
    ggml_free(ctx);
    return status;
}

int main(int argc, char **argv) {
    if (tool_answer_standard_option(argc, argv, "ggmlc-gguf", print_usage)) return 0;
    tool_hold_error_logs(); /* each failure printed once, by report() */
    if (argc == 3 && strcmp(argv[1], "info") == 0) return cmd_info(argv[2]);
    if (argc == 4 && strcmp(argv[1], "dequantize") == 0) return transform(argv[2], argv[3], GGML_TYPE_F32, true);
    if (argc == 5 && strcmp(argv[1], "quantize") == 0) {
        enum ggml_type type;
        if (!parse_type(argv[4], &type)) {
            fprintf(stderr, "ggmlc-gguf: unknown or unsupported type '%s'\n", argv[4]);
            return usage();
        }
        return transform(argv[2], argv[3], type, false);
    }
    return usage();
}
