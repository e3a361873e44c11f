#!/usr/bin/env python3
# make-llama-model.py - a llama-layout GGUF model with random weights and a small SPM
# vocabulary (279 tokens: 3 specials, 256 bytes, 20 words), for timing llama.cpp on ggmlc
# against llama.cpp on ggml (bench/device-llama.sh).  Needs numpy and llama.cpp's gguf-py
# (PYTHONPATH=LLAMA_CPP/gguf-py).  The weights are F32 (norms, always F32) or F16 (--f16);
# quantize with `ggmlc-gguf quantize OUT.gguf Q.gguf q8_0`.
#
#   make-llama-model.py OUT.gguf [--dims EMBD,FF,LAYERS,HEADS,KV_HEADS,CTX] [--f16] [--seed S]
#
# --dims tiny  = 128,352,2,4,2,256       (0.5 M parameters)
# --dims 100m  = 768,2048,16,12,4,512    (100.7 M parameters, 403 MB in F32)
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("make-llama-model.py: no module gguf: set PYTHONPATH to llama.cpp's gguf-py folder")

NAMED_DIMS = {"tiny": "128,352,2,4,2,256", "100m": "768,2048,16,12,4,512"}
WORDS = ["\u2581the", "\u2581a", "\u2581of", "\u2581and", "\u2581to", "\u2581in", "\u2581is", "\u2581it",
         "\u2581that", "\u2581was", "e", "t", "a", "o", "i", "n", "s", "h", "r", "\u2581"]


def vocabulary():
    """Token strings, scores and SPM token types (2 unknown, 3 control, 6 byte, 1 normal)."""
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0] * 3, [2, 3, 3]
    for b in range(256):
        tokens.append("<0x%02X>" % b); scores.append(0.0); types.append(6)
    for i, w in enumerate(WORDS):
        tokens.append(w); scores.append(-float(i)); types.append(1)
    return tokens, scores, types


def write_header(w, dims, tokens, scores, types):
    n_embd, n_ff, n_layer, n_head, n_head_kv, n_ctx = dims
    w.add_block_count(n_layer); w.add_context_length(n_ctx); w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff); w.add_head_count(n_head); w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(n_embd // n_head); w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0); w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("llama"); w.add_token_list(tokens); w.add_token_scores(scores)
    w.add_token_types(types); w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_unk_token_id(0)
    w.add_add_bos_token(True)


def main():
    ap = argparse.ArgumentParser(description="random llama-layout GGUF model")
    ap.add_argument("out")
    ap.add_argument("--dims", default="tiny", help="EMBD,FF,LAYERS,HEADS,KV_HEADS,CTX or tiny/100m")
    ap.add_argument("--f16", action="store_true", help="matrices in F16 (norms stay F32)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--scale", type=float, default=0.08, help="std of the layer weights")
    a = ap.parse_args()
    try:
        dims = [int(v) for v in NAMED_DIMS.get(a.dims, a.dims).split(",")]
        assert len(dims) == 6 and min(dims) > 0 and dims[0] % dims[3] == 0 and dims[3] % dims[4] == 0
    except (ValueError, AssertionError):
        sys.exit("make-llama-model.py: --dims wants 6 positive integers, EMBD a multiple of HEADS, "
                 "HEADS of KV_HEADS")
    n_embd, n_ff, n_layer, n_head, n_head_kv, _ = dims
    rng = np.random.default_rng(a.seed)
    tokens, scores, types = vocabulary()
    w = gguf.GGUFWriter(a.out, "llama")
    write_header(w, dims, tokens, scores, types)

    def matrix(name, rows, cols, scale=a.scale):
        m = (rng.standard_normal((rows, cols), dtype=np.float32) * scale)
        w.add_tensor(name, m.astype(np.float16) if a.f16 else m)

    def norm(name):
        w.add_tensor(name, np.ones(n_embd, np.float32))

    kv = n_head_kv * (n_embd // n_head)
    matrix("token_embd.weight", len(tokens), n_embd, scale=0.5)
    for layer in range(n_layer):
        p = "blk.%d." % layer
        norm(p + "attn_norm.weight")
        matrix(p + "attn_q.weight", n_embd, n_embd); matrix(p + "attn_k.weight", kv, n_embd)
        matrix(p + "attn_v.weight", kv, n_embd); matrix(p + "attn_output.weight", n_embd, n_embd)
        norm(p + "ffn_norm.weight")
        matrix(p + "ffn_gate.weight", n_ff, n_embd); matrix(p + "ffn_up.weight", n_ff, n_embd)
        matrix(p + "ffn_down.weight", n_embd, n_ff)
    norm("output_norm.weight")
    matrix("output.weight", len(tokens), n_embd, scale=0.5)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    print("wrote %s: dims %s, vocabulary %d, %s" % (a.out, ",".join(map(str, dims)), len(tokens),
                                                     "f16" if a.f16 else "f32"))


if __name__ == "__main__":
    main()
