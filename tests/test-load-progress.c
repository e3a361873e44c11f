/*
 * test-load-progress.c - ggmlc_model_load of a large file (tensor data of 16 MiB or more) draws
 * a progress bar when stderr is a terminal (a pseudo-terminal here) and writes nothing to a
 * stderr that is not one; a small file never shows it.
 */
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc-nn.h"
#include "ggmlc.h"
#include "testutil.h"

/* A model of 64 -> units -> 10 dense layers saved at path. */
static bool save_model(const char *path, int64_t units) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){64}, 1);
    ggmlc_model_add(m, ggmlc_dense(units, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(units, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(10, GGMLC_ACT_NONE));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.backend = "cpu";
    const bool ok =
        ggmlc_model_compile(m, &co) == GGMLC_OK && ggmlc_model_save(m, path, false) == GGMLC_OK;
    ggmlc_model_free(m);
    return ok;
}

/* Loads path with stderr on fd; returns what was written to stderr read back from read_fd. */
static bool load_with_stderr(const char *path, int fd, int read_fd, char *out, size_t size) {
    fflush(stderr);
    const int saved = dup(2);
    dup2(fd, 2);
    ggmlc_model *m = ggmlc_model_load(path, "cpu");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ggmlc_model_free(m);
    size_t len = 0;
    ssize_t got;
    fcntl(read_fd, F_SETFL, fcntl(read_fd, F_GETFL) | O_NONBLOCK);
    while (len + 1 < size && (got = read(read_fd, out + len, size - 1 - len)) > 0)
        len += (size_t)got;
    out[len] = '\0';
    return m != NULL;
}

int main(void) {
    char dir[] = "/tmp/ggmlc-load-progress.XXXXXX", big[128], small[128];
    if (!mkdtemp(dir)) return tap_skip_all("no temporary folder");
    snprintf(big, sizeof big, "%s/big.gguf", dir);
    snprintf(small, sizeof small, "%s/small.gguf", dir);
    /* 64*2048 + 2048*2048 + 2048*10 weights: 17 MiB of f32 */
    if (!tap_ok(save_model(big, 2048) && save_model(small, 32),
                "a large and a small model are saved"))
        return tap_done();
    int master, slave;
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
        tap_skip("no pseudo-terminal", "the bar on a terminal");
    } else {
        static char out[1 << 16];
        bool loaded = load_with_stderr(big, slave, master, out, sizeof out);
        tap_ok(loaded && strstr(out, "loading the model") && strstr(out, "MiB [") &&
                   strstr(out, "\033[K"),
               "a large model on a terminal: a progress bar (%zu bytes)", strlen(out));
        loaded = load_with_stderr(small, slave, master, out, sizeof out);
        tap_ok(loaded && out[0] == '\0', "a small model on a terminal: no bar (%zu bytes)",
               strlen(out));
        close(slave);
        close(master);
    }
    int p[2];
    if (pipe(p) == 0) {
        static char out[1 << 16];
        const bool loaded = load_with_stderr(big, p[1], p[0], out, sizeof out);
        tap_ok(loaded && out[0] == '\0', "a large model on a pipe: nothing on stderr (%zu bytes)",
               strlen(out));
        close(p[0]);
        close(p[1]);
    }
    unlink(big);
    unlink(small);
    rmdir(dir);
    return tap_done();
}
