#version 450
// flash_attn_ext for many query rows on cooperative matrices (f16 fragments, f32 accumulators).
// Like flash-attn-tile.comp, a workgroup takes a tile of BR rows of one K/V head group and batch
// (workgroup x: tile, last rows first; y: K/V head; z: batch); its rows run over (query, head of
// the group), head fastest, so the query heads that share a K/V head share its K and V tiles.
// Each of its NSG subgroups owns FRM of the rows (one fragment row).  Keys are taken BC at a time:
// 1. each lane fetches its part of the mask tile (slope * mask, -inf past the keys or rows) into
//    registers, runs of 8 keys (16 bytes of an f16 mask, 32 of an f32 one, one or two loads where
//    the rows start on 16 bytes: the LPR lanes of a row read adjacent runs, whole 32-byte sectors);
//    a tile whose mask is -inf for every row of the workgroup is skipped;
// 2. the K and V tiles are staged in shared memory as f16 (from f16, 16 bytes at a time where
//    aligned, f32 or bf16), from registers loaded a tile ahead (with its mask): the loads of a
//    tile are in flight while the tile before is computed.  With STAGES = 2 the tiles alternate
//    between two shared slots, so one workgroup barrier per tile instead of two;
// 3. S = Q K^T: the subgroup's Q fragments (loaded once) times K^T fragments, f32 accumulators
//    stored to the subgroup's part of shared memory;
// 4. the online softmax in f32: LPR lanes per row (the row's maximum through shuffles), the
//    weights P = exp(S - reference) stored as f16;
// 5. O += P V: the products add up in accumulator fragments (pending), which are taken into O (in
//    the lanes' registers, through shared memory) only where a row's factor changes.  Rows cannot
//    be scaled inside a fragment, so a row's reference (the maximum its weights are taken against)
//    moves only when a tile's maximum passes it by more than SLACK: the weights stay <= e^SLACK
//    (f16 holds them), and the pending sums are flushed into O, which shrinks, only in the tiles
//    where some row of the subgroup moved its reference (most rows settle within the first tiles)
//    and at the end.  Lavapipe (Mesa 26) stores fragments wrongly under a branch on data, even a
//    subgroup-uniform one, so there (STORE_IN_BRANCH = 0) the pending fragments are stored every
//    tile and only the lanes' sums are under the branch.
// d[:, head, query, batch] = softmax(scores) V; optional sinks join the normaliser only; a row
// without a finite score gives 0, as the other flash-attention kernels do.  Bindings and push
// constants as flash-attn-tile.comp's.  Split keys (flags >> 8 = keys per split, a multiple of BC;
// workgroup x: tile * NS + split): the keys of a tile of rows are shared among NS workgroups, which
// write the unnormalised O with its reference and normaliser (binding 6) for fattn-combine.comp, as
// flash-attn-vec.comp does (only where $GGMLC_VK_FA_SPLIT asks for it: see attn_cm_splits).  SG
// must be the size the subgroups run with (the device's subgroupSize, as mm-coopmat-nv.comp assumes
// too).
// Written in GL_NV_cooperative_matrix syntax, rewritten into KHR instructions at build time
// (plugins/vulkan/spv-coopmat-khr.py); fragments of the device's shape FRM x FRN x FRK (16x16x16
// on an H200, 8x8x8 on lavapipe).  The host (attn_cm_fits in ops-nn.c) checks the constants:
// SG a multiple of FRM, FRM * FRN a multiple of SG, FRN and FRK multiples of 8, BC a multiple of
// FRN, FRK and 8 * LPR, DKP and DVP (head sizes padded with zeros) multiples of 8, FRK and FRN,
// the query rows staged where K and V go, and the shared memory.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"

layout(constant_id = 0) const uint WG = 128;  // NSG * SG threads
layout(constant_id = 1) const uint SG = 32;   // the device's subgroup size
layout(constant_id = 2) const uint FRM = 16;  // fragment rows
layout(constant_id = 3) const uint FRN = 16;  // fragment columns
layout(constant_id = 4) const uint FRK = 16;  // fragment depth
layout(constant_id = 5) const uint KB = 16;   // B fragments' rows: FRK (a constant of its own: see mm-coopmat-nv.comp)
layout(constant_id = 6) const uint BC = 64;   // keys per tile
layout(constant_id = 7) const uint DKP = 64;  // DK padded
layout(constant_id = 8) const uint DVP = 64;  // DV padded
layout(constant_id = 9) const uint STAGES = 1; // shared K/V slots: 1 or 2
layout(constant_id = 10) const uint STORE_IN_BRANCH = 1; // 0: the pending fragments stored every tile (see step 5)
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Q { float data_q[]; };
layout(binding = 1) readonly buffer K { STORAGE_T(K_TYPE) data_k[]; };
layout(binding = 2) readonly buffer V { STORAGE_T(K_TYPE) data_v[]; };
layout(binding = 3) readonly buffer M { STORAGE_T(M_TYPE) data_m[]; };
layout(binding = 4) readonly buffer S { float data_s[]; };
layout(binding = 5) writeonly buffer D { float data_d[]; };
layout(binding = 6) writeonly buffer P { float data_p[]; }; // split keys: per (row, split) DV sums, maximum, normaliser
#if K_TYPE == 1
// f16 K and V whose rows start on 16 bytes are also read a chunk (8 halves) at a time
layout(binding = 1) readonly buffer K4 { uvec4 data_k4[]; };
layout(binding = 2) readonly buffer V4 { uvec4 data_v4[]; };
#endif
// the mask 16 bytes at a time (8 f16 or 4 f32 values), where its rows start on 16 bytes
layout(binding = 3) readonly buffer M16 { uvec4 data_m16[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_flash_attn);
#include "fattn-kv.glsl"

const uint NSG = WG / SG, BR = NSG * FRM, LPR = SG / FRM;
const uint CK = DKP / 8, CV = DVP / 8;        // 8-half chunks per K / V row
const uint LDK = CK + 1, LDV = CV + 1;         // row strides in shared memory (chunks), one of padding
const uint QF = DKP / FRK, SF = BC / FRN, PF = BC / FRK, OF = DVP / FRN;
const uint OE = FRM * FRN / SG;                // elements of an O fragment per lane
const uint RUNS = BC / 8 / LPR;                // runs of 8 keys per lane and tile: keys 8 (sub + i LPR) + h
// Row strides of the scores, the weights and a P V fragment in shared memory, 16 bytes longer than
// the rows: rows a power of two of words apart fall into the same banks, and each lane reads
// down a column of rows.
const uint LDS = BC + 4, LDP = BC / 2 + 4, LDO = FRN + 4;
const uint NKC = (BC * CK + WG - 1) / WG, NVC = (BC * CV + WG - 1) / WG; // a tile's K / V chunks per thread
const uint SLOT = BC * (LDK + LDV);             // a K tile and its V tile, in chunks
const float NEG_INF = -1.0 / 0.0;
const float SLACK = 8.0;                       // how far a tile's maximum may pass a row's reference

shared uvec4 kv[STAGES * SLOT];                // per slot: the K tile, then the V tile (first the query rows)
shared float ss[BR * LDS];                     // per subgroup: its scores, then a fragment of O
shared uint sp[BR * LDP];                      // per subgroup: its weights P, two halves a word
shared float rowf[BR];                         // each row's shrink factor, at the end its 1 / sum
shared uint live[2];                           // per tile parity: the tile's number plus one if any row takes it
float o[OF * OE];                              // O: this lane's elements of each fragment of columns

// The row g of a K/V head group's rows: its query and head.
uvec2 row_query_head(uint g, uint kvh) { return uvec2(g / p.rk2, kvh * p.rk2 + g % p.rk2); }

// Eight values from word `row` on, from element i0 (zeros from n on), as a chunk of f16.
uvec4 kv_chunk(bool v, uint row, uint i0, uint n) {
    float x[8];
    [[unroll]] for (uint c = 0; c < 8; c++) {
        x[c] = 0.0;
        if (i0 + c < n) x[c] = v ? KV_AT(data_v, row, i0 + c) : KV_AT(data_k, row, i0 + c);
    }
    return uvec4(packHalf2x16(vec2(x[0], x[1])), packHalf2x16(vec2(x[2], x[3])), packHalf2x16(vec2(x[4], x[5])),
                 packHalf2x16(vec2(x[6], x[7])));
}

// The tile's query rows as f16 chunks into kv (rows LDK chunks apart; zeros past the rows)
void stage_queries(uint g0, uint kvh, uint b, uint rows) {
    for (uint e = gl_LocalInvocationID.x; e < BR * CK; e += WG) {
        const uint r = e / CK, i = (e % CK) * 8;
        const uvec2 qh = row_query_head(g0 + r, kvh);
        const uint q0 = p.off_q + qh.x * p.nbq1 + qh.y * p.nbq2 + b * p.nbq3 + i;
        float x[8];
        [[unroll]] for (uint c = 0; c < 8; c++) x[c] = g0 + r < rows && i + c < p.DK ? data_q[q0 + c] : 0.0;
        kv[r * LDK + e % CK] = uvec4(packHalf2x16(vec2(x[0], x[1])), packHalf2x16(vec2(x[2], x[3])),
                                     packHalf2x16(vec2(x[4], x[5])), packHalf2x16(vec2(x[6], x[7])));
    }
}

// Chunk c (of 8 values) of the row at word `row` of K (v false) or V, n values long
uvec4 kv_row_chunk(bool v, bool chunked, uint row, uint c, uint n) {
#if K_TYPE == 1
    if (chunked) {
        if (c * 8 >= n) return uvec4(0);
        return v ? data_v4[row / 8 + c] : data_k4[row / 8 + c];
    }
#endif
    return kv_chunk(v, row, c * 8, n);
}

// Chunk e of the tile of keys j0 .. j0 + BC of K (v false; e < BC * CK) or V (e < BC * CV) as f16
// (zeros past the keys and the head sizes), from the rows at word k0 or v0 on
uvec4 tile_chunk(bool v, uint e, uint j0, uint kv0, bool chunked) {
    const uint c = v ? CV : CK, j = j0 + e / c;
    if (j >= p.NKV) return uvec4(0);
    return kv_row_chunk(v, chunked, kv0 + j * (v ? p.nbv1 : p.nbk1), e % c, v ? p.DV : p.DK);
}

// Values of the mask per 16 bytes
const uint M_PER16 = M_TYPE == 1 ? 8 : 4;

// Whether the mask's rows start on 16 bytes (then read 16 bytes at a time)
bool mask_wide() { return (p.off_m | p.mne0) % M_PER16 == 0; }

// slope * mask of keys j .. j + 7 (j a multiple of 8) in the mask row at mrow, in lo and hi; -inf
// past the keys and the rows
void mask_run(uint mrow, uint j, bool row_ok, float slope, bool wide, out vec4 lo, out vec4 hi) {
    lo = vec4(NEG_INF);
    hi = vec4(NEG_INF);
    if (!row_ok || j >= p.NKV) return;
    if ((p.flags & 1u) == 0) {
        [[unroll]] for (uint h = 0; h < 4; h++) {
            lo[h] = j + h < p.NKV ? 0.0 : NEG_INF;
            hi[h] = j + 4 + h < p.NKV ? 0.0 : NEG_INF;
        }
        return;
    }
    if (wide && j + 8 <= p.NKV) {
#if M_TYPE == 1
        const uvec4 w = data_m16[(mrow + j) / 8];
        lo = slope * vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = slope * vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
#else
        lo = slope * uintBitsToFloat(data_m16[(mrow + j) / 4]);
        hi = slope * uintBitsToFloat(data_m16[(mrow + j) / 4 + 1]);
#endif
        return;
    }
    [[unroll]] for (uint h = 0; h < 4; h++) {
        if (j + h < p.NKV) lo[h] = slope * TO_F32(M_TYPE, data_m[mrow + j + h]);
        if (j + 4 + h < p.NKV) hi[h] = slope * TO_F32(M_TYPE, data_m[mrow + j + 4 + h]);
    }
}

// The row's maximum (or sum) over its LPR lanes, which are adjacent
float row_max(float x) {
    [[unroll]] for (uint w = 1; w < LPR; w *= 2) x = max(x, subgroupShuffleXor(x, w));
    return x;
}
float row_sum(float x) {
    [[unroll]] for (uint w = 1; w < LPR; w *= 2) x += subgroupShuffleXor(x, w);
    return x;
}

// The first word of the partials of row g's split (split keys)
uint partials_at(uint g, uint kvh, uint b, uint ns, uint split) {
    const uvec2 qh = row_query_head(g, kvh);
    return (((b * p.NQ + qh.x) * p.H + qh.y) * ns + split) * (p.DV + 2);
}

// O's fragment of columns n = (O + pending) * each row's factor in rowf where take: the pending
// sums go through the subgroup's part of ss (rows LDO apart) into the lanes that hold those elements
void flush(fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN> pending, uint n, uint at, bool take) {
    coopMatStoreNV(pending, ss, at, LDO, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    if (take) {
        [[unroll]] for (uint i = 0; i < OE; i++) {
            const uint e = gl_SubgroupInvocationID + i * SG;
            o[n * OE + i] = (o[n * OE + i] + ss[at + (e / FRN) * LDO + e % FRN]) * rowf[gl_SubgroupID * FRM + e / FRN];
        }
    }
    subgroupBarrier(); // read before the next fragment overwrites it
}

void main() {
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, rows = p.NQ * p.rk2, blocks = (rows + BR - 1) / BR;
    const uint per_split = p.flags >> 8, ns = per_split != 0 ? gl_NumWorkGroups.x / blocks : 1u;
    const uint split = gl_WorkGroupID.x % ns, j_begin = min(p.NKV, split * per_split);
    const uint j_end = per_split != 0 ? min(p.NKV, j_begin + per_split) : p.NKV;
    const uint g0 = (blocks - 1 - gl_WorkGroupID.x / ns) * BR; // the last rows first: causal masks give them the most keys
    const uint k0 = p.off_k + kvh * p.nbk2 + (b / p.rk3) * p.nbk3, v0 = p.off_v + kvh * p.nbv2 + (b / p.rk3) * p.nbv3;
    // this lane's row in the softmax (lanes sub, sub + LPR, ... of its keys' pairs)
    const uint my_r = sg * FRM + lane / LPR, sub = lane % LPR, my_g = g0 + my_r;
    const bool row_ok = my_g < rows;
    const uvec2 my_qh = row_query_head(my_g, kvh);
    const float slope = alibi_slope(my_qh.y);
    const uint mrow = p.off_m + ((b % p.mne3) * p.mne2 + my_qh.y % p.mne2) * p.mne1 * p.mne0 + my_qh.x * p.mne0;
    const uint s_at = sg * FRM * LDS, p_at = sg * FRM * LDP; // this subgroup's scores and weights
    const bool k_chunked = kv_chunked(false), v_chunked = kv_chunked(true), m_wide = mask_wide();

    if (gl_LocalInvocationID.x < 2) live[gl_LocalInvocationID.x] = 0;
    stage_queries(g0, kvh, b, rows);
    barrier();
    fcoopmatNV<16, gl_ScopeSubgroup, FRM, FRK> qf[QF];
    [[unroll]] for (uint i = 0; i < QF; i++) coopMatLoadNV(qf[i], kv, sg * FRM * LDK + i * (FRK / 8), LDK, false);
    barrier(); // kv free for the K and V tiles

    float ref = NEG_INF, run_sum = 0.0; // the row's reference; run_sum: this lane's part of its row's
    [[unroll]] for (uint i = 0; i < OF * OE; i++) o[i] = 0.0;
    fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN> pend[OF]; // P V since the last flush
    [[unroll]] for (uint n = 0; n < OF; n++) pend[n] = fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN>(0.0);
    // the next tile's mask and this thread's chunks of its K and V, loaded a tile ahead so that the
    // loads are in flight while the tile before is computed
    const uint t = gl_LocalInvocationID.x;
    vec4 x_next[2 * RUNS]; // keys 8 (sub + i LPR) + h in x_next[2 i + h / 4][h % 4]
    uvec4 k_next[NKC], v_next[NVC];
    [[unroll]] for (uint i = 0; i < RUNS; i++) mask_run(mrow, j_begin + 8 * (sub + i * LPR), row_ok, slope, m_wide, x_next[2 * i], x_next[2 * i + 1]);
    [[unroll]] for (uint n = 0; n < NKC; n++) k_next[n] = t + n * WG < BC * CK ? tile_chunk(false, t + n * WG, j_begin, k0, k_chunked) : uvec4(0);
    [[unroll]] for (uint n = 0; n < NVC; n++) v_next[n] = t + n * WG < BC * CV ? tile_chunk(true, t + n * WG, j_begin, v0, v_chunked) : uvec4(0);
    for (uint j0 = j_begin, tile = 0; j0 < j_end; j0 += BC, tile++) {
        // 1. slope * mask for this lane's keys, -inf past the keys and the rows
        vec4 x[2 * RUNS];
        bool takes = false;
        [[unroll]] for (uint i = 0; i < 2 * RUNS; i++) {
            x[i] = x_next[i];
            takes = takes || any(notEqual(x[i], vec4(NEG_INF)));
        }
        if (takes) live[tile & 1] = tile + 1;
        // 2. the K and V tiles into their slot (its tile before last is read: the last barrier),
        // the next tile's loads issued
        const uint ks = STAGES == 2 ? (tile & 1) * SLOT : 0, vs = ks + BC * LDK;
        [[unroll]] for (uint n = 0; n < NKC; n++) {
            const uint e = t + n * WG;
            if (e < BC * CK) kv[ks + (e / CK) * LDK + e % CK] = k_next[n];
        }
        [[unroll]] for (uint n = 0; n < NVC; n++) {
            const uint e = t + n * WG;
            if (e < BC * CV) kv[vs + (e / CV) * LDV + e % CV] = v_next[n];
        }
        const uint j1 = j0 + BC;
        if (j1 < j_end) {
            [[unroll]] for (uint i = 0; i < RUNS; i++) mask_run(mrow, j1 + 8 * (sub + i * LPR), row_ok, slope, m_wide, x_next[2 * i], x_next[2 * i + 1]);
            [[unroll]] for (uint n = 0; n < NKC; n++) k_next[n] = t + n * WG < BC * CK ? tile_chunk(false, t + n * WG, j1, k0, k_chunked) : uvec4(0);
            [[unroll]] for (uint n = 0; n < NVC; n++) v_next[n] = t + n * WG < BC * CV ? tile_chunk(true, t + n * WG, j1, v0, v_chunked) : uvec4(0);
        }
        barrier(); // the tile's K, V and live flag complete
        if (live[tile & 1] == tile + 1) { // else every row is masked for these keys
            // 3. S = Q K^T
            [[unroll]] for (uint n = 0; n < SF; n++) {
                fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN> acc = fcoopmatNV<32, gl_ScopeSubgroup, FRM, FRN>(0.0);
                [[unroll]] for (uint i = 0; i < QF; i++) {
                    fcoopmatNV<16, gl_ScopeSubgroup, KB, FRN> kf;
                    coopMatLoadNV(kf, kv, ks + n * FRN * LDK + i * (FRK / 8), LDK, true);
                    acc = coopMatMulAddNV(qf[i], kf, acc);
                }
                coopMatStoreNV(acc, ss, s_at + n * FRN, LDS, false);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            // 4. the online softmax of this lane's scores against the row's reference
            float tile_max = NEG_INF;
            [[unroll]] for (uint i = 0; i < RUNS; i++) {
                [[unroll]] for (uint h = 0; h < 8; h++) {
                    float s = ss[s_at + (lane / LPR) * LDS + 8 * (sub + i * LPR) + h] * p.scale;
                    if (p.softcap != 0.0) s = p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0));
                    const uint e = 2 * i + h / 4, c = h % 4;
                    x[e][c] = x[e][c] == NEG_INF ? NEG_INF : s + x[e][c];
                    tile_max = max(tile_max, x[e][c]);
                }
            }
            tile_max = row_max(tile_max);
            const bool moves = tile_max > ref + SLACK; // true for a row's first finite score
            // whether some row's O (nonzero) shrinks: one answer for the subgroup, whose fragment
            // stores the branch below holds
            const bool shrinks = subgroupMax(moves && ref != NEG_INF ? 1u : 0u) != 0;
            float shrink = 1.0;
            if (moves) {
                shrink = ref == NEG_INF ? 0.0 : exp(ref - tile_max);
                ref = tile_max;
            }
            float sum = 0.0;
            [[unroll]] for (uint e = 0; e < 4 * RUNS; e++) { // pairs of keys 2 e, 2 e + 1 of the lane's
                const vec2 xe = vec2(x[e / 2][2 * (e % 2)], x[e / 2][2 * (e % 2) + 1]);
                const vec2 w = vec2(xe.x == NEG_INF ? 0.0 : exp(xe.x - ref), xe.y == NEG_INF ? 0.0 : exp(xe.y - ref));
                const uint packed = packHalf2x16(w);
                sp[p_at + (lane / LPR) * LDP + 4 * (sub + (e / 4) * LPR) + e % 4] = packed;
                const vec2 rounded = unpackHalf2x16(packed); // the weights P V is made of
                sum += rounded.x + rounded.y;
            }
            run_sum = run_sum * shrink + sum;
            if (sub == 0) rowf[my_r] = shrink;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            // 5. O = (O + pending) * shrink (rarely), then pending += P V
            if (STORE_IN_BRANCH == 0 || shrinks) {
                [[unroll]] for (uint n = 0; n < OF; n++) flush(pend[n], n, s_at, shrinks);
            }
            const float kept = shrinks ? 0.0 : 1.0; // emptied by a product, outside the branch (as verified on lavapipe)
            [[unroll]] for (uint n = 0; n < OF; n++) pend[n] = pend[n] * kept;
            fcoopmatNV<16, gl_ScopeSubgroup, FRM, FRK> pf[PF];
            [[unroll]] for (uint kk = 0; kk < PF; kk++) coopMatLoadNV(pf[kk], sp, p_at + kk * (FRK / 2), LDP, false);
            [[unroll]] for (uint n = 0; n < OF; n++) {
                [[unroll]] for (uint kk = 0; kk < PF; kk++) {
                    fcoopmatNV<16, gl_ScopeSubgroup, KB, FRN> vf;
                    coopMatLoadNV(vf, kv, vs + kk * FRK * LDV + n * (FRN / 8), LDV, false);
                    pend[n] = coopMatMulAddNV(pf[kk], vf, pend[n]);
                }
            }
        }
        if (STAGES == 1) barrier(); // K and V read before the next tile's
    }

    // the normaliser: the lanes' parts, then the sink
    run_sum = row_sum(run_sum);
    if (sub == 0) rowf[my_r] = 1.0;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint n = 0; n < OF; n++) flush(pend[n], n, s_at, true);
    if (per_split != 0) {
        // the unnormalised O, each row's reference and normaliser (from one of its lanes)
        [[unroll]] for (uint n = 0; n < OF; n++) {
            [[unroll]] for (uint i = 0; i < OE; i++) {
                const uint e = lane + i * SG, r = sg * FRM + e / FRN, col = n * FRN + e % FRN;
                if (g0 + r < rows && col < p.DV) data_p[partials_at(g0 + r, kvh, b, ns, split) + col] = o[n * OE + i];
            }
        }
        if (sub == 0 && row_ok) {
            const uint p0 = partials_at(my_g, kvh, b, ns, split);
            data_p[p0 + p.DV] = ref;
            data_p[p0 + p.DV + 1] = run_sum;
        }
        return;
    }
    float keep = 1.0;
    if ((p.flags & 2u) != 0 && row_ok) {
        const float sink = data_s[p.off_s + my_qh.y];
        const float new_max = max(ref, sink);
        keep = ref == NEG_INF ? 0.0 : exp(ref - new_max);
        run_sum = run_sum * keep + exp(sink - new_max);
    }
    subgroupBarrier(); // rowf read by the last flush
    if (sub == 0) rowf[my_r] = run_sum > 0.0 ? keep / run_sum : 0.0;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint n = 0; n < OF; n++) {
        [[unroll]] for (uint i = 0; i < OE; i++) {
            const uint e = lane + i * SG, r = sg * FRM + e / FRN, col = n * FRN + e % FRN;
            if (g0 + r >= rows || col >= p.DV) continue;
            const uvec2 qh = row_query_head(g0 + r, kvh);
            data_d[p.off_d + ((b * p.NQ + qh.x) * p.H + qh.y) * p.DV + col] = o[n * OE + i] * rowf[r];
        }
    }
}
