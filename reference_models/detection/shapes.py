"""The drawn objects of the embedded COCO-format dataset: outlines, convex parts, and what stays visible.

Each object is a polygon outline (what is drawn and, unoccluded, its segmentation) plus the convex parts
whose union it is. An object drawn later hides the parts of earlier ones under it; COCO annotates what is
visible, so an earlier object's segmentation is its outline minus the convex parts of every later one:
one or more polygons, as COCO's `segmentation` lists them. The difference with a convex part is a union
of clips of the outline against half-planes (Sutherland-Hodgman), a few lines of NumPy where a geometry
library would be a dependency for one operation.

    python -c "from reference_models.detection.shapes import make; print(make('star', 50, 50, 30, 0.3, 1.0).outline)"
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

KINDS = ("circle", "square", "triangle", "star", "cross", "diamond")


@dataclass(frozen=True)
class Drawn:
    kind: str
    outline: np.ndarray  # (n, 2) x, y in pixels, counter-clockwise
    parts: tuple[np.ndarray, ...]  # convex polygons whose union is the outline


def _regular(n: int, cx: float, cy: float, r: float, angle: float, aspect: float = 1.0) -> np.ndarray:
    t = angle + 2 * math.pi * np.arange(n) / n
    return np.stack([cx + r * np.cos(t), cy + r * aspect * np.sin(t)], axis=1)


def _rotate(points: np.ndarray, cx: float, cy: float, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    d = points - (cx, cy)
    return np.stack([cx + c * d[:, 0] - s * d[:, 1], cy + s * d[:, 0] + c * d[:, 1]], axis=1)


def make(kind: str, cx: float, cy: float, size: float, angle: float, aspect: float) -> Drawn:
    """An object of `kind` whose bounding extent is about `size` pixels, centred at (cx, cy)."""
    r = size / 2
    if kind == "circle":  # an ellipse, as a 32-gon
        poly = _regular(32, cx, cy, r, angle, aspect)
        return Drawn(kind, poly, (poly,))
    if kind == "square":  # a rectangle, nearly upright
        h = r * aspect
        poly = _rotate(np.array([[cx - r, cy - h], [cx + r, cy - h], [cx + r, cy + h], [cx - r, cy + h]]), cx, cy,
                       angle * 0.25)
        return Drawn(kind, poly, (poly,))
    if kind == "diamond":  # a rhombus standing on a corner
        poly = _rotate(np.array([[cx, cy - r], [cx + r * aspect, cy], [cx, cy + r], [cx - r * aspect, cy]]), cx, cy,
                       angle * 0.25)
        return Drawn(kind, poly, (poly,))
    if kind == "triangle":
        poly = _regular(3, cx, cy, r, angle)
        return Drawn(kind, poly, (poly,))
    if kind == "star":  # five points; the convex parts are the pentagon and one triangle per point
        outer = _regular(5, cx, cy, r, angle)
        inner = _regular(5, cx, cy, r * 0.45, angle + math.pi / 5)
        outline = np.empty((10, 2))
        outline[0::2], outline[1::2] = outer, inner
        tips = tuple(np.array([inner[i - 1], outer[i], inner[i]]) for i in range(5))
        return Drawn(kind, outline, (inner,) + tips)
    if kind == "cross":  # a plus sign: two bars
        w = r * 0.36
        bar_h = np.array([[cx - r, cy - w], [cx + r, cy - w], [cx + r, cy + w], [cx - r, cy + w]])
        bar_v = np.array([[cx - w, cy - r], [cx + w, cy - r], [cx + w, cy + r], [cx - w, cy + r]])
        outline = np.array([[cx - w, cy - r], [cx + w, cy - r], [cx + w, cy - w], [cx + r, cy - w], [cx + r, cy + w],
                            [cx + w, cy + w], [cx + w, cy + r], [cx - w, cy + r], [cx - w, cy + w], [cx - r, cy + w],
                            [cx - r, cy - w], [cx - w, cy - w]])
        a = angle * 0.3
        return Drawn(kind, _rotate(outline, cx, cy, a), (_rotate(bar_h, cx, cy, a), _rotate(bar_v, cx, cy, a)))
    raise ValueError(f"unknown shape {kind!r}; choose one of {', '.join(KINDS)}")


def area(poly: np.ndarray) -> float:
    """Signed area by the shoelace formula; its sign is the winding (positive: interior left of each edge)."""
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def _ccw(poly: np.ndarray) -> np.ndarray:
    return poly if area(poly) >= 0 else poly[::-1]


def _clip(poly: np.ndarray, a: np.ndarray, b: np.ndarray, keep_left: bool) -> np.ndarray:
    """The part of `poly` on one side of the line a->b (Sutherland-Hodgman against one half-plane)."""
    if len(poly) == 0:
        return poly
    d = b - a
    side = d[0] * (poly[:, 1] - a[1]) - d[1] * (poly[:, 0] - a[0])
    inside = side >= 0 if keep_left else side <= 0
    out = []
    n = len(poly)
    for i in range(n):
        j = (i + 1) % n
        if inside[i]:
            out.append(poly[i])
        if inside[i] != inside[j]:
            t = side[i] / (side[i] - side[j])
            out.append(poly[i] + t * (poly[j] - poly[i]))
    return np.array(out) if len(out) >= 3 else np.empty((0, 2))


def difference(poly: np.ndarray, convex: np.ndarray) -> list[np.ndarray]:
    """poly minus a convex polygon, as disjoint polygons: the piece outside edge 1, then the piece inside
    edge 1 but outside edge 2, and so on (each piece is poly clipped to a convex region)."""
    convex = _ccw(convex)
    pieces, rest = [], poly
    for i in range(len(convex)):
        a, b = convex[i], convex[(i + 1) % len(convex)]
        outside = _clip(rest, a, b, keep_left=False)
        if len(outside) and abs(area(outside)) > 1e-6:
            pieces.append(outside)
        rest = _clip(rest, a, b, keep_left=True)
        if len(rest) == 0:
            break
    return pieces


def visible(outline: np.ndarray, occluders: list[np.ndarray], min_area: float = 0.5) -> list[np.ndarray]:
    """What is left of an outline under convex occluders (drawn after it), as polygons of some area."""
    pieces = [outline]
    for part in occluders:
        pieces = [q for p in pieces for q in difference(p, part)]
    return [p for p in pieces if abs(area(p)) >= min_area]
