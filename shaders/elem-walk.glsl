// Element-wise kernels over a 4-D shape: each invocation takes EPT elements WALK_STEP apart (a
// workgroup of WALK_STEP invocations EPT * WALK_STEP consecutive ones, each of its loads and stores
// whole lines), its first index split into coordinates once (the divisions cost as much as the
// memory traffic of a prompt-sized add on a large GPU) and then advanced.  Needs types.glsl and
// local_size_x = WALK_STEP.
const uint EPT = 4, WALK_STEP = 256;

// The coordinates (i0, i1, i2, i3) of linear index idx in a shape ne0 x ne1 x ne2 x ...
uvec4 walk_start(uint idx, uint ne0, uint ne1, uint ne2) {
    const uint r = idx / ne0, r2 = r / ne1;
    return uvec4(idx - r * ne0, r - r2 * ne1, r2 % ne2, r2 / ne2);
}

// The linear index of this invocation's first element
uint walk_first() { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (EPT * WALK_STEP) + gl_LocalInvocationID.x; }

// The coordinates of index idx, WALK_STEP after those of c: carried without a division where rows
// are at least that long
uvec4 walk_next(uvec4 c, uint idx, uint ne0, uint ne1, uint ne2) {
    if (ne0 < WALK_STEP) return walk_start(idx, ne0, ne1, ne2);
    c.x += WALK_STEP;
    if (c.x < ne0) return c;
    c.x -= ne0;
    if (++c.y < ne1) return c;
    c.y = 0;
    if (++c.z < ne2) return c;
    return uvec4(c.x, 0, 0, c.w + 1);
}

// The coordinates of the EPT elements of the invocation whose first index is first (those past
// the tensor's end are computed too, and not to be used)
void walk_gather(out uvec4 c[EPT], uint first, uint ne0, uint ne1, uint ne2) {
    c[0] = walk_start(first, ne0, ne1, ne2);
    [[unroll]] for (uint e = 1; e < EPT; e++) c[e] = walk_next(c[e - 1], first + e * WALK_STEP, ne0, ne1, ne2);
}

// i % n for a broadcast (repeated) dimension of size n in one of size full, sparing the division
// where nothing repeats or a single value does
uint repeat_at(uint i, uint n, uint full) { return n == full ? i : (n == 1 ? 0 : i % n); }
