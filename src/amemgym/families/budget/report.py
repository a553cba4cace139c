"""A self-contained HTML report of budget-family runs: axes, per-kind accuracy, budget over time, traces."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ...errors import RunError
from .board import entry_flags
from .harness import read_trace
from .pool import Entry, RunResult, build_entries
from .scoring import AXES

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td.l{text-align:left}
details{margin:2px 0}pre{white-space:pre-wrap;background:#f8f8f8;padding:4px;margin:2px 0}.bad{color:#b00}"""


def _load(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{run_dir}: unreadable results.json ({exc})") from None


def _fmt(v: object) -> str:
    return "n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else html.escape(str(v))


def _budget_svg(series: list[int], budget: int | None, width: int = 520, height: int = 140) -> str:
    if not series:
        return "<p>no events</p>"
    top = max(max(series), budget or 0, 1)
    step = width / max(len(series) - 1, 1)
    points = " ".join(f"{i * step:.1f},{height - v / top * height:.1f}" for i, v in enumerate(series))
    y = 0.0 if budget is None else height - budget / top * height
    limit = "" if budget is None else (f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#b00" '
                                       'stroke-dasharray="4"/>')
    return (f'<svg width="{width + 10}" height="{height + 10}" viewBox="-5 -5 {width + 10} {height + 10}">'
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="none" stroke="#ddd"/>{limit}'
            f'<polyline fill="none" stroke="#06c" stroke-width="2" points="{points}"/></svg>'
            f"<p>writes used after each event (blue) and the budget (red dashes); {series[-1]} used</p>")


def _trace_html(trace: list[dict[str, Any]]) -> str:
    by_event: dict[int, list[dict[str, Any]]] = {}
    for rec in trace:
        by_event.setdefault(int(rec.get("event", -1)), []).append(rec)
    parts = []
    for ev, recs in sorted(by_event.items()):
        kind = html.escape(str(recs[0].get("kind", "")))
        rows = []
        for r in recs:
            what = r.get("tool") or "protocol error"
            cls = "" if r.get("ok", "error" not in r) else ' class="bad"'
            detail = json.dumps(r.get("args", {}), ensure_ascii=False)[:600]
            result = r.get("result") or r.get("error") or ""
            rows.append(f"<div{cls}>step {r.get('step')}: <b>{html.escape(str(what))}</b> "
                        f"<pre>{html.escape(detail)}</pre>{html.escape(str(result))}</div>")
        parts.append(f"<details><summary>event {ev + 1} ({kind}): {len(recs)} call(s)</summary>{''.join(rows)}"
                     "</details>")
    return "".join(parts) or "<p>no trace</p>"


def build_budget_report(run_dirs: list[Path], entries: list[Entry] | None = None) -> str:
    """The HTML of a report over budget-family run directories.

    ``entries`` are the runs pooled per run folder given, agent, tier and protocol (``pool.py``); by default
    all ``run_dirs`` count as one folder.
    """
    runs = [(d, _load(d)) for d in run_dirs]
    summary = ["<table><tr><th>run</th><th>agent</th><th>tier</th><th>domain</th><th>seed</th>"
               + "".join(f"<th>{a}</th>" for a in (*AXES, "composite", "abstention", "accuracy"))
               + "<th>writes used / ref</th><th>calls</th><th>tokens</th></tr>"]
    for d, r in runs:
        s, total = r["score"], r.get("usage", {}).get("total", {})
        summary.append(
            f"<tr><td class=l>{html.escape(str(d))}</td><td class=l>{html.escape(r['agent'])}</td>"
            f"<td class=l>{r['tier']}</td><td class=l>{r['domain']}</td><td>{r['seed']}</td>"
            + "".join(f"<td>{_fmt(s[a])}</td>" for a in (*AXES, "composite", "abstention", "accuracy"))
            + f"<td>{s['writes_used']} / {s['reference_writes']}</td><td>{total.get('calls', 0)}</td>"
            f"<td>{total.get('prompt_tokens', 0) + total.get('completion_tokens', 0)}</td></tr>")
    summary.append("</table>")
    if entries is None:
        entries = build_entries(RunResult(d, "", r) for d, r in runs)
    agg = ["<table><tr><th>run</th><th>agent</th><th>store</th><th>model</th><th>tier</th><th>protocol</th>"
           "<th>episodes</th><th>trials</th><th>composite mean [95% CI over episodes]</th><th>abstention</th>"
           "<th>flags</th></tr>"]
    for e in entries:
        c = e.stat("composite")
        ci = "" if c["lo"] is None else f" [{c['lo']:.3f}, {c['hi']:.3f}]"
        trials = e.trials()
        agg.append(f"<tr><td class=l>{html.escape(e.root)}</td><td class=l>{html.escape(e.agent)}</td>"
                   f"<td class=l>{html.escape(e.store)}</td>"
                   f"<td class=l>{html.escape(e.model)}</td><td class=l>{html.escape(e.tier)}</td>"
                   f"<td class=l>{html.escape(e.protocol)}</td><td>{len(e.episode_set)}</td>"
                   f"<td>{1 if trials is None else trials['k']}</td><td>{_fmt(c['mean'])}{ci}</td>"
                   f"<td>{_fmt(e.stat('abstention')['mean'])}</td>"
                   f"<td class=l>{html.escape('; '.join(entry_flags(e)[0]))}</td></tr>")
    agg.append("</table>")
    sections = []
    for d, r in runs:
        kinds = "".join(f"<tr><td class=l>{k}</td><td>{v['correct']}/{v['total']}</td></tr>"
                        for k, v in r["per_kind"].items())
        answers = "".join(
            f"<tr><td class=l>{qid}</td><td class=l>{a['kind']}</td><td class=l>{html.escape(str(a['reply']))}</td>"
            f"<td class=l>{html.escape(str(a['gold']))}</td><td class=l>{'yes' if a['correct'] else 'no'}: "
            f"{html.escape(a['reason'])}</td></tr>" for qid, a in r["answers"].items())
        sections.append(
            f"<h2>{html.escape(str(d))}</h2><h3>Accuracy per question kind</h3><table>{kinds}</table>"
            f"<h3>Budget used over time</h3>{_budget_svg(r['writes_over_time'], _budget_of(r))}"
            f"<h3>Answers</h3><table><tr><th>id</th><th>kind</th><th>reply</th><th>gold</th><th>correct</th></tr>"
            f"{answers}</table><h3>Tool calls</h3>{_trace_html(read_trace(d))}")
    return (f"<!doctype html><html><head><meta charset=utf-8><title>amemgym budget report</title>"
            f"<style>{_STYLE}</style></head><body><h1>amemgym budget-family report</h1>"
            f"<p>composite = 0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency; abstention is "
            f"reported apart; a skipped question is wrong.</p>{''.join(summary)}<h2>Composite over episodes</h2>"
            f"<p>One row per run folder given, agent, tier and protocol; an episode's trials are averaged before "
            f"the mean and interval over episodes.</p>"
            f"{''.join(agg)}{''.join(sections)}</body></html>")


def _budget_of(results: dict[str, Any]) -> int | None:
    if results["policy"] == "long-context":
        return None
    from .tiers import get_tier

    return get_tier(results["tier"]).writes
