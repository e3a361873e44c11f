#!/usr/bin/env python3
# make-sd-model.py - a Stable Diffusion 1.x checkpoint in the original (LDM) tensor layout with
# random weights, as one safetensors file that stable-diffusion.cpp loads for txt2img: the CLIP
# ViT-L/14 text encoder (full size: sd.cpp fixes its shape), the UNet (SD1.x structure: 4 levels,
# 2 res blocks each, cross-attention transformers at the first three levels and in the middle,
# 8 heads, GEGLU feed-forward; its width is --channels, 320 in SD1.5) and the KL VAE (full size).
# For comparing stable-diffusion.cpp on ggmlc with it on ggml (docs/compatibility.md).  numpy only.
#
#   make-sd-model.py OUT.safetensors [--channels C] [--f32] [--seed S]
#
# --channels 160 (default): 0.47 G parameters, 0.9 GB in F16; head sizes 20, 40 and 80.
# --channels 320: the size of SD1.5 (1.07 G parameters, 2.1 GB in F16); head sizes 40, 80, 160.
#
# Weights are drawn N(0, gain^2 / fan_in) so activations stay of order one through the
# residual stacks; norms are 1 and biases 0, except small biases on the VAE's last layer so that
# the image is not flat grey.  The embeddings are N(0, 0.02^2) as in the released CLIP.
import argparse
import json
import struct

import numpy as np

CLIP_VOCAB, CLIP_POSITIONS, CLIP_DIM, CLIP_FF, CLIP_LAYERS = 49408, 77, 768, 3072, 12
UNET_MULT, UNET_HEADS, UNET_ATTN_LEVELS, UNET_RES_BLOCKS = (1, 2, 4, 4), 8, 3, 2
VAE_CH, VAE_MULT, VAE_Z = 128, (1, 2, 4, 4), 4


class Checkpoint:
    """Collects named tensors (PyTorch shapes) and writes them as safetensors."""

    def __init__(self, rng, dtype):
        self.rng, self.dtype, self.tensors = rng, dtype, {}

    def add(self, name, array):
        assert name not in self.tensors, name
        self.tensors[name] = array.astype(self.dtype)

    def random(self, name, shape, std):
        self.add(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    def linear(self, name, n_out, n_in, bias=True, gain=1.0):
        self.random(name + ".weight", (n_out, n_in), gain / np.sqrt(n_in))
        if bias:
            self.add(name + ".bias", np.zeros(n_out, np.float32))

    def conv(self, name, n_out, n_in, k, gain=1.0, bias=None):
        self.random(name + ".weight", (n_out, n_in, k, k), gain / np.sqrt(n_in * k * k))
        self.add(name + ".bias", np.zeros(n_out, np.float32) if bias is None else bias)

    def norm(self, name, n):
        self.add(name + ".weight", np.ones(n, np.float32))
        self.add(name + ".bias", np.zeros(n, np.float32))

    def write(self, path):
        header, offset = {}, 0
        for name, t in self.tensors.items():
            header[name] = {"dtype": "F16" if t.dtype == np.float16 else "F32",
                            "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
            offset += t.nbytes
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for t in self.tensors.values():
                f.write(np.ascontiguousarray(t).tobytes())
        return sum(t.size for t in self.tensors.values())


def add_clip(ck):
    p = "cond_stage_model.transformer.text_model."
    ck.random(p + "embeddings.token_embedding.weight", (CLIP_VOCAB, CLIP_DIM), 0.02)
    ck.random(p + "embeddings.position_embedding.weight", (CLIP_POSITIONS, CLIP_DIM), 0.01)
    for i in range(CLIP_LAYERS):
        layer = p + "encoder.layers.%d." % i
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            ck.linear(layer + "self_attn." + proj, CLIP_DIM, CLIP_DIM)
        ck.norm(layer + "layer_norm1", CLIP_DIM)
        ck.norm(layer + "layer_norm2", CLIP_DIM)
        ck.linear(layer + "mlp.fc1", CLIP_FF, CLIP_DIM)
        ck.linear(layer + "mlp.fc2", CLIP_DIM, CLIP_FF)
    ck.norm(p + "final_layer_norm", CLIP_DIM)


def add_unet_resblock(ck, name, n_in, n_out, n_emb):
    ck.norm(name + ".in_layers.0", n_in)
    ck.conv(name + ".in_layers.2", n_out, n_in, 3)
    ck.linear(name + ".emb_layers.1", n_out, n_emb)
    ck.norm(name + ".out_layers.0", n_out)
    ck.conv(name + ".out_layers.3", n_out, n_out, 3)
    if n_in != n_out:
        ck.conv(name + ".skip_connection", n_out, n_in, 1)


def add_unet_transformer(ck, name, ch):
    """SD1.x SpatialTransformer: 1x1-conv projections, one block, GEGLU feed-forward."""
    ck.norm(name + ".norm", ch)
    ck.conv(name + ".proj_in", ch, ch, 1)
    block = name + ".transformer_blocks.0."
    for attn, kv_dim in (("attn1", ch), ("attn2", CLIP_DIM)):
        ck.linear(block + attn + ".to_q", ch, ch, bias=False)
        ck.linear(block + attn + ".to_k", ch, kv_dim, bias=False)
        ck.linear(block + attn + ".to_v", ch, kv_dim, bias=False)
        ck.linear(block + attn + ".to_out.0", ch, ch)
    ck.linear(block + "ff.net.0.proj", 8 * ch, ch)
    ck.linear(block + "ff.net.2", ch, 4 * ch)
    for i in (1, 2, 3):
        ck.norm(block + "norm%d" % i, ch)
    ck.conv(name + ".proj_out", ch, ch, 1)


def add_unet(ck, c):
    p, emb = "model.diffusion_model.", 4 * c
    ck.linear(p + "time_embed.0", emb, c)
    ck.linear(p + "time_embed.2", emb, emb)
    ck.conv(p + "input_blocks.0.0", c, 4, 3)
    skip_channels, ch, block = [c], c, 0
    for level, mult in enumerate(UNET_MULT):
        for _ in range(UNET_RES_BLOCKS):
            block += 1
            add_unet_resblock(ck, p + "input_blocks.%d.0" % block, ch, mult * c, emb)
            ch = mult * c
            if level < UNET_ATTN_LEVELS:
                add_unet_transformer(ck, p + "input_blocks.%d.1" % block, ch)
            skip_channels.append(ch)
        if level != len(UNET_MULT) - 1:
            block += 1
            ck.conv(p + "input_blocks.%d.0.op" % block, ch, ch, 3)
            skip_channels.append(ch)
    add_unet_resblock(ck, p + "middle_block.0", ch, ch, emb)
    add_unet_transformer(ck, p + "middle_block.1", ch)
    add_unet_resblock(ck, p + "middle_block.2", ch, ch, emb)
    block = 0
    for level in reversed(range(len(UNET_MULT))):
        for j in range(UNET_RES_BLOCKS + 1):
            name = p + "output_blocks.%d." % block
            add_unet_resblock(ck, name + "0", ch + skip_channels.pop(), UNET_MULT[level] * c, emb)
            ch, sub = UNET_MULT[level] * c, 1
            if level < UNET_ATTN_LEVELS:
                add_unet_transformer(ck, name + "1", ch)
                sub = 2
            if level > 0 and j == UNET_RES_BLOCKS:
                ck.conv(name + "%d.conv" % sub, ch, ch, 3)
            block += 1
    ck.norm(p + "out.0", c)
    ck.conv(p + "out.2", 4, c, 3, gain=0.5)


def add_vae_resblock(ck, name, n_in, n_out):
    ck.norm(name + ".norm1", n_in)
    ck.conv(name + ".conv1", n_out, n_in, 3)
    ck.norm(name + ".norm2", n_out)
    ck.conv(name + ".conv2", n_out, n_out, 3)
    if n_in != n_out:
        ck.conv(name + ".nin_shortcut", n_out, n_in, 1)


def add_vae_middle(ck, name, ch):
    add_vae_resblock(ck, name + ".block_1", ch, ch)
    ck.norm(name + ".attn_1.norm", ch)
    for proj in ("q", "k", "v", "proj_out"):
        ck.conv(name + ".attn_1." + proj, ch, ch, 1)
    add_vae_resblock(ck, name + ".block_2", ch, ch)


def add_vae(ck):
    p, top = "first_stage_model.", VAE_CH * VAE_MULT[-1]
    ck.conv(p + "encoder.conv_in", VAE_CH, 3, 3)
    ch = VAE_CH
    for level, mult in enumerate(VAE_MULT):
        for j in range(2):
            add_vae_resblock(ck, p + "encoder.down.%d.block.%d" % (level, j), ch, VAE_CH * mult)
            ch = VAE_CH * mult
        if level != len(VAE_MULT) - 1:
            ck.conv(p + "encoder.down.%d.downsample.conv" % level, ch, ch, 3)
    add_vae_middle(ck, p + "encoder.mid", top)
    ck.norm(p + "encoder.norm_out", top)
    ck.conv(p + "encoder.conv_out", 2 * VAE_Z, top, 3)
    ck.conv(p + "quant_conv", 2 * VAE_Z, 2 * VAE_Z, 1)
    ck.conv(p + "post_quant_conv", VAE_Z, VAE_Z, 1)
    ck.conv(p + "decoder.conv_in", top, VAE_Z, 3)
    add_vae_middle(ck, p + "decoder.mid", top)
    ch = top
    for level in reversed(range(len(VAE_MULT))):
        for j in range(3):
            add_vae_resblock(ck, p + "decoder.up.%d.block.%d" % (level, j), ch, VAE_CH * VAE_MULT[level])
            ch = VAE_CH * VAE_MULT[level]
        if level != 0:
            ck.conv(p + "decoder.up.%d.upsample.conv" % level, ch, ch, 3)
    ck.norm(p + "decoder.norm_out", VAE_CH)
    ck.conv(p + "decoder.conv_out", 3, VAE_CH, 3, gain=0.3,
            bias=np.array([0.2, -0.1, 0.05], np.float32))


def main():
    ap = argparse.ArgumentParser(description="random-weight SD1.x checkpoint for stable-diffusion.cpp")
    ap.add_argument("out")
    ap.add_argument("--channels", type=int, default=160, help="UNet width (SD1.5: 320); a multiple of 32")
    ap.add_argument("--f32", action="store_true", help="F32 tensors (default F16)")
    ap.add_argument("--seed", type=int, default=20)
    args = ap.parse_args()
    if args.channels <= 0 or args.channels % 32:
        ap.error("--channels must be a positive multiple of 32 (GroupNorm's 32 groups)")
    ck = Checkpoint(np.random.default_rng(args.seed), np.float32 if args.f32 else np.float16)
    add_clip(ck)
    add_unet(ck, args.channels)
    add_vae(ck)
    n = ck.write(args.out)
    print("%s: %d tensors, %.3f G parameters" % (args.out, len(ck.tensors), n / 1e9))


if __name__ == "__main__":
    main()
