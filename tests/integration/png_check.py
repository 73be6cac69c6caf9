#!/usr/bin/env python3
"""Checks a PNG that a chart was rendered to: its size, that it is not blank, and which colours it has.

    png_check.py FILE WIDTH HEIGHT [#rrggbb ...]

Decodes the PNG itself (8-bit RGB or RGBA, non-interlaced; zlib and the five row filters), then
requires the given size, at least 20 distinct colours, at least 2% of the pixels not white, and at
least 30 pixels of each colour given. Prints what it found; exits 1 naming the first problem.
"""
import struct
import sys
import zlib
from collections import Counter


def decode(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)" % (depth, color, interlace))
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    pixels = Counter()
    for line in rows:
        for i in range(0, stride, bpp):
            pixels[tuple(line[i:i + 3])] += 1
    return width, height, pixels


def main(argv):
    path, want_w, want_h = argv[1], int(argv[2]), int(argv[3])
    width, height, pixels = decode(path)
    total = width * height
    white = pixels[(255, 255, 255)]
    print("%s: %dx%d, %d colours, %.1f%% not white" % (path, width, height, len(pixels), 100.0 * (total - white) / total))
    if (width, height) != (want_w, want_h):
        raise ValueError("size %dx%d, expected %dx%d" % (width, height, want_w, want_h))
    if len(pixels) < 20 or total - white < 0.02 * total:
        raise ValueError("the image is (nearly) blank")
    for color in argv[4:]:
        rgb = tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
        if pixels[rgb] < 30:
            raise ValueError("colour %s has only %d pixels" % (color, pixels[rgb]))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except ValueError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
