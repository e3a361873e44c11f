#version 450
// flash_attn_ext for many query rows: one workgroup per tile of R rows of one K/V head group and
// batch (workgroup x: tile, y: K/V head, z: batch).  A tile's rows run over (query, head of the
// group), head fastest, so the rk2 query heads that share a K/V head share its K and V tiles.
// Keys are taken BC at a time: the mask tile first (slope * mask, -inf past the keys or rows);
// a tile whose mask is -inf for every row is skipped (causal prompts skip about half).  Then
// the K tile staged in shared memory, the scores S = Q K^T * scale (soft-capped, plus the mask),
// the online softmax (each row's running maximum and normaliser) and O += P V with the V tile
// staged where K was.  Eight threads (lanes) per row: lane l scores keys l, l + 8, ... and sums
// values l, l + 8, ...; f32 throughout.  d[:, head, query, batch] = softmax(scores) V; optional
// sinks join the normaliser only; a row without a finite score gives 0, as flash-attn.comp does.
// Head sizes up to DMAX; BC = 32 keys for heads up to 64, fewer for larger ones (shared memory
// stays under 32 KiB).  Bindings as flash-attn.comp's (the partials' one unused).
#include "types.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer Q { float data_q[]; };
layout(binding = 1) readonly buffer K { STORAGE_T(K_TYPE) data_k[]; };
layout(binding = 2) readonly buffer V { STORAGE_T(K_TYPE) data_v[]; };
layout(binding = 3) readonly buffer M { STORAGE_T(M_TYPE) data_m[]; };
layout(binding = 4) readonly buffer S { float data_s[]; };
layout(binding = 5) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_flash_attn);
#include "fattn-kv.glsl"

// R rows of LANES threads; keys per tile at most KPT * LANES; head sizes up to DMAX (ATTN_TILE_*
// in ops-nn.c); KV_WORDS floats of shared K or V tile, rows padded by one word against bank
// conflicts.
const uint WG = 128, LANES = 8, R = WG / LANES, KPT = 4, BC_MAX = KPT * LANES, DMAX = 256, OPT = DMAX / LANES;
const uint KV_WORDS = 2560;
const float NEG_INF = -1.0 / 0.0;

shared float qs[R * (DMAX + 1)]; // the tile's query rows, DK + 1 words apart
shared float kvs[KV_WORDS];      // K, then V, of BC keys
shared float ss[R * BC_MAX];     // slope * mask, then the scores
shared float pw[R * BC_MAX];     // the softmax weights exp(s - running maximum)
shared float row_slope[R];
shared uint row_mask[R];         // the first word of each row's mask row
shared uint live;                // the last key tile with a finite mask value, plus one

// The row g of a K/V head group's rows: its query and head.
uvec2 row_query_head(uint g, uint kvh) { return uvec2(g / p.rk2, kvh * p.rk2 + g % p.rk2); }

void load_queries(uint g0, uint kvh, uint b, uint rows) {
    const uint t = gl_LocalInvocationID.x, dkp = p.DK + 1;
    for (uint e = t; e < R * p.DK; e += WG) {
        const uint r = e / p.DK, i = e % p.DK;
        const uvec2 qh = row_query_head(g0 + r, kvh);
        qs[r * dkp + i] = g0 + r < rows ? data_q[p.off_q + qh.x * p.nbq1 + qh.y * p.nbq2 + b * p.nbq3 + i] : 0.0;
    }
    if (t < R) {
        const uvec2 qh = row_query_head(g0 + t, kvh);
        row_slope[t] = alibi_slope(qh.y);
        row_mask[t] = p.off_m + ((b % p.mne3) * p.mne2 + qh.y % p.mne2) * p.mne1 * p.mne0 + qh.x * p.mne0;
    }
}

// ss = slope * mask over keys j0 .. j0 + bc (-inf past the keys and the rows); live = tile + 1
// where any value is finite.
void load_mask(uint j0, uint bc, uint tile, uint g0, uint rows) {
    for (uint e = gl_LocalInvocationID.x; e < R * bc; e += WG) {
        const uint r = e / bc, jj = e % bc, j = j0 + jj;
        float m = NEG_INF;
        if (g0 + r < rows && j < p.NKV) m = (p.flags & 1u) != 0 ? row_slope[r] * TO_F32(M_TYPE, data_m[row_mask[r] + j]) : 0.0;
        ss[r * BC_MAX + jj] = m;
        if (m != NEG_INF) live = tile + 1;
    }
}

// kvs = rows j0 .. j0 + bc of K (v false) or V, dims words apart (0 past the keys)
void load_kv(bool v, uint base, uint j0, uint bc, uint dims) {
    const uint n = v ? p.DV : p.DK, nb1 = v ? p.nbv1 : p.nbk1;
    for (uint e = gl_LocalInvocationID.x; e < bc * n; e += WG) {
        const uint jj = e / n, i = e % n, j = j0 + jj;
        float x = 0.0;
        if (j < p.NKV) x = v ? KV_AT(data_v, base + j * nb1, i) : KV_AT(data_k, base + j * nb1, i);
        kvs[jj * dims + i] = x;
    }
}

void main() {
    const uint t = gl_LocalInvocationID.x, r = t / LANES, l = t % LANES;
    const uint kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, rows = p.NQ * p.rk2, g0 = gl_WorkGroupID.x * R;
    const uint dkp = p.DK + 1, dvp = p.DV + 1;
    const uint bc = min(BC_MAX, (KV_WORDS / (max(p.DK, p.DV) + 1)) & ~(LANES - 1u)), kpt = bc / LANES;
    const uint ncol = p.DV > l ? (p.DV - l + LANES - 1) / LANES : 0u; // this lane's values
    const uint k0 = p.off_k + kvh * p.nbk2 + (b / p.rk3) * p.nbk3, v0 = p.off_v + kvh * p.nbv2 + (b / p.rk3) * p.nbv3;
    if (t == 0) live = 0;
    load_queries(g0, kvh, b, rows);
    float run_max = NEG_INF, run_sum = 0.0, o[OPT];
    [[unroll]] for (uint c = 0; c < OPT; c++) o[c] = 0.0;
    barrier();
    for (uint j0 = 0, tile = 0; j0 < p.NKV; j0 += bc, tile++) {
        load_mask(j0, bc, tile, g0, rows);
        barrier(); // the mask tile and live complete; the last tile's V read
        if (live != tile + 1) continue; // every row masked for these keys
        load_kv(false, k0, j0, bc, dkp);
        barrier();
        float s[KPT] = float[KPT](0.0, 0.0, 0.0, 0.0);
        for (uint i = 0; i < p.DK; i++) {
            const float q = qs[r * dkp + i];
            [[unroll]] for (uint c = 0; c < KPT; c++) {
                if (c >= kpt) break;
                s[c] = fma(q, kvs[(l + c * LANES) * dkp + i], s[c]);
            }
        }
        [[unroll]] for (uint c = 0; c < KPT; c++) {
            if (c >= kpt) break;
            const uint at = r * BC_MAX + l + c * LANES;
            const float m = ss[at];
            float x = s[c] * p.scale;
            if (p.softcap != 0.0) x = p.softcap * tanh(clamp(x / p.softcap, -15.0, 15.0));
            ss[at] = m == NEG_INF ? NEG_INF : x + m;
        }
        barrier(); // the scores complete; K read
        float tile_max = NEG_INF;
        for (uint jj = 0; jj < bc; jj++) tile_max = max(tile_max, ss[r * BC_MAX + jj]);
        const float new_max = max(run_max, tile_max);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        run_max = new_max;
        [[unroll]] for (uint c = 0; c < KPT; c++) {
            if (c >= kpt) break;
            const uint at = r * BC_MAX + l + c * LANES;
            pw[at] = ss[at] == NEG_INF ? 0.0 : exp(ss[at] - new_max);
        }
        load_kv(true, v0, j0, bc, dvp);
        barrier(); // the weights and the V tile complete
        [[unroll]] for (uint c = 0; c < OPT; c++) {
            if (c >= ncol) break;
            o[c] *= shrink;
        }
        float sum = 0.0;
        for (uint jj = 0; jj < bc; jj++) {
            const float w = pw[r * BC_MAX + jj];
            sum += w;
            [[unroll]] for (uint c = 0; c < OPT; c++) {
                if (c >= ncol) break;
                o[c] = fma(w, kvs[jj * dvp + l + c * LANES], o[c]);
            }
        }
        run_sum = run_sum * shrink + sum;
    }
    if (g0 + r >= rows) return;
    const uvec2 qh = row_query_head(g0 + r, kvh);
    if ((p.flags & 2u) != 0) {
        const float sink = data_s[p.off_s + qh.y];
        const float new_max = max(run_max, sink);
        const float shrink = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
        run_sum = run_sum * shrink + exp(sink - new_max);
        [[unroll]] for (uint c = 0; c < OPT; c++) o[c] *= shrink;
    }
    const float inv = run_sum > 0.0 ? 1.0 / run_sum : 0.0;
    const uint d0 = p.off_d + ((b * p.NQ + qh.x) * p.H + qh.y) * p.DV + l;
    [[unroll]] for (uint c = 0; c < OPT; c++) {
        if (c >= ncol) break;
        data_d[d0 + c * LANES] = o[c] * inv;
    }
}
