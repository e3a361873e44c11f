/* fuzz-common.c - see fuzz-common.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "ggml.h"

int fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    const size_t written = size ? fwrite(data, 1, size, f) : 0;
    return fclose(f) == 0 && written == size ? 0 : -1;
}

static char dir[64];
static char *made[16]; /* the paths handed out, removed at exit */
static int n_made;

static void remove_scratch(void) {
    for (int i = 0; i < n_made; i++) unlink(made[i]), free(made[i]);
    rmdir(dir);
}

const char *fuzz_path(const char *name) {
    static char path[PATH_MAX];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ggmlc-fuzz-XXXXXX");
        if (!mkdtemp(dir)) abort();
        atexit(remove_scratch);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n_made < 16) made[n_made++] = strdup(path);
    return path;
}

static void drop_log(enum ggml_log_level level, const char *text, void *user_data) {}

void fuzz_quiet_log(void) { ggml_log_set(drop_log, NULL); }
