/*
 * test-crash-safe.c - a writer killed (SIGKILL) in the middle of writing a
 * GGUF file or a model file never damages the file it replaces: writes go
 * to a temporary file beside it, are flushed and renamed.
 *
 * A child rewrites the file in a loop with new contents; the parent waits
 * until a temporary file has grown to a given size (the write is under way),
 * kills the child, and checks that the file parses and is entirely one
 * version or the other (the key and every tensor value agree).  The last
 * kill waits for one complete rewrite first, so the new version shows too.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ggmlc-nn.h"
#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

enum { N_VALUES = 1 << 21 }; /* 8 MiB of f32: the write takes long enough to interrupt */

static char dir[256], target[512];

/* Write version v: key "test.version" = v and every value of tensor "data" = v. */
static bool write_version(uint32_t v) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){N_VALUES * sizeof(float) + 4096, NULL, false});
    struct gguf_context *g = gguf_init_empty();
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N_VALUES);
    ggml_set_name(t, "data");
    for (int i = 0; i < N_VALUES; i++) ((float *)t->data)[i] = (float)v;
    gguf_set_val_u32(g, "test.version", v);
    gguf_add_tensor(g, t);
    const bool ok = gguf_write_to_file(g, target, false);
    gguf_free(g);
    ggml_free(ctx);
    return ok;
}

/* The version the file holds, or 0 when it is damaged or mixed. */
static uint32_t read_version(void) {
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(target, (struct gguf_init_params){false, &ctx});
    if (!g) return 0;
    const int64_t key = gguf_find_key(g, "test.version");
    const struct ggml_tensor *t = ggml_get_tensor(ctx, "data");
    uint32_t v = key >= 0 ? gguf_get_val_u32(g, key) : 0;
    for (int i = 0; v && t && i < N_VALUES; i++)
        if (((const float *)t->data)[i] != (float)v) v = 0;
    if (!t || ggml_nelements(t) != N_VALUES) v = 0;
    gguf_free(g);
    ggml_free(ctx);
    return v;
}

/* Size of the largest temporary file beside the target (0: none). */
static off_t temp_size(void) {
    DIR *d = opendir(dir);
    off_t size = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strstr(e->d_name, ".tmp")) continue;
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && st.st_size > size) size = st.st_size;
    }
    if (d) closedir(d);
    return size;
}

static void remove_temps(void) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strstr(e->d_name, ".tmp")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
}

static ino_t inode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Kill a writer once a temporary file reaches kill_at bytes (after it replaced the file at
 * path once, when after_rename); true when that happened mid-write. */
static bool kill_writer_at(pid_t pid, off_t kill_at, const char *path, bool after_rename) {
    const struct timespec pause = {0, 200000};
    const ino_t first = inode_of(path);
    for (int i = 0; after_rename && i < 100000 && inode_of(path) == first; i++) nanosleep(&pause, NULL);
    bool seen = false;
    for (int i = 0; i < 100000 && !seen; i++) {
        seen = temp_size() >= kill_at;
        if (!seen) nanosleep(&pause, NULL);
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    return seen && WIFSIGNALED(status);
}

static void gguf_killed_writer(void) {
    const off_t kill_points[] = {1, 1 << 20, 6 << 20};
    for (size_t k = 0; k < sizeof kill_points / sizeof kill_points[0]; k++) {
        const uint32_t before = read_version();
        fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            for (uint32_t v = before + 1;; v++) write_version(v);
        }
        const bool mid_write = kill_writer_at(pid, kill_points[k], target, k == 2);
        const uint32_t after = read_version();
        tap_ok(mid_write && after >= before && after != 0 && (k < 2 || after > before),
               "GGUF writer killed with %lld bytes in its temporary file: the file is whole (version %u, was %u)",
               (long long)kill_points[k], after, before);
        remove_temps();
    }
}

/* Model files go through the same path: a model killed while saving leaves the old file loadable. */
static void model_killed_writer(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    ggmlc_model *m = ggmlc_sequential((int64_t[]){512}, 1);
    ggmlc_model_add(m, ggmlc_dense(1024, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(4, GGMLC_ACT_NONE));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.backend = "cpu";
    if (ggmlc_model_compile(m, &co) != GGMLC_OK || ggmlc_model_save(m, path, true) != GGMLC_OK) {
        tap_ok(false, "a model to save: %s", ggmlc_last_error());
        ggmlc_model_free(m);
        return;
    }
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        for (;;) ggmlc_model_save(m, path, true);
    }
    const bool mid_write = kill_writer_at(pid, 1 << 20, path, true);
    ggmlc_model *loaded = ggmlc_model_load(path, "cpu");
    tap_ok(mid_write && loaded != NULL, "model writer killed mid-save: the model file still loads%s%s", loaded ? "" : ": ",
           loaded ? "" : ggmlc_last_error());
    ggmlc_model_free(loaded);
    ggmlc_model_free(m);
    remove_temps();
    unlink(path);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ggmlc-crash-XXXXXX");
    if (!mkdtemp(dir)) return tap_skip_all("cannot make a scratch folder");
    snprintf(target, sizeof target, "%s/weights.gguf", dir);
    tap_ok(write_version(1) && read_version() == 1, "the first version is written and reads back");
    gguf_killed_writer();
    model_killed_writer();
    unlink(target);
    rmdir(dir);
    return tap_done();
}
