// The elements of flash attention's K and V, read as f32: KV_AT(array, first word of the row, i).
// K and V share a type: f32, f16, bf16 (K_TYPE), or q8_0 / q4_0 blocks (KV_QTYPE 8 / 2, K_TYPE 2
// for their 16-bit words) dequantized as they are read.  Needs types.glsl.
#define KV_HALF(arr, w) unpackHalf2x16(uint(arr[w])).x
#define KV_BYTE(arr, w, b) ((uint(arr[(w) + ((b) >> 1)]) >> (8u * ((b) & 1u))) & 0xffu)
#if KV_QTYPE == 8
#define KV_BLOCK(r, i) ((r) + ((i) >> 5) * 17u)
#define KV_AT(arr, r, i) (KV_HALF(arr, KV_BLOCK(r, i)) * float(int(KV_BYTE(arr, KV_BLOCK(r, i) + 1u, (i) & 31u) << 24) >> 24))
#elif KV_QTYPE == 2
#define KV_BLOCK(r, i) ((r) + ((i) >> 5) * 9u)
#define KV_AT(arr, r, i) \
    (KV_HALF(arr, KV_BLOCK(r, i)) * (float((KV_BYTE(arr, KV_BLOCK(r, i) + 1u, (i) & 15u) >> (((i) & 16u) >> 2)) & 15u) - 8.0))
#else
#define KV_AT(arr, r, i) TO_F32(K_TYPE, arr[(r) + (i)])
#endif

// The ALiBi slope of head h (1 without ALiBi: flags bit 4).
float alibi_slope(uint h) {
    if ((p.flags & 4u) == 0) return 1.0;
    return h < p.n_head_log2 ? pow(p.m0, float(h + 1)) : pow(p.m1, float(2 * (h - p.n_head_log2) + 1));
}

// Whether K (v false) or V is f16 in whole chunks of 8 halves, each 16-byte aligned
bool kv_chunked(bool v) {
    if (K_TYPE != 1) return false;
    const uint n = v ? p.DV : p.DK, words = v ? (p.off_v | p.nbv1 | p.nbv2 | p.nbv3) : (p.off_k | p.nbk1 | p.nbk2 | p.nbk3);
    return (n | words) % 8 == 0;
}
