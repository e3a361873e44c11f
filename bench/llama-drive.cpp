// llama-drive.cpp - times llama.cpp's prompt processing (pp) and greedy token generation (tg)
// through its public API (llama.h) and prints the greedy token ids, so that one source built
// against llama.cpp on its own ggml and on ggmlc compares the two (bench/device-llama.sh).
// Not part of ggmlc's build; build it beside a llama.cpp build (docs/tools.md):
//   g++ -O2 -std=c++17 bench/llama-drive.cpp -I LLAMA/include -I GGML_INCLUDE -L LIBDIR -lllama
// usage: llama-drive MODEL THREADS [PP=128] [TG=32] [REPS=3] [GPU_LAYERS=0]
// GPU_LAYERS 0 keeps everything on the CPU (no layer, no KV cache, no op offloaded);
// > 0 offloads that many layers (99: all) to the first GPU device the library lists.
// Output: "threads T ngl N pp<P> X tok/s tg<G> Y ms/tok (Z tok/s)" then "tokens ...".
// LLDRIVE_LOGITS=FILE writes the raw float logits (n_vocab each) of the prompt's last position,
// then of the 8-token head and of every generated token (last repetition), for comparing two
// builds' numbers (bench/llama-logits-diff.py).
// LLDRIVE_NODES=FILE writes a line per computed graph node of the generation's decodes (through
// llama.cpp's eval callback): decode number, name, op, type, shape, a 64-bit FNV-1a hash of its
// bytes and its first values; two builds' files compared line by line (bench/llama-nodes-diff.py)
// name the first node whose result differs.  Observing every node splits the graph per node: time
// nothing with it set.
#include "ggml-backend.h"
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now_ms() {
    using clk = std::chrono::steady_clock;
    return std::chrono::duration<double, std::milli>(clk::now().time_since_epoch()).count();
}

static void quiet(enum ggml_log_level, const char *, void *) {}

static FILE *logits_out;   // LLDRIVE_LOGITS, or NULL

// Appends the last position's logits to LLDRIVE_LOGITS's file when it is open and `keep`.
static void dump_logits(llama_context *ctx, int n_vocab, bool keep) {
    if (logits_out && keep) fwrite(llama_get_logits_ith(ctx, -1), sizeof(float), (size_t)n_vocab, logits_out);
}

static FILE *nodes_out;    // LLDRIVE_NODES, or NULL
static int decode_number;  // llama_decode calls so far, for LLDRIVE_NODES's lines

// Writes one LLDRIVE_NODES line for t, just computed.
static void dump_node(const ggml_tensor *t) {
    std::vector<uint8_t> bytes(ggml_nbytes(t));
    ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
    fprintf(nodes_out, "%d %s %s %s %lld,%lld,%lld,%lld %016llx", decode_number, t->name, ggml_op_desc(t),
            ggml_type_name(t->type), (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
            (long long)t->ne[3], (unsigned long long)h);
    if (t->type == GGML_TYPE_F32)
        for (size_t i = 0; i < 3 && 4 * (i + 1) <= bytes.size(); i++) fprintf(nodes_out, " %.9g", ((const float *)bytes.data())[i]);
    fprintf(nodes_out, "\n");
}

// llama.cpp's eval callback: observe every node (ask), then dump it once computed.
static bool observe_node(ggml_tensor *t, bool ask, void *) {
    if (!ask && nodes_out && ggml_nbytes(t) > 0) dump_node(t);
    return true;
}

static int decode(llama_context *ctx, llama_batch batch) {
    decode_number++;
    return llama_decode(ctx, batch);
}

static llama_token argmax_last(llama_context *ctx, int n_vocab) {
    const float *logits = llama_get_logits_ith(ctx, -1);
    return (llama_token)(std::max_element(logits, logits + n_vocab) - logits);
}

// Best of reps (after one warm-up) over the whole prompt, in ms; < 0 when a decode fails.  With
// LLDRIVE_VERBOSE, the mean ms of its parts: llama_decode's call (a backend computing
// asynchronously returns once the graph is submitted) and the wait for the rest (llama_synchronize).
static double time_prompt(llama_context *ctx, std::vector<llama_token> &prompt, int reps, int n_vocab) {
    double best = 1e30, in_decode = 0, in_sync = 0;
    for (int r = 0; r <= reps; r++) {
        llama_memory_clear(llama_get_memory(ctx), true);
        const double t0 = now_ms();
        if (decode(ctx, llama_batch_get_one(prompt.data(), (int32_t)prompt.size()))) return -1;
        const double t1 = now_ms();
        llama_synchronize(ctx); // llama_decode may return before the backend has computed the graph
        const double t2 = now_ms();
        if (r > 0) best = std::min(best, t2 - t0), in_decode += t1 - t0, in_sync += t2 - t1;
        dump_logits(ctx, n_vocab, r == reps);
    }
    if (getenv("LLDRIVE_VERBOSE") && reps > 0)
        printf("prompt: llama_decode %.3f ms, llama_synchronize %.3f ms (means)\n", in_decode / reps, in_sync / reps);
    return best;
}

// An 8-token prompt, then n_tg greedy tokens one decode each; best of reps in ms (< 0: failed).
static double time_generation(llama_context *ctx, const std::vector<llama_token> &prompt, int n_tg, int reps,
                              int n_vocab, std::vector<llama_token> &out) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        llama_memory_clear(llama_get_memory(ctx), true);
        std::vector<llama_token> head(prompt.begin(), prompt.begin() + 8);
        if (decode(ctx, llama_batch_get_one(head.data(), 8))) return -1;
        const bool last = r == reps - 1;
        dump_logits(ctx, n_vocab, last);
        llama_token tok = argmax_last(ctx, n_vocab);
        out.assign(1, tok);
        const double t0 = now_ms();
        for (int i = 0; i < n_tg; i++) {
            if (decode(ctx, llama_batch_get_one(&tok, 1))) return -1;
            dump_logits(ctx, n_vocab, last);
            tok = argmax_last(ctx, n_vocab);
            out.push_back(tok);
        }
        best = std::min(best, now_ms() - t0);
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: llama-drive MODEL THREADS [PP] [TG] [REPS] [GPU_LAYERS]\n");
        return 2;
    }
    const int nth = atoi(argv[2]);
    const int n_pp = argc > 3 ? atoi(argv[3]) : 128, n_tg = argc > 4 ? atoi(argv[4]) : 32;
    const int reps = argc > 5 ? atoi(argv[5]) : 3, ngl = argc > 6 ? atoi(argv[6]) : 0;
    if (nth < 1 || n_pp < 8 || n_tg < 1 || reps < 1 || ngl < 0) {
        fprintf(stderr, "llama-drive: THREADS, REPS >= 1, PP >= 8, TG >= 1, GPU_LAYERS >= 0\n");
        return 2;
    }
    if (!getenv("LLDRIVE_VERBOSE")) llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "llama-drive: cannot load %s\n", argv[1]); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    const int need = std::max(n_pp, 8 + n_tg);
    cp.n_ctx = (uint32_t)((need + 255) / 256 * 256);
    cp.n_batch = cp.n_ubatch = (uint32_t)n_pp;
    cp.n_threads = cp.n_threads_batch = nth;
    cp.offload_kqv = ngl > 0;   // with no layer offloaded the KV cache and the
    cp.op_offload = ngl > 0;    // big-batch products stay on the CPU as well
    if (const char *path = getenv("LLDRIVE_NODES")) {
        nodes_out = fopen(path, "w");
        if (!nodes_out) { fprintf(stderr, "llama-drive: cannot write %s\n", path); return 1; }
        cp.cb_eval = observe_node;
    }
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "llama-drive: cannot make a context\n"); return 1; }
    std::vector<llama_token> prompt(n_pp);
    for (int i = 0; i < n_pp; i++) prompt[i] = i == 0 ? 1 : 3 + (i * 37) % (n_vocab - 3);

    std::vector<llama_token> out;
    if (const char *path = getenv("LLDRIVE_LOGITS")) {
        logits_out = fopen(path, "wb");
        if (!logits_out) { fprintf(stderr, "llama-drive: cannot write %s\n", path); return 1; }
    }
    const double pp_ms = time_prompt(ctx, prompt, reps, n_vocab);
    const double tg_ms = pp_ms < 0 ? -1 : time_generation(ctx, prompt, n_tg, reps, n_vocab, out);
    if (pp_ms < 0 || tg_ms < 0) { fprintf(stderr, "llama-drive: llama_decode failed\n"); return 1; }
    printf("threads %d ngl %d pp%d %.1f tok/s tg%d %.2f ms/tok (%.1f tok/s)\ntokens", nth, ngl, n_pp,
           n_pp * 1000.0 / pp_ms, n_tg, tg_ms / n_tg, n_tg * 1000.0 / tg_ms);
    for (llama_token t : out) printf(" %d", t);
    printf("\n");
    if (getenv("LLDRIVE_VERBOSE")) {
        const llama_perf_context_data perf = llama_perf_context(ctx);
        printf("decodes %d, graphs reused %d\n", perf.n_eval + perf.n_p_eval, perf.n_reused);
    }
    if (logits_out) fclose(logits_out);
    if (nodes_out) fclose(nodes_out);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
