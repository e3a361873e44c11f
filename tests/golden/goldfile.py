"""Writer of the golden files read by tests/testutil.c.

Format (little-endian): the magic b"GGMLCGLD", a u32 record count, then per
record: u32 name length, the name (UTF-8), four i64 sizes in ggml order
(ne[0] = the innermost, i.e. last, torch dimension), a u32 dtype (0 = f32,
1 = i32, 2 = i64) and the data in row-major torch order (which is ggml's
order with ne[0] fastest).
"""
import struct

import torch

DTYPES = {torch.float32: 0, torch.int32: 1, torch.int64: 2}


def write_gold(path, tensors):
    """tensors: dict name -> torch tensor with at most 4 dimensions."""
    with open(path, "wb") as f:
        f.write(b"GGMLCGLD")
        f.write(struct.pack("<I", len(tensors)))
        for name, t in tensors.items():
            t = t.detach().contiguous()
            if t.dtype not in DTYPES:
                t = t.to(torch.float32)
            assert t.dim() <= 4, name
            ne = list(reversed(t.shape)) + [1] * (4 - t.dim())
            raw = name.encode()
            f.write(struct.pack("<I", len(raw)))
            f.write(raw)
            f.write(struct.pack("<4q", *ne))
            f.write(struct.pack("<I", DTYPES[t.dtype]))
            f.write(t.numpy().tobytes())
