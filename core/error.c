/*
 * error.c - status codes, per-thread last error, logging, aborts, clocks,
 * environment access.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fault-inject.h"
#include "ggml-impl.h"

/* ------------------------------------------------------------ statuses */

static const char *const status_names[GGMLC_STATUS_COUNT] = {
    [GGMLC_OK]              = "GGMLC_OK",
    [GGMLC_ERR_INVALID_ARG] = "GGMLC_ERR_INVALID_ARG",
    [GGMLC_ERR_SHAPE]       = "GGMLC_ERR_SHAPE",
    [GGMLC_ERR_TYPE]        = "GGMLC_ERR_TYPE",
    [GGMLC_ERR_NOMEM]       = "GGMLC_ERR_NOMEM",
    [GGMLC_ERR_IO]          = "GGMLC_ERR_IO",
    [GGMLC_ERR_FORMAT]      = "GGMLC_ERR_FORMAT",
    [GGMLC_ERR_CONFIG]      = "GGMLC_ERR_CONFIG",
    [GGMLC_ERR_PLUGIN]      = "GGMLC_ERR_PLUGIN",
    [GGMLC_ERR_ABI]         = "GGMLC_ERR_ABI",
    [GGMLC_ERR_UNSUPPORTED] = "GGMLC_ERR_UNSUPPORTED",
    [GGMLC_ERR_BACKEND]     = "GGMLC_ERR_BACKEND",
    [GGMLC_ERR_NOT_FOUND]   = "GGMLC_ERR_NOT_FOUND",
    [GGMLC_ERR_INTERNAL]    = "GGMLC_ERR_INTERNAL",
};

static const char *const status_texts[GGMLC_STATUS_COUNT] = {
    [GGMLC_OK]              = "success",
    [GGMLC_ERR_INVALID_ARG] = "invalid argument",
    [GGMLC_ERR_SHAPE]       = "operand shapes do not fit the operator",
    [GGMLC_ERR_TYPE]        = "operand types do not fit the operator",
    [GGMLC_ERR_NOMEM]       = "out of memory",
    [GGMLC_ERR_IO]          = "input/output error",
    [GGMLC_ERR_FORMAT]      = "malformed or truncated file",
    [GGMLC_ERR_CONFIG]      = "invalid configuration",
    [GGMLC_ERR_PLUGIN]      = "plugin could not be loaded or initialised",
    [GGMLC_ERR_ABI]         = "plugin built for an incompatible ABI",
    [GGMLC_ERR_UNSUPPORTED] = "not supported by any backend",
    [GGMLC_ERR_BACKEND]     = "backend failure",
    [GGMLC_ERR_NOT_FOUND]   = "not found",
    [GGMLC_ERR_INTERNAL]    = "internal error",
};

const char *ggmlc_status_name(enum ggmlc_status status) {
    return (unsigned)status < GGMLC_STATUS_COUNT ? status_names[status] : "GGMLC_STATUS_UNKNOWN";
}

const char *ggmlc_status_str(enum ggmlc_status status) {
    return (unsigned)status < GGMLC_STATUS_COUNT ? status_texts[status] : "unknown status";
}

const char *ggml_status_to_string(enum ggml_status status) {
    switch (status) {
    case GGML_STATUS_ALLOC_FAILED: return "GGML status: error (failed to allocate memory)";
    case GGML_STATUS_FAILED:       return "GGML status: error (operation failed)";
    case GGML_STATUS_SUCCESS:      return "GGML status: success";
    case GGML_STATUS_ABORTED:      return "GGML status: warning (operation aborted)";
    }
    return "GGML status: unknown";
}

/* ---------------------------------------------------------- last error */

static _Thread_local enum ggmlc_status last_status;
static _Thread_local char last_message[512];

const char *ggmlc_last_error(void) { return last_message; }
enum ggmlc_status ggmlc_last_status(void) { return last_status; }

void ggmlc_clear_error(void) {
    last_status = GGMLC_OK;
    last_message[0] = '\0';
}

static _Thread_local bool errors_quiet;

void ggmlc__errors_quiet(bool quiet) { errors_quiet = quiet; }

static enum ggmlc_status set_error_v(enum ggmlc_status status, const char *fmt, va_list args) {
    char message[sizeof last_message]; /* the arguments may include the previous message */
    vsnprintf(message, sizeof message, fmt, args);
    memcpy(last_message, message, sizeof message);
    last_status = status;
    if (!errors_quiet) ggmlc__log_internal(GGML_LOG_LEVEL_ERROR, "ggmlc: %s\n", last_message);
    return status;
}

enum ggmlc_status ggmlc_set_error(enum ggmlc_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    set_error_v(status, fmt, args);
    va_end(args);
    return status;
}

struct ggml_tensor *ggmlc__op_fail(enum ggmlc_status status, const char *func, const char *fmt, ...) {
    char detail[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    ggmlc_set_error(status, "%s: %s", func, detail);
    return NULL;
}

/* ------------------------------------------------------------- logging */

static void log_to_stderr(enum ggml_log_level level, const char *text, void *user_data) {
    (void)level;
    (void)user_data;
    fputs(text, stderr);
    fflush(stderr);
}

static ggml_log_callback log_callback = log_to_stderr;
static void *log_user_data;

void ggml_log_set(ggml_log_callback callback, void *user_data) {
    log_callback = callback ? callback : log_to_stderr;
    log_user_data = user_data;
}

void ggml_log_get(ggml_log_callback *callback, void **user_data) {
    if (callback) *callback = log_callback;
    if (user_data) *user_data = log_user_data;
}

void ggmlc__log_internal_v(enum ggml_log_level level, const char *fmt, va_list args) {
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, args);
    log_callback(level, buf, log_user_data);
}

void ggmlc__log_internal(enum ggml_log_level level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    ggmlc__log_internal_v(level, fmt, args);
    va_end(args);
}

void ggmlc_log(enum ggml_log_level level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    ggmlc__log_internal_v(level, fmt, args);
    va_end(args);
}

/* -------------------------------------------------------------- aborts */

static ggml_abort_callback_t abort_callback;

ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback) {
    ggml_abort_callback_t old = abort_callback;
    abort_callback = callback;
    return old;
}

void ggml_abort(const char *file, int line, const char *fmt, ...) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s:%d: ", file, line);
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, args);
    va_end(args);
    if (abort_callback) {
        abort_callback(msg);
    } else {
        /* file and line are the caller's (GGML_ASSERT / GGML_ABORT expand there, in user code
         * as in ggmlc), so the message reads like ggml's: "file:line: GGML_ASSERT(x) failed" */
        fprintf(stderr, "%s\n", msg);
    }
    abort();
}

/* -------------------------------------------------------------- clocks */

void ggml_time_init(void) {}

int64_t ggml_time_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ggml_time_ms(void) { return ggml_time_us() / 1000; }
int64_t ggml_cycles(void) { return (int64_t)clock(); }
int64_t ggml_cycles_per_ms(void) { return CLOCKS_PER_SEC / 1000; }

FILE *ggml_fopen(const char *fname, const char *mode) { return fopen(fname, mode); }

/* --------------------------------------------------------- environment */

const char *ggmlc_getenv(const char *name) {
    if (ggmlc_fault_secure_mode()) return NULL; /* test hook: what a set-uid program sees */
#ifdef HAVE_SECURE_GETENV
    return secure_getenv(name);
#else
    return getenv(name);
#endif
}

bool ggmlc_debug_enabled(const char *channel) {
    const char *dbg = ggmlc_getenv("GGMLC_DEBUG");
    if (!dbg || !channel) return false;
    const size_t len = strlen(channel);
    for (const char *p = dbg; *p;) {
        const char *end = p + strcspn(p, ",: ");
        if ((size_t)(end - p) == len && strncmp(p, channel, len) == 0) return true;
        if (end - p == 3 && strncmp(p, "all", 3) == 0) return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

const char *ggmlc_version(void) { return PACKAGE_VERSION; }
const char *ggml_version(void) { return PACKAGE_VERSION; }
const char *ggml_commit(void) { return "ggmlc-" PACKAGE_VERSION; }

bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b) {
    return memcmp(guid_a, guid_b, sizeof(ggml_guid)) == 0;
}
