/*
 * fuzz-common.h - helpers shared by the libFuzzer targets: the input as a
 * file (the readers take paths), and a silent log.
 */
#ifndef GGMLC_FUZZ_COMMON_H
#define GGMLC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Write data to path (truncating it); 0 on success. */
int fuzz_write_file(const char *path, const uint8_t *data, size_t size);
/* A private scratch folder for this process (made once), and a path in it. */
const char *fuzz_path(const char *name);
/* Silence ggml's log (the readers report every damaged file). */
void fuzz_quiet_log(void);

#endif
