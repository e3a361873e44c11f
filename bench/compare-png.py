#!/usr/bin/env python3
# compare-png.py - compare two 8-bit PNG images (grey, RGB or RGBA, not interlaced) value by
# value: how many 8-bit values differ, the largest and mean absolute difference, and the value
# range of the first image.  For stable-diffusion.cpp's output on ggmlc against it on ggml
# (docs/compatibility.md).  Standard library only.  Exit status 2 when they are not comparable.
#
#   compare-png.py A.png B.png
import struct
import sys
import zlib

CHANNELS = {0: 1, 2: 3, 6: 4}


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def unfilter(raw, width, height, bpp):
    """Undo PNG's per-row filters; returns the rows' bytes concatenated."""
    stride, out, prev, pos = width * bpp, bytearray(), bytearray(width * bpp), 0
    for _ in range(height):
        kind, row = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, upleft = prev[i], (prev[i - bpp] if i >= bpp else 0)
            add = (0, left, up, (left + up) // 2, paeth(left, up, upleft))[kind]
            row[i] = (row[i] + add) & 0xFF
        out += row
        prev = row
    return out


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("compare-png.py: %s: not a PNG file" % path)
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in CHANNELS or interlace:
        sys.exit("compare-png.py: %s: only 8-bit grey/RGB/RGBA, not interlaced" % path)
    return width, height, CHANNELS[color], unfilter(zlib.decompress(idat), width, height, CHANNELS[color])


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare-png.py A.png B.png")
    a, b = read_png(sys.argv[1]), read_png(sys.argv[2])
    if a[:3] != b[:3]:
        print("not comparable: %dx%dx%d against %dx%dx%d" % (a[:3] + b[:3]))
        sys.exit(2)
    diffs = [abs(x - y) for x, y in zip(a[3], b[3])]
    changed = [d for d in diffs if d]
    print("%dx%dx%d: %d of %d values differ, max %d, mean |diff| %.4f; A's values %d..%d, mean %.1f" % (
        a[0], a[1], a[2], len(changed), len(diffs), max(diffs), sum(diffs) / len(diffs),
        min(a[3]), max(a[3]), sum(a[3]) / len(a[3])))


if __name__ == "__main__":
    main()
