"""Inline SVG charts for the HTML report: no JavaScript library, no external resource.

An :class:`Axis` maps data values to pixels (linear, log10 or categorical) and chooses "nice"
ticks; a :class:`Chart` draws axes with ticks, tick labels and titles, then lines, step CDFs,
bars, points, spans (waterfall segments), reference lines and labelled markers, and a legend.
Every text and attribute value is escaped. Hover text is SVG ``<title>`` (the browser's own
tooltip). Each drawn element has a ``class`` naming its kind (``line``, ``cdf``, ``bar``,
``point``, ``span``, ``vline``, ``hline``, ``marker``) and a ``data-series`` naming its series,
so tests can count and measure them.

Usage::

    from otelbench.render.svg import PALETTE, Axis, Chart

    chart = Chart(Axis.linear([0, 120], "TTFT (ms)"), Axis.fixed(0, 1, "fraction of requests"))
    chart.step_cdf([10, 20, 120], [1 / 3, 2 / 3, 1], color=PALETTE[0], label="client")
    svg = chart.render("TTFT CDF")
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

__all__ = [
    "LOG_AXIS_RATIO",
    "PALETTE",
    "Axis",
    "Chart",
    "linear_ticks",
    "log_ticks",
    "tick_label",
]

LOG_AXIS_RATIO: Final = 50.0
"""A positive series spanning at least this max/min ratio gets a log axis (the histograms' bins
in :mod:`otelbench.report.plot_data` follow the same rule)."""
PALETTE: Final = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#17becf",
    "#7f7f7f",
)
"""Series colours, in order of use (colour-blind-tolerant Tableau 10 subset)."""

_MAX_CATEGORY_LABEL: Final = 16


def _esc(text: object) -> str:
    return escape(str(text), quote=True)


def _px(v: float) -> str:
    """A pixel coordinate with at most 2 decimals, no trailing zeros, never ``-0``."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= m * magnitude * (1 + 1e-9):
            return m * magnitude
    return 10.0 * magnitude


def linear_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """At most about ``count`` + 1 round tick values within ``[lo, hi]``.

    >>> linear_ticks(0, 100)
    [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    """
    if not hi > lo:
        return [lo]
    step = _nice_step(hi - lo, count)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log10 axis over ``[lo, hi]`` (``lo > 0``): decades, and 2 and 5 times
    them when the axis spans fewer than three decades.

    >>> log_ticks(10, 1000)
    [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
    """
    if not (lo > 0 and hi > lo):
        return [lo]
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1.0, 2.0, 5.0) if k1 - k0 < 3 else (1.0,)
    out = []
    for k in range(k0, k1 + 1):
        for m in mults:
            v = round(m * 10.0**k, 12)
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                out.append(v)
    return out


def tick_label(value: float) -> str:
    """A short tick label: integers without decimals, thousands as ``k``, else 3 significant
    digits.

    >>> [tick_label(v) for v in (0.0, 2.5, 40.0, 12000.0, 0.125)]
    ['0', '2.5', '40', '12k', '0.125']
    """
    if value == 0:
        return "0"
    a = abs(value)
    if a >= 10000 and value == round(value):
        k = value / 1000.0
        return f"{k:.0f}k" if k == round(k) else f"{k:.3g}k"
    if value == round(value) and a < 1e6:
        return str(round(value))
    return f"{value:.3g}"


@dataclass(frozen=True, slots=True)
class Axis:
    """One axis: its title, its domain ``[lo, hi]``, its tick values and how values map.

    ``categories`` makes it categorical: the domain is ``[0, len(categories)]`` and category
    ``i`` is centred at ``i + 0.5``.
    """

    label: str
    lo: float
    hi: float
    ticks: tuple[float, ...] = ()
    log: bool = False
    categories: tuple[str, ...] = ()

    @classmethod
    def linear(
        cls,
        values: Iterable[float | None],
        label: str,
        *,
        zero: bool = True,
        count: int = 5,
        integer: bool = False,
    ) -> Axis:
        """A linear axis covering the finite ``values`` (and 0 when ``zero``), widened to ticks.

        >>> a = Axis.linear([3.0, 97.0], "ms")
        >>> (a.lo, a.hi, a.ticks[-1])
        (0.0, 100.0, 100.0)
        >>> Axis.linear([3], "requests", integer=True).ticks
        (0.0, 1.0, 2.0, 3.0)
        """
        data = _finite(values)
        lo, hi = (min(data), max(data)) if data else (0.0, 1.0)
        if zero:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        if hi == lo:
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = (lo - pad if lo != 0 else 0.0), hi + pad
        step = _nice_step(hi - lo, count)
        if integer:  # counts: whole-number ticks only
            step = max(1.0, step if step == round(step) else math.ceil(step))
        lo = math.floor(lo / step + 1e-9) * step
        hi = math.ceil(hi / step - 1e-9) * step
        ticks = linear_ticks(lo, hi, count) if not integer else _steps(lo, hi, step)
        return cls(label, lo, hi, tuple(ticks))

    @classmethod
    def logarithmic(cls, values: Iterable[float | None], label: str) -> Axis:
        """A log10 axis covering the positive finite ``values``, widened to 1-2-5 steps."""
        data = [v for v in _finite(values) if v > 0]
        lo, hi = (min(data), max(data)) if data else (1.0, 10.0)
        if hi == lo:
            lo, hi = lo / 2.0, hi * 2.0
        lo = _nice_floor(lo)
        hi = _nice_ceil(hi)
        return cls(label, lo, hi, tuple(log_ticks(lo, hi)), log=True)

    @classmethod
    def fixed(cls, lo: float, hi: float, label: str, *, count: int = 5) -> Axis:
        """A linear axis with exactly the domain ``[lo, hi]``."""
        return cls(label, lo, hi, tuple(linear_ticks(lo, hi, count)))

    @classmethod
    def categorical(cls, names: Sequence[str], label: str) -> Axis:
        """One slot per name, in order."""
        n = max(len(names), 1)
        return cls(
            label, 0.0, float(n), tuple(i + 0.5 for i in range(len(names))), False, tuple(names)
        )

    def fraction(self, value: float) -> float:
        """Where ``value`` falls in the domain, 0 at ``lo`` and 1 at ``hi`` (clamped)."""
        if self.log:
            v = math.log10(max(value, self.lo))
            lo, hi = math.log10(self.lo), math.log10(self.hi)
        else:
            v, lo, hi = value, self.lo, self.hi
        if hi == lo:
            return 0.0
        return min(max((v - lo) / (hi - lo), 0.0), 1.0)

    def tick_text(self, index: int, value: float) -> str:
        if self.categories:
            return self.categories[index]
        return tick_label(value)

    def tick_shown(self, index: int, value: float, limit: int) -> tuple[str, str]:
        """A tick's text as drawn (a category's cut to ``limit`` characters) and, where it was
        cut, an SVG ``<title>`` that holds the whole text (empty otherwise)."""
        text = self.tick_text(index, value)
        shown = _truncate(text, limit) if self.categories else text
        return shown, f"<title>{_esc(text)}</title>" if shown != text else ""


def _steps(lo: float, hi: float, step: float) -> list[float]:
    n = round((hi - lo) / step)
    return [round(lo + k * step, 12) for k in range(n + 1)]


def _nice_floor(v: float) -> float:
    k = math.floor(math.log10(v))
    for m in (5.0, 2.0, 1.0):
        if m * 10.0**k <= v * (1 + 1e-9):
            return m * 10.0**k
    return 10.0**k


def _nice_ceil(v: float) -> float:
    k = math.floor(math.log10(v))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0**k >= v * (1 - 1e-9):
            return m * 10.0**k
    return 10.0 ** (k + 1)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Chart:
    """An x-y chart drawn as inline SVG; add series, then :meth:`render`."""

    RIGHT: Final = 20
    TOP: Final = 30
    BOTTOM: Final = 48

    def __init__(
        self, x: Axis, y: Axis, *, width: int = 600, height: int = 320, left: int = 66
    ) -> None:
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.left = left
        """The left margin: room for the y tick labels and the y axis title."""
        self._body: list[str] = []
        self._legend: list[tuple[str, str, str]] = []  # (label, colour, kind)

    # -- coordinates ---------------------------------------------------------------------------

    @property
    def _plot_w(self) -> float:
        return float(self.width - self.left - self.RIGHT)

    @property
    def _plot_h(self) -> float:
        return float(self.height - self.TOP - self.BOTTOM)

    def px(self, value: float) -> float:
        """The x pixel of data value ``value``."""
        return self.left + self.x.fraction(value) * self._plot_w

    def py(self, value: float) -> float:
        """The y pixel of data value ``value`` (up is larger)."""
        return self.TOP + (1.0 - self.y.fraction(value)) * self._plot_h

    # -- series --------------------------------------------------------------------------------

    def _add_legend(self, label: str | None, color: str, kind: str) -> None:
        if label is not None and all(entry[0] != label for entry in self._legend):
            self._legend.append((label, color, kind))

    @staticmethod
    def _title(tip: str | None) -> str:
        return f"<title>{_esc(tip)}</title>" if tip else ""

    def line(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        color: str,
        label: str | None = None,
        dashed: bool = False,
        series: str | None = None,
    ) -> None:
        """A polyline through the points (x, y)."""
        points = " ".join(
            f"{_px(self.px(x))},{_px(self.py(y))}" for x, y in zip(xs, ys, strict=True)
        )
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        self._body.append(
            f'<polyline class="line" data-series="{_esc(series or label or "")}" '
            f'points="{points}" fill="none" stroke="{_esc(color)}" stroke-width="1.8"{dash}>'
            f"{self._title(label)}</polyline>"
        )
        self._add_legend(label, color, "line")

    def step_cdf(
        self,
        xs: Sequence[float],
        fractions: Sequence[float],
        *,
        color: str,
        label: str | None = None,
        series: str | None = None,
    ) -> None:
        """An empirical CDF: the fraction rises to ``fractions[i]`` at ``xs[i]`` (sorted).

        The polyline starts at the axis start at 0, has two points per step (the foot and the
        top) and extends the last level to the axis end: ``2 · len(xs) + 2`` points.
        """
        if not xs:
            return
        pts = [(self.x.lo, 0.0)]
        prev = 0.0
        for x, f in zip(xs, fractions, strict=True):
            pts.append((x, prev))
            pts.append((x, f))
            prev = f
        pts.append((self.x.hi, prev))
        points = " ".join(f"{_px(self.px(x))},{_px(self.py(y))}" for x, y in pts)
        self._body.append(
            f'<polyline class="cdf" data-series="{_esc(series or label or "")}" '
            f'data-steps="{len(xs)}" points="{points}" fill="none" stroke="{_esc(color)}" '
            f'stroke-width="1.8">{self._title(label)}</polyline>'
        )
        self._add_legend(label, color, "line")

    def bars(
        self,
        lefts: Sequence[float],
        rights: Sequence[float],
        heights: Sequence[float | None],
        *,
        color: str,
        label: str | None = None,
        tips: Sequence[str] | None = None,
        series: str | None = None,
        opacity: float = 0.85,
    ) -> None:
        """Bars from the x axis's base (0, or the domain's low end) up to each height; a None
        height draws nothing."""
        base = max(self.y.lo, 0.0) if not self.y.log else self.y.lo
        y0 = self.py(base)
        for i, (left, right, h) in enumerate(zip(lefts, rights, heights, strict=True)):
            if h is None or not math.isfinite(h):
                continue
            x0, x1 = self.px(left), self.px(right)
            top = self.py(h)
            tip = tips[i] if tips is not None else None
            self._body.append(
                f'<rect class="bar" data-series="{_esc(series or label or "")}" '
                f'x="{_px(x0)}" y="{_px(min(top, y0))}" width="{_px(max(x1 - x0, 0.5))}" '
                f'height="{_px(abs(y0 - top))}" fill="{_esc(color)}" fill-opacity="{opacity}">'
                f"{self._title(tip)}</rect>"
            )
        self._add_legend(label, color, "box")

    def points(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        color: str,
        label: str | None = None,
        tips: Sequence[str] | None = None,
        radius: float = 2.5,
        series: str | None = None,
        opacity: float = 0.7,
    ) -> None:
        """A circle at each (x, y)."""
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            tip = tips[i] if tips is not None else None
            self._body.append(
                f'<circle class="point" data-series="{_esc(series or label or "")}" '
                f'cx="{_px(self.px(x))}" cy="{_px(self.py(y))}" r="{_px(radius)}" '
                f'fill="{_esc(color)}" fill-opacity="{opacity}">{self._title(tip)}</circle>'
            )
        self._add_legend(label, color, "dot")

    def span(
        self,
        x0: float,
        x1: float,
        y0: float,
        y1: float,
        *,
        color: str,
        label: str | None = None,
        tip: str | None = None,
        series: str | None = None,
    ) -> None:
        """A filled rectangle over the data box ``[x0, x1] × [y0, y1]`` (waterfall segments)."""
        left, right = self.px(x0), self.px(x1)
        top, bottom = self.py(max(y0, y1)), self.py(min(y0, y1))
        self._body.append(
            f'<rect class="span" data-series="{_esc(series or label or "")}" x="{_px(left)}" '
            f'y="{_px(top)}" width="{_px(max(right - left, 1.0))}" '
            f'height="{_px(bottom - top)}" fill="{_esc(color)}">{self._title(tip)}</rect>'
        )
        self._add_legend(label, color, "box")

    def vline(self, x: float, *, color: str, text: str | None = None, series: str = "") -> None:
        """A dashed vertical reference line at ``x``, labelled at its top."""
        px = self.px(x)
        near_right = px > self.left + 0.7 * self._plot_w
        anchor, dx = ("end", -4) if near_right else ("start", 4)
        label = (
            f'<text x="{_px(px + dx)}" y="{_px(self.TOP + 12)}" class="ref" '
            f'text-anchor="{anchor}" fill="{_esc(color)}">{_esc(text)}</text>'
            if text
            else ""
        )
        self._body.append(
            f'<g class="vline" data-series="{_esc(series or text or "")}">'
            f'<line x1="{_px(px)}" x2="{_px(px)}" y1="{_px(self.TOP)}" '
            f'y2="{_px(self.TOP + self._plot_h)}" stroke="{_esc(color)}" stroke-width="1.2" '
            f'stroke-dasharray="4 3">{self._title(text)}</line>{label}</g>'
        )

    def hline(self, y: float, *, color: str, text: str | None = None, series: str = "") -> None:
        """A dashed horizontal reference line at ``y``, labelled at its right end."""
        py = self.py(y)
        right = self.left + self._plot_w
        label = (
            f'<text x="{_px(self.left + 4)}" y="{_px(py - 4)}" class="ref" '
            f'fill="{_esc(color)}">{_esc(text)}</text>'
            if text
            else ""
        )
        self._body.append(
            f'<g class="hline" data-series="{_esc(series or text or "")}">'
            f'<line x1="{_px(self.left)}" x2="{_px(right)}" y1="{_px(py)}" y2="{_px(py)}" '
            f'stroke="{_esc(color)}" stroke-width="1.2" stroke-dasharray="4 3">'
            f"{self._title(text)}</line>{label}</g>"
        )

    def marker(self, x: float, y: float, text: str, *, color: str, tip: str | None = None) -> None:
        """A labelled diamond at (x, y): a named point such as a knee."""
        cx, cy = self.px(x), self.py(y)
        d = 7.0
        path = (
            f"M{_px(cx)},{_px(cy - d)} L{_px(cx + d)},{_px(cy)} L{_px(cx)},{_px(cy + d)} "
            f"L{_px(cx - d)},{_px(cy)} Z"
        )
        anchor = "end" if cx > self.left + 0.75 * self._plot_w else "start"
        dx = -10 if anchor == "end" else 10
        self._body.append(
            f'<g class="marker" data-series="{_esc(text)}">'
            f'<path d="{path}" fill="none" stroke="{_esc(color)}" stroke-width="2">'
            f"{self._title(tip or text)}</path>"
            f'<text x="{_px(cx + dx)}" y="{_px(cy - 8)}" class="ref" text-anchor="{anchor}" '
            f'fill="{_esc(color)}">{_esc(text)}</text></g>'
        )

    # -- rendering -----------------------------------------------------------------------------

    def _x_axis(self) -> list[str]:
        out = []
        bottom = self.TOP + self._plot_h
        for i, value in enumerate(self.x.ticks):
            x = self.px(value)
            shown, tip = self.x.tick_shown(i, value, _MAX_CATEGORY_LABEL)
            if not self.x.categories:
                out.append(
                    f'<line class="grid" x1="{_px(x)}" x2="{_px(x)}" y1="{_px(self.TOP)}" '
                    f'y2="{_px(bottom)}"/>'
                )
            out.append(
                f'<line class="tick" x1="{_px(x)}" x2="{_px(x)}" y1="{_px(bottom)}" '
                f'y2="{_px(bottom + 4)}"/>'
                f'<text class="tick-label" x="{_px(x)}" y="{_px(bottom + 16)}" '
                f'text-anchor="middle">{_esc(shown)}{tip}</text>'
            )
        out.append(
            f'<text class="axis-title" x="{_px(self.left + self._plot_w / 2)}" '
            f'y="{_px(self.height - 8)}" text-anchor="middle">{_esc(self.x.label)}</text>'
        )
        return out

    def _y_axis(self) -> list[str]:
        out = []
        right = self.left + self._plot_w
        for i, value in enumerate(self.y.ticks):
            y = self.py(value)
            shown, tip = self.y.tick_shown(i, value, max(6, (self.left - 30) // 7))
            if not self.y.categories:
                out.append(
                    f'<line class="grid" x1="{_px(self.left)}" x2="{_px(right)}" y1="{_px(y)}" '
                    f'y2="{_px(y)}"/>'
                )
            out.append(
                f'<line class="tick" x1="{_px(self.left - 4)}" x2="{_px(self.left)}" '
                f'y1="{_px(y)}" y2="{_px(y)}"/>'
                f'<text class="tick-label" x="{_px(self.left - 7)}" y="{_px(y + 4)}" '
                f'text-anchor="end">{_esc(shown)}{tip}</text>'
            )
        cy = self.TOP + self._plot_h / 2
        out.append(
            f'<text class="axis-title" x="14" y="{_px(cy)}" text-anchor="middle" '
            f'transform="rotate(-90 14 {_px(cy)})">{_esc(self.y.label)}</text>'
        )
        return out

    LEGEND_ROW: Final = 18

    def _legend_svg(self) -> tuple[list[str], int]:
        """The legend's items, wrapped into rows across the chart's width, and the row count."""
        out = []
        x, row = float(self.left), 0
        for label, color, kind in self._legend:
            item_width = 20 + 6.5 * len(label) + 14
            if x > self.left and x + item_width > self.width - self.RIGHT:
                x, row = float(self.left), row + 1
            y = 12 + row * self.LEGEND_ROW
            if kind == "line":
                swatch = (
                    f'<line x1="{_px(x)}" x2="{_px(x + 16)}" y1="{y}" y2="{y}" '
                    f'stroke="{_esc(color)}" stroke-width="2.5"/>'
                )
            elif kind == "dot":
                swatch = f'<circle cx="{_px(x + 8)}" cy="{y}" r="4" fill="{_esc(color)}"/>'
            else:
                swatch = (
                    f'<rect x="{_px(x + 2)}" y="{y - 6}" width="12" height="12" '
                    f'fill="{_esc(color)}"/>'
                )
            out.append(
                f'<g class="legend-item">{swatch}<text x="{_px(x + 20)}" y="{y + 4}">'
                f"{_esc(label)}</text></g>"
            )
            x += item_width
        return out, row + 1 if self._legend else 0

    def render(self, title: str) -> str:
        """The chart as an ``<svg>`` element (no XML namespace needed inline in HTML).

        A legend of more than one row pushes the chart down: the SVG grows by the extra rows.
        """
        bottom = self.TOP + self._plot_h
        right = self.left + self._plot_w
        legend, rows = self._legend_svg()
        shift = max(rows - 1, 0) * self.LEGEND_ROW
        height = self.height + shift
        parts = [
            f'<svg class="chart" viewBox="0 0 {self.width} {height}" width="{self.width}" '
            f'height="{height}" role="img" aria-label="{_esc(title)}">',
            f'<g class="chart-body" transform="translate(0 {shift})">' if shift else "<g>",
            f'<rect class="frame" x="{self.left}" y="{self.TOP}" width="{_px(self._plot_w)}" '
            f'height="{_px(self._plot_h)}" fill="#fff"/>',
            *self._x_axis(),
            *self._y_axis(),
            f'<g class="data">{"".join(self._body)}</g>',
            f'<line class="axis" x1="{self.left}" x2="{_px(right)}" y1="{_px(bottom)}" '
            f'y2="{_px(bottom)}"/>',
            f'<line class="axis" x1="{self.left}" x2="{self.left}" y1="{self.TOP}" '
            f'y2="{_px(bottom)}"/>',
            "</g>",
            *legend,
            "</svg>",
        ]
        return "".join(parts)
