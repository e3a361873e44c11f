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
 *
 * Then what is replaced and how: device nodes (/dev/null as root) and FIFOs
 * are refused and stay what they were, a symbolic link keeps pointing at the
 * file that gets the new contents, the old mode (0600) and owner are kept,
 * a 255-byte file name works, and ggmlc_check_writable reports a path that
 * cannot be written before any work.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* --------------------------------------------------- what is replaced */

/* A small GGUF file holding only key "test.version" = v. */
static bool write_small(const char *path, uint32_t v) {
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_u32(g, "test.version", v);
    const bool ok = gguf_write_to_file(g, path, false);
    gguf_free(g);
    return ok;
}

static uint32_t read_small(const char *path) {
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){true, NULL});
    const int64_t key = g ? gguf_find_key(g, "test.version") : -1;
    const uint32_t v = key >= 0 ? gguf_get_val_u32(g, key) : 0;
    gguf_free(g);
    return v;
}

static mode_t lmode(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode : 0;
}

/* Writing over a node that is not a regular file fails with a message naming its kind and
 * leaves the node as it was; ggmlc_check_writable refuses it the same way. */
static void refused_node(const char *path, const char *kind) {
    const mode_t before = lmode(path);
    const bool written = write_small(path, 7);
    const bool named = strstr(ggmlc_last_error(), kind) != NULL;
    tap_ok(!written && named && lmode(path) == before, "writing over %s fails (%s) and leaves it as it was",
           kind, ggmlc_last_error());
    tap_ok(ggmlc_check_writable(path) != GGMLC_OK && strstr(ggmlc_last_error(), kind),
           "ggmlc_check_writable refuses %s", kind);
}

static void device_targets(void) {
    if (geteuid() != 0) {
        tap_skip("not root", "as root, a device node is not replaced");
        return;
    }
    char node[600];
    snprintf(node, sizeof node, "%s/null", dir);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        tap_skip(strerror(errno), "as root, a device node is not replaced");
        return;
    }
    refused_node(node, "character device");
    const bool safe = S_ISCHR(lmode(node));
    unlink(node);
    /* Only once a private device node survived: a regression must not replace the real one. */
    if (!safe) {
        tap_skip("a device node was replaced", "as root, /dev/null is not replaced");
        return;
    }
    refused_node("/dev/null", "character device");
    struct ggmlc_epoch_logs logs = {.loss = 1};
    tap_ok(ggmlc_plot_epochs(&logs, 1, "t", "/dev/null") != GGMLC_OK && S_ISCHR(lmode("/dev/null")),
           "a plot to /dev/null is refused too: %s", ggmlc_last_error());
}

static void fifo_target(void) {
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    if (mkfifo(fifo, 0600) == 0) refused_node(fifo, "FIFO");
    else tap_skip(strerror(errno), "a FIFO is not replaced");
    unlink(fifo);
}

/* A link to the file (relative, in a chain, or dangling) keeps linking to it; the file gets
 * the new contents. */
static void symlink_targets(void) {
    char real[600], link1[600], link2[600];
    snprintf(real, sizeof real, "%s/real.gguf", dir);
    snprintf(link1, sizeof link1, "%s/link1.gguf", dir);
    snprintf(link2, sizeof link2, "%s/link2.gguf", dir);
    const bool made = write_small(real, 1) && symlink("real.gguf", link1) == 0 && symlink(link1, link2) == 0;
    tap_ok(made && write_small(link2, 2) && S_ISLNK(lmode(link1)) && S_ISLNK(lmode(link2)) && read_small(real) == 2,
           "writing through two symbolic links replaces the file they point to and keeps the links");
    unlink(real);
    tap_ok(write_small(link2, 3) && S_ISLNK(lmode(link1)) && S_ISREG(lmode(real)) && read_small(real) == 3,
           "a dangling link: the file it names is created, the link stays");
    unlink(link2), unlink(link1), unlink(real);
    snprintf(link1, sizeof link1, "%s/loop", dir);
    tap_ok(symlink("loop", link1) == 0 && !write_small(link1, 4) && S_ISLNK(lmode(link1)),
           "a link to itself fails: %s", ggmlc_last_error());
    unlink(link1);
}

static void mode_and_owner_kept(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/private.gguf", dir);
    const mode_t old_mask = umask(022);
    struct stat st = {0};
    bool ok = write_small(path, 1) && stat(path, &st) == 0;
    tap_ok(ok && (st.st_mode & 07777) == 0644, "a new file gets 0666 less the umask (0%o)", st.st_mode & 07777);
    chmod(path, 0600);
    ok = write_small(path, 2) && stat(path, &st) == 0 && read_small(path) == 2;
    tap_ok(ok && (st.st_mode & 07777) == 0600, "a 0600 file stays 0600 when replaced (0%o)", st.st_mode & 07777);
    umask(old_mask);
    if (geteuid() != 0 || chown(path, 1, 1) != 0) {
        tap_skip("not root", "the owner and group of a replaced file are kept");
    } else {
        ok = write_small(path, 3) && stat(path, &st) == 0;
        tap_ok(ok && st.st_uid == 1 && st.st_gid == 1, "the owner and group of a replaced file are kept (%d:%d)",
               (int)st.st_uid, (int)st.st_gid);
    }
    unlink(path);
}

static int count_temps(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp") != NULL;
    if (d) closedir(d);
    return n;
}

static void long_names(void) {
    char name[300], path[900];
    memset(name, 'n', 255);
    memcpy(name + 250, ".gguf", 6);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tap_ok(write_small(path, 1) && write_small(path, 2) && read_small(path) == 2 && count_temps() == 0,
           "a 255-byte file name is written and replaced");
    unlink(path);
    memset(name, 'n', 256);
    memcpy(name + 251, ".gguf", 6);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tap_ok(!write_small(path, 1) && strstr(ggmlc_last_error(), "256 bytes"), "a 256-byte name is refused: %s",
           ggmlc_last_error());
    tap_ok(ggmlc_check_writable(path) != GGMLC_OK, "ggmlc_check_writable refuses the 256-byte name too");
}

/* ggmlc_check_writable: what a caller runs before a long training run. */
static void writable_checks(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/absent/model.gguf", dir);
    tap_ok(ggmlc_check_writable(path) == GGMLC_ERR_IO && strstr(ggmlc_last_error(), "absent"),
           "a missing folder is reported: %s", ggmlc_last_error());
    tap_ok(ggmlc_check_writable("/proc/ggmlc-test.gguf") == GGMLC_ERR_IO, "a folder nobody may write (/proc) is reported: %s",
           ggmlc_last_error());
    snprintf(path, sizeof path, "%s/", dir);
    tap_ok(ggmlc_check_writable(path) == GGMLC_ERR_IO && ggmlc_check_writable(NULL) == GGMLC_ERR_INVALID_ARG,
           "a folder or no name is refused");
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    tap_ok(ggmlc_check_writable(path) == GGMLC_OK && lmode(path) == 0 && count_temps() == 0,
           "a writable path passes and nothing is left behind");
    struct ggmlc_callback cb = ggmlc_model_checkpoint("/proc/ggmlc-test.gguf", "loss", false);
    tap_ok(!cb.on_epoch_end && !cb.user, "a checkpoint callback to an unwritable path fails when it is made");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ggmlc-crash-XXXXXX");
    if (!mkdtemp(dir)) return tap_skip_all("cannot make a scratch folder");
    snprintf(target, sizeof target, "%s/weights.gguf", dir);
    tap_ok(write_version(1) && read_version() == 1, "the first version is written and reads back");
    gguf_killed_writer();
    model_killed_writer();
    device_targets();
    fifo_target();
    symlink_targets();
    mode_and_owner_kept();
    long_names();
    writable_checks();
    unlink(target);
    rmdir(dir);
    return tap_done();
}
