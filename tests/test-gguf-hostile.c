/*
 * test-gguf-hostile.c - GGUF input and callers that used to break the
 * library, for test-gguf: a file truncated by "another process" while it
 * is read (SIGBUS when it was mapped), a FIFO and /dev/zero given as files,
 * setters handed the context's own key strings, an alignment of 2^31, and
 * a file of many small keys (quadratic duplicate checks).  Cases that could
 * crash, hang or exhaust memory before their fix run in a child process
 * with a time and memory limit, so they fail as a test instead.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

void test_hostile_files(const char *dir);

static const char *dir_path(const char *dir, const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* ------------------------------------------- a child with limits */

/* Run fn(arg) in a child process limited to `seconds` and (outside AddressSanitizer,
 * which reserves a large address space) 1 GiB of memory; true when it returned true.
 * how says what happened. */
static bool run_limited(bool (*fn)(const char *), const char *arg, unsigned seconds, char *how, size_t how_size) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(how, how_size, "fork failed: %s", strerror(errno));
        return false;
    }
    if (pid == 0) {
        alarm(seconds);
#ifndef __SANITIZE_ADDRESS__
        const struct rlimit mem = {1ul << 30, 1ul << 30};
        setrlimit(RLIMIT_AS, &mem);
#endif
        _exit(fn(arg) ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status))
        snprintf(how, how_size, "killed by signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? ": it hung" : WTERMSIG(status) == SIGBUS ? ": SIGBUS" : "");
    else
        snprintf(how, how_size, "exit status %d", WEXITSTATUS(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* -------------------------------------- truncated while being read */

/* fstat of this program, seen by libggmlc too: when armed, the first fstat of the file
 * armed_path truncates that file right after looking at it, as another process could
 * between the reader's fstat and its reads; the caller sees the size from before. */
static const char *armed_path;
static off_t armed_new_size;
static bool truncated_during_read;

__attribute__((visibility("default"))) int fstat(int fd, struct stat *st); /* seen by the library */
int fstat(int fd, struct stat *st) {
    const int r = (int)syscall(SYS_fstat, fd, st);
    struct stat target;
    if (r == 0 && armed_path && stat(armed_path, &target) == 0 && target.st_ino == st->st_ino &&
        target.st_dev == st->st_dev) {
        if (truncate(armed_path, armed_new_size) == 0) truncated_during_read = true;
        armed_path = NULL;
    }
    return r;
}

/* Child: read the file while it shrinks; true when that is reported (not a crash). */
static bool read_while_truncated(const char *path) {
    armed_path = path;
    armed_new_size = 100;
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    const bool ok = truncated_during_read && !g && !ctx && ggmlc_last_status() == GGMLC_ERR_IO &&
                    strstr(ggmlc_last_error(), "file changed while reading") != NULL;
    fprintf(stderr, "# truncated: %s; read: %s; error: %s\n", truncated_during_read ? "yes" : "no", g ? "yes" : "no",
            ggmlc_last_error());
    return ok;
}

/* A file of 1 MiB of tensor data behind a small header. */
static bool write_big_file(const char *path) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){(1 << 20) + 4096, NULL, false});
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1 << 18);
    ggml_set_name(t, "big");
    memset(t->data, 0x40, ggml_nbytes(t));
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.name", "shrinking");
    gguf_add_tensor(g, t);
    const bool ok = gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(ctx);
    return ok;
}

static void test_truncated_while_read(const char *dir) {
    const char *path = dir_path(dir, "shrinking.gguf");
    char how[96];
    tap_ok(write_big_file(path) && run_limited(read_while_truncated, path, 20, how, sizeof how),
           "a file truncated between open and read: 'file changed while reading', no SIGBUS (%s)", how);
    write_big_file(path);
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    const struct ggml_tensor *t = ctx ? ggml_get_tensor(ctx, "big") : NULL;
    tap_ok(g && t && ((const uint8_t *)t->data)[12345] == 0x40, "the same file untouched reads with its data");
    gguf_free(g);
    ggml_free(ctx);
}

/* -------------------------------------------- FIFOs and devices */

static bool refused_as_not_regular(const char *path) {
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, NULL});
    fprintf(stderr, "# %s: %s\n", path, g ? "accepted" : ggmlc_last_error());
    return !g && strstr(ggmlc_last_error(), "not a regular file") != NULL;
}

static bool stream_refused(const char *path) {
    FILE *f = fopen(path, "rb");
    struct gguf_context *g = f ? gguf_init_from_file_ptr(f, (struct gguf_init_params){false, NULL}) : NULL;
    fprintf(stderr, "# stream %s: %s\n", path, g ? "accepted" : ggmlc_last_error());
    return f && !g && strstr(ggmlc_last_error(), "bad magic") != NULL;
}

static void test_not_regular_files(const char *dir) {
    char how[96];
    const char *fifo = dir_path(dir, "fifo.gguf");
    if (mkfifo(fifo, 0600) == 0)
        tap_ok(run_limited(refused_as_not_regular, fifo, 10, how, sizeof how),
               "a FIFO without a writer is refused at once, not waited on (%s)", how);
    else
        tap_skip("mkfifo failed", "a FIFO is refused");
    tap_ok(run_limited(refused_as_not_regular, "/dev/zero", 10, how, sizeof how),
           "/dev/zero is refused, not read until memory runs out (%s)", how);
    tap_ok(run_limited(refused_as_not_regular, dir, 10, how, sizeof how), "a folder is refused (%s)", how);
    tap_ok(run_limited(stream_refused, "/dev/zero", 10, how, sizeof how),
           "/dev/zero as a stream (gguf_init_from_file_ptr) is refused from its first bytes (%s)", how);
}

/* ---------------------------------------- setters and own keys */

/* Two tensors, the first of 8 bytes: where the second starts depends on the alignment. */
static struct gguf_context *two_tensor_context(struct ggml_context *ctx) {
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 32);
    gguf_set_val_str(g, "general.name", "own keys");
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_set_name(a, "a");
    ggml_set_name(b, "b");
    for (int i = 0; i < 2; i++) ((float *)a->data)[i] = 1.0f + (float)i;
    for (int i = 0; i < 3; i++) ((float *)b->data)[i] = -1.0f - (float)i;
    gguf_add_tensor(g, a);
    gguf_add_tensor(g, b);
    return g;
}

/* Written to path and read back: the pairs, the alignment and tensor b's data survive. */
static bool round_trips(const struct gguf_context *g, const char *path, size_t alignment) {
    if (!gguf_write_to_file(g, path, false)) return false;
    struct ggml_context *ctx = NULL;
    struct gguf_context *r = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    const struct ggml_tensor *b = ctx ? ggml_get_tensor(ctx, "b") : NULL;
    const int64_t name = r ? gguf_find_key(r, "general.name") : -1;
    const bool ok = r && gguf_get_alignment(r) == alignment && b && ((const float *)b->data)[2] == -3.0f && name >= 0 &&
                    strcmp(gguf_get_val_str(r, name), "own keys") == 0 && gguf_get_n_kv(r) == gguf_get_n_kv(g);
    if (!r) tap_diag("reading back: %s", ggmlc_last_error());
    gguf_free(r);
    ggml_free(ctx);
    return ok;
}

static void test_own_keys(const char *dir) {
    const char *path = dir_path(dir, "own-key.gguf");
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 16, NULL, false});
    struct gguf_context *g = two_tensor_context(ctx);
    gguf_set_val_u32(g, gguf_get_key(g, gguf_find_key(g, GGUF_KEY_GENERAL_ALIGNMENT)), 64);
    tap_ok(gguf_get_alignment(g) == 64 && gguf_get_tensor_offset(g, 1) == 64 &&
               gguf_get_val_u32(g, gguf_find_key(g, GGUF_KEY_GENERAL_ALIGNMENT)) == 64,
           "gguf_set_val_u32(ctx, gguf_get_key(ctx, i), 64) on general.alignment re-aligns the tensors");
    tap_ok(round_trips(g, path, 64), "and the file it writes reads back");
    gguf_set_val_str(g, gguf_get_key(g, gguf_find_key(g, "general.name")), "own keys");
    gguf_set_val_str(g, "general.name", gguf_get_val_str(g, gguf_find_key(g, "general.name")));
    tap_ok(round_trips(g, path, 64), "a string set through its own key and to its own value stays what it was");
    gguf_set_kv(g, g);
    tap_ok(gguf_get_n_kv(g) == 2 && strcmp(gguf_get_key(g, 0), GGUF_KEY_GENERAL_ALIGNMENT) == 0 && round_trips(g, path, 64),
           "gguf_set_kv(ctx, ctx) changes nothing");
    gguf_remove_key(g, gguf_get_key(g, gguf_find_key(g, GGUF_KEY_GENERAL_ALIGNMENT)));
    tap_ok(gguf_get_alignment(g) == GGUF_DEFAULT_ALIGNMENT && gguf_get_tensor_offset(g, 1) == 32 &&
               round_trips(g, path, GGUF_DEFAULT_ALIGNMENT),
           "gguf_remove_key with the context's own key string restores the default alignment");
    gguf_free(g);
    ggml_free(ctx);
}

/* ----------------------------------------------- huge alignment */

static void put_header(FILE *f, int64_t n_tensors, int64_t n_kv) {
    const uint32_t version = 3;
    fwrite(GGUF_MAGIC, 1, 4, f);
    fwrite(&version, 4, 1, f);
    fwrite(&n_tensors, 8, 1, f);
    fwrite(&n_kv, 8, 1, f);
}

static void put_pair(FILE *f, const char *key, enum gguf_type type, const void *value, size_t size) {
    const uint64_t len = strlen(key);
    const uint32_t type_id = type;
    fwrite(&len, 8, 1, f);
    fwrite(key, 1, len, f);
    fwrite(&type_id, 4, 1, f);
    fwrite(value, 1, size, f);
}

/* The 57-byte file: a header and general.alignment (u32) = value, no tensors. */
static bool write_alignment_file(const char *path, uint32_t value) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    put_header(f, 0, 1);
    put_pair(f, GGUF_KEY_GENERAL_ALIGNMENT, GGUF_TYPE_UINT32, &value, 4);
    return fclose(f) == 0;
}

static void test_alignment_limit(const char *dir) {
    const char *path = dir_path(dir, "align.gguf");
    struct gguf_context *g = write_alignment_file(path, 1u << 31)
                                 ? gguf_init_from_file(path, (struct gguf_init_params){true, NULL})
                                 : NULL;
    struct stat st;
    tap_ok(stat(path, &st) == 0 && st.st_size == 57 && !g && ggmlc_last_status() == GGMLC_ERR_FORMAT &&
               strstr(ggmlc_last_error(), "at most 65536"),
           "a 57-byte file with general.alignment = 2^31 is refused: %s", ggmlc_last_error());
    gguf_free(g);
    g = write_alignment_file(path, 1u << 16) ? gguf_init_from_file(path, (struct gguf_init_params){true, NULL}) : NULL;
    tap_ok(g && gguf_get_alignment(g) == 65536, "general.alignment = 65536 (the maximum) is accepted");
    const char *out = dir_path(dir, "align-out.gguf");
    tap_ok(g && gguf_write_to_file(g, out, false) && stat(out, &st) == 0 && st.st_size == 65536,
           "and rewritten as 65536 bytes: the metadata padded to the alignment");
    gguf_free(g);

    g = gguf_init_empty();
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 1u << 31);
    const enum ggmlc_status huge = ggmlc_last_status();
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 48);
    const enum ggmlc_status odd = ggmlc_last_status();
    tap_ok(huge == GGMLC_ERR_INVALID_ARG && odd == GGMLC_ERR_INVALID_ARG && gguf_get_alignment(g) == 64 &&
               gguf_get_val_u32(g, gguf_find_key(g, GGUF_KEY_GENERAL_ALIGNMENT)) == 64,
           "setting 2^31 or 48 is refused and keeps the alignment set before (64)");
    gguf_free(g);
}

/* ---------------------------------------------- many small keys */

static double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* n pairs of one byte under keys of 12 characters in a scrambled order; with duplicate,
 * the last key repeats the first. */
static bool write_many_keys(const char *path, int n, bool duplicate) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    put_header(f, 0, n);
    char key[32];
    for (int i = 0; i < n; i++) {
        const int64_t k = duplicate && i == n - 1 ? 0 : i;
        snprintf(key, sizeof key, "k.%010lld", (long long)(k * 7919 % n));
        const uint8_t value = (uint8_t)i;
        put_pair(f, key, GGUF_TYPE_UINT8, &value, 1);
    }
    return fclose(f) == 0;
}

/* 100000 small pairs (about 2 MB): checking them for duplicates pair by pair took
 * minutes; sorted, a fraction of a second. */
static void test_many_keys(const char *dir) {
    enum { N_KEYS = 100000 };
    const char *path = dir_path(dir, "many-keys.gguf");
    const bool written = write_many_keys(path, N_KEYS, false);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){true, NULL});
    struct gguf_context *copy = gguf_init_empty();
    if (g) gguf_set_kv(copy, g);
    const double t_read = seconds_since(&t0);
    tap_ok(written && g && gguf_get_n_kv(g) == N_KEYS && gguf_get_n_kv(copy) == N_KEYS && t_read < 5.0,
           "a file of %d small keys reads and copies (gguf_set_kv) in %.2f s (bound: 5 s)", N_KEYS, t_read);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const bool rewritten = gguf_write_to_file(copy, path, false);
    const double t_write = seconds_since(&t0);
    tap_ok(rewritten && t_write < 5.0, "and is written again in %.2f s", t_write);
    gguf_free(copy);
    gguf_free(g);

    g = write_many_keys(path, N_KEYS, true) ? gguf_init_from_file(path, (struct gguf_init_params){true, NULL}) : NULL;
    tap_ok(!g && strstr(ggmlc_last_error(), "duplicate key 'k.0000000000'"),
           "the same file with its last key a repeat of the first is refused: %s", ggmlc_last_error());
    gguf_free(g);
}

void test_hostile_files(const char *dir) {
    test_truncated_while_read(dir);
    test_not_regular_files(dir);
    test_own_keys(dir);
    test_alignment_limit(dir);
    test_many_keys(dir);
}
