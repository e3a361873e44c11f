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

#endif
