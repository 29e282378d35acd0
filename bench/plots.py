"""PNG plots of suite results (matplotlib, Agg backend). Only variants that ran appear."""
from __future__ import annotations


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _value(row: dict, variant: str, y: str):
    res = row.get("variants", {}).get(variant, {})
    return res.get(y) if res.get("status") == "ok" else None


def _color(doc: dict, variant: str):
    """The same colour for a variant in every panel."""
    names = doc.get("variants", [])
    return f"C{names.index(variant) % 10}" if variant in names else None


def _tick(x) -> str:
    return f"{x // 1024}k" if isinstance(x, int) and x >= 1024 and x % 1024 == 0 else str(x)


def _title(doc: dict, what: str) -> str:
    env = doc.get("env", {})
    where = env.get("gpu") or env.get("cpu") or ""
    cpu = " [CPU numbers]" if doc.get("mode") == "cpu" else ""
    return f"{doc.get('suite')}: {what}{cpu}\n{where}, {env.get('git_sha', '')[:10]}, " \
           f"{env.get('timestamp_utc', '')}"


def lines(doc: dict, path, panel_keys: tuple, x_key: str, y: str, ylabel: str,
          logx: bool = False):
    plt = _plt()
    rows = doc.get("rows", [])
    panels = []
    for r in rows:
        key = tuple(r["case"][k] for k in panel_keys)
        if key not in panels:
            panels.append(key)
    if not panels:
        return
    ncol = 2 if len(panels) > 1 else 1
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(6 * ncol, 3.6 * nrow), squeeze=False)
    for ax, key in zip(axes.flat, panels):
        sub = [r for r in rows if tuple(r["case"][k] for k in panel_keys) == key]
        for v in doc.get("variants", []):
            pts = [(r["case"][x_key], _value(r, v, y)) for r in sub]
            pts = [(x, val) for x, val in pts if val is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=v, color=_color(doc, v),
                        lw=2.5 if v.startswith("deepwell") else 1.2)
        ax.set_title(", ".join(f"{k}={val}" for k, val in zip(panel_keys, key)), fontsize=10)
        ax.set_xlabel(x_key)
        ax.set_ylabel(ylabel)
        if logx:
            ax.set_xscale("log", base=2)
        xs = sorted({r["case"][x_key] for r in sub})
        ax.set_xticks(xs)
        ax.set_xticklabels([_tick(x) for x in xs])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(_title(doc, ylabel), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bars(doc: dict, path, y: str, ylabel: str, logy: bool = False):
    plt = _plt()
    rows = doc.get("rows", [])
    variants = [v for v in doc.get("variants", []) if any(_value(r, v, y) for r in rows)]
    if not rows or not variants:
        return
    width = 0.8 / len(variants)
    width_in = min(18.0, max(6.0, 2 + 0.3 * len(rows) * max(1.5, len(variants) / 1.5)))
    fig, ax = plt.subplots(figsize=(width_in, 5.0))
    for i, v in enumerate(variants):
        xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(rows))]
        ys = [_value(r, v, y) or 0 for r in rows]
        ax.bar(xs, ys, width, label=v, color=_color(doc, v))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.get("label", "") for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(doc, ylabel), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
