/*
 * decode-graph.h - the per-graph cost of LLM decoding, written against ggml's public API only
 * so that the same source builds on ggmlc (ggmlc-bench decode-graph) and on ggml
 * (bench/decode-graph-main.c).
 */
#ifndef GGMLC_BENCH_DECODE_GRAPH_H
#define GGMLC_BENCH_DECODE_GRAPH_H

/* Run the benchmark with argv[0] = "decode-graph" and the options after it (see
 * decode-graph.c's usage text); prints the per-graph times.  Returns 0 on success,
 * 2 on a usage error, 1 when the backend fails. */
int decode_graph_main(int argc, char **argv);

#endif
