// mvq-dot-stage.glsl - a's rows read through shared memory, for the integer-dot kernels of the
// K-quants whose super-blocks start on any halfword (q2_K, q3_K, q6_K, iq4_xs: mvq-dot-k.comp).
// Their units read 32-bit words at scattered halfword offsets (about 20 loads per 32 values for
// q6_K, several lanes reading the same words), and each load instruction of a subgroup spans
// all of its units' super-blocks: many cache lines per instruction, so the L1's throughput, not
// the memory's, bounds the kernel.  With STAGE = 1 the workgroup first copies the part of each of
// its rows that the iteration's WG units cover into shared memory, 16 bytes per lane from
// consecutive words (one cache line per 8 lanes), and the units take their words from there
// (a_word); mvq-dot-rows.glsl's loop then goes over the units a workgroup at a time.
// The includer (after mvq-dot.glsl) defines SB_HALVES, the halfwords of a super-block of 8 units.
#define UNIT_STAGED

layout(constant_id = 4) const uint STAGE = 0; // 1: rows staged in shared memory
layout(binding = 0) readonly buffer A { uint data_a[]; };    // offsets and strides in halfwords
layout(binding = 0) readonly buffer A4 { uvec4 data_a4[]; }; // the same words, 16 bytes at a time

// 16-byte words of one row's part of an iteration, at most: WG / 8 super-blocks from any
// halfword, and one word more for the reads just past a super-block's end (iq4_xs's last word)
const uint STAGE_WORDS = ((WG / 8) * SB_HALVES + 7) / 8 + 2;
shared uint sh_a[STAGE * RW * 4 * STAGE_WORDS + 1];

// 32-bit word i of a: of the binding, or with STAGE of the staged rows (i from stage_row's address)
uint a_word(const uint i) {
    return STAGE != 0 ? sh_a[i] : data_a[i];
}

// The 16-byte word w of a; the binding's last, partial word (its range ends on a 4-byte boundary
// where the allocation ends) as 32-bit words, and zeros past its end.
uvec4 a_word4(const uint w) {
    if (w < data_a4.length()) return data_a4[w];
    uvec4 v = uvec4(0u);
    [[unroll]] for (uint c = 0; c < 4; c++)
        if (4 * w + c < data_a.length()) v[c] = data_a[4 * w + c];
    return v;
}

// Staged row r: a's halfwords [from, to) (and the word after) into shared memory, by the whole
// workgroup; the row's address for unit_load (in a_word's halfwords) where unit u0 is the first
// staged one.  The address may wrap below zero: unit_load adds the units' offsets back (uint
// arithmetic modulo 2^32) before it divides.
uint stage_row(const uint r, const uint from, const uint to, const uint u0) {
    const uint w0 = from / 8, n = (to + 7) / 8 + 1 - w0, at = 4 * STAGE_WORDS * r;
    for (uint i = gl_LocalInvocationID.x; i < n; i += WG) {
        const uvec4 v = a_word4(w0 + i);
        sh_a[at + 4 * i] = v.x;
        sh_a[at + 4 * i + 1] = v.y;
        sh_a[at + 4 * i + 2] = v.z;
        sh_a[at + 4 * i + 3] = v.w;
    }
    return 2 * at + (from - 8 * w0) - (u0 / 8) * SB_HALVES;
}
