/*
 * fuzz-replay.c - runs one libFuzzer target (linked in, FUZZ_TARGET names
 * it) on every file of its seed corpus (fuzz/corpus/<target>/) and of the
 * inputs that once found a bug (fuzz/regressions/<target>/): one TAP test
 * point per file.  A crash or, under the sanitizer build, a sanitizer
 * report fails the program; so `make check` replays every past finding.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (size_t got;; n += got) {
        if (n == cap) {
            unsigned char *grown = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!grown) break;
            buf = grown;
        }
        if ((got = fread(buf + n, 1, cap - n, f)) == 0) break;
    }
    fclose(f);
    *size = n;
    return buf;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void replay_folder(const char *root, const char *kind) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fuzz/%s/%s", root, kind, FUZZ_TARGET);
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t size = 0;
        unsigned char *data = read_all(path, &size);
        if (data) LLVMFuzzerTestOneInput(data, size);
        tap_ok(data != NULL, "%s: %s/%s replayed", FUZZ_TARGET, kind, names[i]);
        free(data);
        free(names[i]);
    }
}

int main(void) {
    const char *tests = getenv("GGMLC_TEST_DATA"); /* the source tree's tests/ */
    if (!tests) return tap_skip_all("GGMLC_TEST_DATA is not set (run through make check)");
    char root[1024];
    snprintf(root, sizeof root, "%s/..", tests);
    replay_folder(root, "corpus");
    replay_folder(root, "regressions");
    return tap_done();
}
