"""The clusters x clients picture: a dependency-free SVG heatmap.

Theory.  The question a person brings to the report is "which client breaks
on which cluster"; a grid answers it at a glance where a table of thousands of
rows does not.  One row per cluster, one column per client profile, a green
cell when every required API has a version on every broker, a red one when
not (its tooltip names the broken APIs), grey when the pair is unknown.  The
caller chooses and orders the rows (the report puts the clusters with the most
broken clients first and caps their number), so this module only draws:
plain SVG text, no plotting library, safe to inline in HTML (every label is
escaped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["COLOURS", "HeatmapCell", "render_heatmap"]

COLOURS = {"compatible": "#2e7d32", "broken": "#c62828", "unknown": "#bdbdbd"}
_CELL = 16
_GAP = 1
_FONT = 11


@dataclass(frozen=True, slots=True)
class HeatmapCell:
    compatible: bool
    broken_apis: tuple[str, ...] = ()


def _text_width(text: str) -> int:
    return int(len(text) * _FONT * 0.62) + 6


def render_heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], HeatmapCell],
    *,
    title: str = "Compatibility: clusters x clients",
) -> str:
    """An ``<svg>`` element: ``rows`` (clusters) x ``columns`` (clients), coloured by ``cells``."""
    left = max([_text_width(r) for r in rows] + [60])
    top = max([int(_text_width(c) * 0.72) for c in columns] + [40]) + 28
    width = left + len(columns) * (_CELL + _GAP) + 150
    height = top + len(rows) * (_CELL + _GAP) + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'font-family="sans-serif" font-size="{_FONT}">',
        f"<title>{escape(title)}</title>",
    ]
    for j, column in enumerate(columns):
        x = left + j * (_CELL + _GAP) + _CELL // 2
        out.append(
            f'<text x="{x}" y="{top - 6}" transform="rotate(-45 {x} {top - 6})">{escape(column)}</text>'
        )
    for i, row in enumerate(rows):
        y = top + i * (_CELL + _GAP)
        out.append(f'<text x="{left - 6}" y="{y + _CELL - 4}" text-anchor="end">{escape(row)}</text>')
        for j, column in enumerate(columns):
            cell = cells.get((row, column))
            if cell is None:
                state, detail = "unknown", "no data"
            elif cell.compatible:
                state, detail = "compatible", "compatible"
            else:
                state, detail = "broken", "broken: " + ", ".join(cell.broken_apis)
            x = left + j * (_CELL + _GAP)
            out.append(
                f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="{COLOURS[state]}" '
                f'class="{state}"><title>{escape(f"{row} x {column}: {detail}")}</title></rect>'
            )
    legend_x = left + len(columns) * (_CELL + _GAP) + 16
    for k, state in enumerate(("compatible", "broken", "unknown")):
        y = top + k * (_CELL + 6)
        out.append(f'<rect x="{legend_x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="{COLOURS[state]}"/>')
        out.append(f'<text x="{legend_x + _CELL + 6}" y="{y + _CELL - 4}">{state}</text>')
    out.append("</svg>")
    return "\n".join(out)
