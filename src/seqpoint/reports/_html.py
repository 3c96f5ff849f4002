"""A self-contained static HTML report: tables and PNG plots embedded as data URIs."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from seqpoint._jsonio import write_text

__all__ = ["Section", "write_html_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1000px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:1.8em} .sub{color:#666} table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left} img{max-width:100%;border:1px solid #eee;margin:.4em 0}
.headline{display:flex;flex-wrap:wrap;gap:1em;margin:1em 0}.card{border:1px solid #ddd;border-radius:6px;
padding:.6em 1em;min-width:170px}.card b{display:block;font-size:1.35em}.card span{color:#666;font-size:.85em}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.85em}
"""


@dataclass
class Section:
    """One titled block of the report: paragraphs of plain text (blank lines between), a table
    (header row first), PNG files to embed and preformatted ``code`` (a config)."""

    title: str
    text: str = ""
    table: Sequence[Sequence[object]] | None = None
    images: list[Path] = field(default_factory=list)
    code: str = ""


def _table(rows: Sequence[Sequence[object]]) -> str:
    head, *body = rows
    out = ["<table><tr>", *(f"<th>{html.escape(str(c))}</th>" for c in head), "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in body]
    return "".join([*out, "</table>"])


def _image(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    alt = html.escape(Path(path).stem.replace("_", " "))
    return f'<img alt="{alt}" src="data:image/png;base64,{data}">'


def write_html_report(path: str | Path, *, title: str, subtitle: str = "",
                      headline: Sequence[tuple[str, str]] = (), sections: Sequence[Section] = ()) -> Path:
    """Write one HTML file that needs nothing beside it; ``headline``: ``(value, caption)`` cards."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<div class='sub'>{html.escape(subtitle)} · generated "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</div>",
    ]
    if headline:
        parts += ["<div class='headline'>", *(f"<div class='card'><b>{html.escape(v)}</b><span>"
                                              f"{html.escape(c)}</span></div>" for v, c in headline), "</div>"]
    for sec in sections:
        parts.append(f"<h2>{html.escape(sec.title)}</h2>")
        for para in filter(None, (p.strip() for p in sec.text.split("\n\n"))):
            parts.append(f"<p>{html.escape(para)}</p>")
        if sec.table:
            parts.append(_table(sec.table))
        parts += [_image(p) for p in sec.images]
        if sec.code:
            parts.append(f"<pre>{html.escape(sec.code)}</pre>")
    parts.append("</body></html>")
    return write_text("\n".join(parts), path)
