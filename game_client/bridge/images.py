"""Frames as pictures, for vision models: a PNG per frame, sent as a data URL.

A frame is rows of CSS colour names (``tasks.core``). Its picture has :data:`CELL` by
:data:`CELL` pixels per cell in the colour the browser paints (``tasks.colours``), a
one-pixel line of :data:`LINE` between cells and round the edge, so that a model can
count rows and columns; row 0 is at the top, column 0 at the left, as in the text. A
masked cell (``mask``, masked frame prediction) is a checkerboard of :data:`MASK`; a
name that is no colour is drawn :data:`UNKNOWN`, so the mistake shows. The prompt says
all this (:data:`IMAGE_NOTE`). Standard library only: 8-bit RGB, zlib-compressed.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Sequence

from tasks import colours

CELL = 16
"""Pixels per cell side."""
LINE = (64, 64, 64)
"""The grid lines' colour (one pixel wide)."""
MASK = ((96, 96, 96), (160, 160, 160))
"""The two greys of a masked cell's checkerboard (4-pixel squares)."""
UNKNOWN = (255, 0, 255)
"""A colour name the browser would not know."""

IMAGE_NOTE = (
    "The grid is shown in the attached image: {width} columns by {height} rows of "
    f"{CELL}-pixel square cells separated by 1-pixel dark grey lines, row 0 at the top and "
    "column 0 at the left.{masked}"
)
MASKED_NOTE = " Masked cells are drawn as a grey checkerboard."
OBSERVATIONS = ("text", "image", "both")
"""What a model is shown of each frame: the text grid, the picture, or both."""


def _cell_rgb(name: str) -> tuple[int, int, int]:
    return colours.rgb(name) or UNKNOWN


def frame_rows(frame: Sequence[Sequence[str]], cell: int = CELL) -> list[bytes]:
    """The picture of ``frame`` (see the module) as rows of 8-bit RGB pixels, top first:
    what :func:`frame_png` compresses and the Gymnasium environment's ``rgb_array``
    rendering shows."""
    height, width = len(frame), len(frame[0]) if frame else 0
    step = cell + 1
    line = bytes(LINE)
    rows = []
    for y in range(height * step + 1):
        if y % step == 0:
            rows.append(line * (width * step + 1))
            continue
        inner_y = y % step - 1
        pixels = bytearray(line)
        for x in range(width):
            name = frame[y // step][x]
            if name == "mask":
                for inner_x in range(cell):
                    pixels += bytes(MASK[(inner_x // 4 + inner_y // 4) % 2])
            else:
                pixels += bytes(_cell_rgb(name)) * cell
            pixels += line
        rows.append(bytes(pixels))
    return rows


def frame_png(frame: Sequence[Sequence[str]], cell: int = CELL) -> bytes:
    """The PNG picture of ``frame`` (see the module)."""
    rows = frame_rows(frame, cell)
    raw = b"".join(b"\x00" + row for row in rows)  # filter type 0 on every row
    size = (len(rows[0]) // 3, len(rows))
    return b"".join([
        b"\x89PNG\r\n\x1a\n",
        _chunk(b"IHDR", struct.pack(">IIBBBBB", size[0], size[1], 8, 2, 0, 0, 0)),
        _chunk(b"IDAT", zlib.compress(raw, 9)),
        _chunk(b"IEND", b""),
    ])


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def data_url(frame: Sequence[Sequence[str]]) -> str:
    """``frame`` as a ``data:image/png;base64,...`` URL (a chat message's image_url)."""
    return "data:image/png;base64," + base64.b64encode(frame_png(frame)).decode("ascii")


def note(frame: Sequence[Sequence[str]]) -> str:
    """What the prompt says about the attached picture of ``frame``."""
    masked = any("mask" in row for row in frame)
    return IMAGE_NOTE.format(width=len(frame[0]) if frame else 0, height=len(frame),
                             masked=MASKED_NOTE if masked else "")
