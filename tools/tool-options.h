/*
 * tool-options.h - the options every ggmlc tool answers the same way: --help and --version,
 * both printed on stdout with exit status 0.
 */
#ifndef GGMLC_TOOL_OPTIONS_H
#define GGMLC_TOOL_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

/* Prints "TOOL (ggmlc) VERSION" and the plugin ABI on stdout. */
void tool_print_version(const char *tool);

/* When argv[1] is --help (or -h) or --version: prints the help (help(stdout)) or the version
 * and returns true, and the caller exits 0; otherwise returns false. */
bool tool_answer_standard_option(int argc, char **argv, const char *tool, void (*help)(FILE *out));

/*
 * Errors once.  The library logs each error as it records it (ggmlc_set_error), and a tool
 * prints the status's message when a call fails, which carries the same text (often wrapped in
 * the caller's context).  So a tool holds the library's error lines back: tool_fail discards
 * them and prints its message alone; tool_flush_errors prints those no failure reported (a
 * plugin that did not load while the CPU did), as does the exit.  Warnings pass at once.
 */
void tool_hold_error_logs(void);
void tool_flush_errors(void);
/* Drop the held error lines: the tool is about to print the failure they describe. */
void tool_discard_errors(void);
/* "TOOL: message\n" on stderr, after discarding the held error lines. */
void tool_fail(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


/* Option values: a whole decimal integer in [lo, hi], or a number in [lo, hi] (strtod's forms);
 * false, *out untouched, for anything else (trailing characters, overflow, NaN). */
bool tool_parse_int(const char *s, long long lo, long long hi, long long *out);
bool tool_parse_double(const char *s, double lo, double hi, double *out);

/* Tiny gradients and Adam moments of rarely active weights sink into the subnormal range, where
 * Intel cores take a slow path on every operation; training loses nothing by flushing them to
 * zero (as TensorFlow does).  Call before ggmlc_init, so the CPU backend's worker threads,
 * which inherit the floating-point environment, flush too.  No-op without SSE2. */
void tool_flush_subnormals(void);

#endif
