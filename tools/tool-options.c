/*
 * tool-options.c - --help and --version, answered alike by every tool, and the rule that
 * prints each error once (tool-options.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "tool-options.h"

#if defined(__SSE2__)
#include <pmmintrin.h>
#endif

void tool_print_version(const char *tool) {
    printf("%s (ggmlc) %s, plugin ABI %d.%d\n", tool, ggmlc_version(), GGMLC_PLUGIN_ABI_MAJOR,
           GGMLC_PLUGIN_ABI_MINOR);
}

bool tool_answer_standard_option(int argc, char **argv, const char *tool, void (*help)(FILE *out)) {
    if (argc < 2) return false;
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(stdout);
        return true;
    }
    if (strcmp(argv[1], "--version") == 0) {
        tool_print_version(tool);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------ errors once */

static struct {
    pthread_mutex_t lock; /* the library may log from worker threads */
    char text[8192];
    size_t len;
    bool holding; /* the last line logged was an error: its continuations are held too */
} held = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void flush_locked(void) {
    if (held.len > 0) fwrite(held.text, 1, held.len, stderr);
    held.len = 0;
}

static void hold_or_print(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    pthread_mutex_lock(&held.lock);
    const bool error =
        level == GGML_LOG_LEVEL_ERROR || (level == GGML_LOG_LEVEL_CONT && held.holding);
    const size_t n = strlen(text);
    if (!error) flush_locked(); /* keep the order of what is printed */
    if (error && held.len + n > sizeof held.text) flush_locked();
    if (error && n <= sizeof held.text) {
        memcpy(held.text + held.len, text, n);
        held.len += n;
    } else {
        fputs(text, stderr);
    }
    if (level != GGML_LOG_LEVEL_CONT) held.holding = error;
    pthread_mutex_unlock(&held.lock);
}

void tool_flush_errors(void) {
    pthread_mutex_lock(&held.lock);
    flush_locked();
    fflush(stderr);
    pthread_mutex_unlock(&held.lock);
}

void tool_hold_error_logs(void) {
    ggml_log_set(hold_or_print, NULL);
    atexit(tool_flush_errors);
}

void tool_discard_errors(void) {
    pthread_mutex_lock(&held.lock);
    held.len = 0;
    pthread_mutex_unlock(&held.lock);
}

void tool_fail(const char *tool, const char *fmt, ...) {
    tool_discard_errors(); /* the message below carries what they said */
    fprintf(stderr, "%s: ", tool);
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
    fflush(stderr);
}

bool tool_parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool tool_parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

void tool_flush_subnormals(void) {
#if defined(__SSE2__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}
