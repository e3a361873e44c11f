/*
 * fuzz-config.c - libFuzzer target: an arbitrary ini file as the
 * configuration ($GGMLC_CONFIG), read by ggmlc_init, every backend's
 * information listed, then ggmlc_shutdown (the next input starts afresh).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "ggml-backend.h"
#include "ggmlc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *path;
    if (!path) {
        fuzz_quiet_log();
        path = strdup(fuzz_path("ggmlc.ini"));
        setenv("GGMLC_CONFIG", path, 1);
        unsetenv("GGMLC_BACKENDS");
    }
    if (fuzz_write_file(path, data, size) != 0) return 0;
    ggmlc_init();
    struct ggmlc_backend_info info;
    for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) {
        (void)strlen(info.name);
        if (info.reason) (void)strlen(info.reason);
    }
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) (void)ggml_backend_dev_name(ggml_backend_dev_get(i));
    ggmlc_shutdown();
    return 0;
}
