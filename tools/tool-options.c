/*
 * tool-options.c - --help and --version, answered alike by every tool (tool-options.h).
 */
#include <string.h>

#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "tool-options.h"

void tool_print_version(const char *tool) {
    printf("%s (ggmlc) %s, plugin ABI %d.%d\n", tool, ggmlc_version(), GGMLC_PLUGIN_ABI_MAJOR,
           GGMLC_PLUGIN_ABI_MINOR);
}

bool tool_answer_standard_option(int argc, char **argv, const char *tool, void (*help)(FILE *out)) {
    if (argc < 2) return false;
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(stdout);
        return true;
    }
    if (strcmp(argv[1], "--version") == 0) {
        tool_print_version(tool);
        return true;
    }
    return false;
}
