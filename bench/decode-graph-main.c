/* decode-graph-main.c - decode-graph as a program of its own, to build against ggml:
 *   cc -O2 -I GGML/include bench/decode-graph.c bench/decode-graph-main.c \
 *      -L LIBDIR -lggml -lggml-base -lm
 * (docs/tools.md gives the full recipe). */
#include "decode-graph.h"

int main(int argc, char **argv) { return decode_graph_main(argc, argv); }
