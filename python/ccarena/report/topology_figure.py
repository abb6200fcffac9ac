"""A drawing of a scenario's network (``ccarena topo`` and the report's first figure).

Trees (``fat_tree``, ``leaf_spine``, ``super_spine``) are drawn in layers, hosts at the bottom and
the core on top, each layer in build order so that a pod's hosts, edge and aggregation switches
stand above one another (pods are shaded and labelled). Lines (``single_link``, ``dumbbell``,
``chain``, ``parking_lot``) put the routers in a row with their hosts below them. A ``graph`` gets
a Kamada-Kawai layout (a spring layout above 300 nodes), or layers when its nodes give them.

Links are coloured by class (the role without ``-reverse``) with a legend below the drawing giving
each class's rate and delay ("core: 10 Gbps, 5 µs"); a link whose values differ from its class's
(an override) is drawn thicker and labelled when there are few. Markers and labels shrink with the
network: host labels are dropped above 64 hosts, switch labels above 64 per layer.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from pydantic import TypeAdapter, ValidationError  # noqa: E402

from ccarena.errors import UserError  # noqa: E402
from ccarena.report.figures import Figure  # noqa: E402
from ccarena.topology import Network, Topology  # noqa: E402
from ccarena.traces.trace_files import describe_rate  # noqa: E402
from ccarena.units import format_rate, format_time  # noqa: E402

LAYERED = ("fat_tree", "leaf_spine", "super_spine")
LINES = ("single_link", "dumbbell", "chain", "parking_lot")
LAYER_NAMES = {
    "fat_tree": ("hosts", "edge", "aggregation", "core"),
    "leaf_spine": ("hosts", "leaves", "spines"),
    "super_spine": ("hosts", "leaves", "spines", "super-spines"),
}
FORMATS = (".svg", ".png", ".pdf")
"""File types ``ccarena topo --out`` writes."""

MAX_HOST_LABELS = 64
MAX_LAYER_LABELS = 64
_POD = re.compile(r"^(pod\d+)-")


def _link_text(rate_bps: int, delay_ns: int, loss: float) -> str:
    text = f"{describe_rate(rate_bps)}, {format_time(delay_ns / 1e9)}"
    return text + (f", {loss * 100:g}% loss" if loss else "")


def _physical_links(net: Network) -> list[tuple[str, str, str, tuple[int, int, float]]]:
    """One entry per duplex link: (a, b, class, (rate, delay, loss of the forward direction))."""
    seen: dict[str, tuple[str, str, str, tuple[int, int, float]]] = {}
    for link in net.links:
        cls = link.role.removesuffix("-reverse")
        if link.physical not in seen or link.forward:
            seen[link.physical] = (link.src, link.dst, cls, (link.rate_bps, link.delay_ns, link.loss))
    return list(seen.values())


def _neighbours(net: Network) -> dict[str, list[str]]:
    """Each node's neighbours, in link order."""
    out: dict[str, list[str]] = defaultdict(list)
    for link in net.links:
        out[link.src].append(link.dst)
    return out


def _layered_positions(net: Network) -> dict[str, tuple[float, float]]:
    by_layer: dict[int, list[str]] = defaultdict(list)
    for node in net.nodes:
        by_layer[node.layer].append(node.name)
    pos = {}
    for layer, names in by_layer.items():
        for i, name in enumerate(names):
            pos[name] = ((i + 0.5) / len(names), float(layer))
    return pos


def _line_positions(net: Network) -> dict[str, tuple[float, float]]:
    routers = [n.name for n in net.nodes if n.kind == "router"]
    hosts = [n.name for n in net.nodes if n.kind == "host"]
    if not routers:
        return {h: (float(i), 0.5) for i, h in enumerate(hosts)}
    pos = {r: (float(i), 1.0) for i, r in enumerate(routers)}
    neighbours = _neighbours(net)
    under: dict[str, list[str]] = defaultdict(list)
    for h in hosts:
        router = next((n for n in neighbours[h] if n in pos), routers[0])
        under[router].append(h)
    for router, attached in under.items():
        x0 = pos[router][0]
        width = min(0.7, 0.5 * (len(attached) - 1))
        for i, h in enumerate(attached):
            dx = -width / 2 + width * i / (len(attached) - 1) if len(attached) > 1 else 0.0
            pos[h] = (x0 + dx, 0.0)
    return pos


def _graph_positions(net: Network) -> dict[str, tuple[float, float]]:
    # Imported here: networkx costs ~0.15 s to import, and only a ``graph`` topology needs it.
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(n.name for n in net.nodes)
    g.add_edges_from((link.src, link.dst) for link in net.links)
    if len(g) <= 300:
        try:
            return {k: (float(v[0]), float(v[1])) for k, v in nx.kamada_kawai_layout(g).items()}
        except Exception:  # scipy missing or a degenerate graph: the spring layout needs neither
            pass
    return {k: (float(v[0]), float(v[1])) for k, v in nx.spring_layout(g, seed=1).items()}


def _short_label(name: str, parent: str | None) -> str:
    if parent and name.startswith(parent + "-"):
        return name[len(parent) + 1:]
    match = _POD.match(name)
    return name[match.end():] if match else name


def heading(topology: Any) -> str:
    """The drawing's title: the topology's size (its summary lines, or its first description
    line)."""
    if hasattr(topology, "summary"):
        return topology.summary()
    return topology.describe()[0] if hasattr(topology, "describe") else topology.kind


def draw_topology(topology: Any, title: str | None = None,
                  link_values: dict[frozenset[str], float] | None = None,
                  value_label: str = "utilization") -> plt.Figure:
    """A figure of ``topology`` (a validated ``[topology]`` model).

    With ``link_values`` (``frozenset({a, b})`` of a duplex link's two node names → a value in
    [0, 1], e.g. the busier direction's utilization), links are coloured by that value on one
    scale with a colour bar labelled ``value_label`` instead of by class: a utilization map. Links
    without a value are drawn light grey."""
    net = topology.build()
    kind = topology.kind
    layered = kind in LAYERED or (kind == "graph" and len({n.layer for n in net.nodes}) > 2)
    if layered:
        pos = _layered_positions(net)
    elif kind in LINES:
        pos = _line_positions(net)
    else:
        pos = _graph_positions(net)
    hosts = [n for n in net.nodes if n.kind == "host"]
    routers = [n for n in net.nodes if n.kind == "router"]
    links = _physical_links(net)
    widest = max(Counter(n.layer for n in net.nodes).values()) if layered else len(net.nodes)
    if layered:
        layers = sorted({n.layer for n in net.nodes})
        size = (min(20.0, max(7.0, 1.5 + widest * 0.1)), min(7.5, max(3.5, 1.5 * len(layers) + 1)))
    elif kind in LINES:
        size = (min(16.0, max(6.0, 1.6 * max(1, len(routers)) + 2)), 3.5)
    else:
        size = (min(14.0, max(6.0, len(net.nodes) ** 0.5 * 1.2)),) * 2
    fig, ax = plt.subplots(figsize=size)
    ax.set_axis_off()

    # Pods: a shaded band behind each pod's hosts and switches, named below the hosts.
    if layered:
        spans: dict[str, list[float]] = {}
        for node in net.nodes:
            match = _POD.match(node.name)
            if match:
                x = pos[node.name][0]
                span = spans.setdefault(match.group(1), [x, x, node.layer])
                span[0], span[1], span[2] = min(span[0], x), max(span[1], x), max(span[2], node.layer)
        pad = 0.4 / max(1, widest)
        for i, (pod, (x0, x1, top)) in enumerate(spans.items()):
            ax.add_patch(Rectangle((x0 - pad, -0.25), x1 - x0 + 2 * pad, top + 0.5,
                                   facecolor="0.93" if i % 2 == 0 else "0.88", edgecolor="none",
                                   zorder=0))
            ax.text((x0 + x1) / 2, -0.32, pod, ha="center", va="top", fontsize=8, color="0.3")

    # Links, one collection per class; links that differ from their class's values stand out.
    classes: dict[str, list[tuple[str, str, tuple[int, int, float]]]] = \
        {cls: [] for cls in getattr(topology, "CLASSES", ())}
    for a, b, cls, values in links:
        classes.setdefault(cls, [])
        classes[cls].append((a, b, values))
    lw = 1.6 if len(links) < 60 else (0.9 if len(links) < 400 else 0.5)
    colors = plt.get_cmap("tab10").colors
    handles = []
    odd_links: list[tuple[str, str, tuple[int, int, float], Any]] = []
    if link_values is not None:
        _draw_link_values(fig, ax, links, pos, link_values, lw, value_label)
        classes = {}
    for i, (cls, members) in enumerate(classes.items()):
        if not members:
            continue
        color = colors[i % len(colors)]
        usual = Counter(values for _, _, values in members).most_common(1)[0][0]
        segments = [(pos[a], pos[b]) for a, b, _ in members]
        ax.add_collection(LineCollection(segments, colors=[color], linewidths=lw, alpha=0.8, zorder=1))
        others = [(a, b, v) for a, b, v in members if v != usual]
        odd_links += [(a, b, v, color) for a, b, v in others]
        label = f"{cls}: {_link_text(*usual)}"
        if others:
            label += f" ({len(others)} link{'s differ' if len(others) > 1 else ' differs'})"
        handles.append(Line2D([], [], color=color, lw=2.5, label=label))
    for a, b, values, color in odd_links:
        ax.add_collection(LineCollection([(pos[a], pos[b])], colors=[color], linewidths=lw * 2.5,
                                         zorder=1))
        if len(odd_links) <= 12:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            ax.text((xa + xb) / 2, (ya + yb) / 2, format_rate(values[0]), fontsize=7, ha="center",
                    va="center", color=color, zorder=4,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})

    # Nodes: hosts as circles, switches/routers as squares, smaller as the network grows.
    n_hosts = len(hosts)
    host_size = 40 if n_hosts <= 16 else (18 if n_hosts <= 64 else (7 if n_hosts <= 256 else 2))
    router_size = 90 if len(routers) <= 16 else (40 if len(routers) <= 64 else 14)
    if hosts:
        ax.scatter([pos[h.name][0] for h in hosts], [pos[h.name][1] for h in hosts], s=host_size,
                   marker="o", color="0.15", zorder=3, linewidths=0)
    if routers:
        ax.scatter([pos[r.name][0] for r in routers], [pos[r.name][1] for r in routers],
                   s=router_size, marker="s", color="#4a4a8a", zorder=3, linewidths=0)

    # Labels.
    neighbours = _neighbours(net)
    ys_all = [p[1] for p in pos.values()]
    label_drop = 0.025 * ((max(ys_all) - min(ys_all)) or 1.0)
    per_layer = Counter(n.layer for n in net.nodes)
    pods = layered and any(_POD.match(n.name) for n in net.nodes)
    for node in net.nodes:
        x, y = pos[node.name]
        count = per_layer[node.layer] if layered else len(net.nodes)
        if node.kind == "host":
            if n_hosts > MAX_HOST_LABELS:
                continue
            parent = next(iter(neighbours[node.name]), None) if layered else None
            text = _short_label(node.name, parent) if layered else node.name
        else:
            if count > MAX_LAYER_LABELS:
                continue
            text = _short_label(node.name, None) if pods else node.name
        dense = layered and count > 16
        below = node.kind == "host"
        offset = (-0.09 if below else 0.09) if layered else (-0.12 if below else 0.1)
        if kind not in LINES and not layered:
            below, offset = True, -label_drop
        ax.text(x, y + offset, text, fontsize=5 if dense else 7, rotation=90 if dense else 0,
                ha="center", va="top" if below else "bottom", zorder=5, color="0.1",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.6})

    if layered:
        names = LAYER_NAMES.get(kind, ())
        for layer in sorted(per_layer):
            name = names[layer] if layer < len(names) else f"layer {layer}"
            ax.text(-0.01, layer, f"{name} ({per_layer[layer]})", ha="right", va="center",
                    fontsize=8, color="0.3")
        ax.set_xlim(-0.16, 1.01)
        ax.set_ylim(-0.6 if pods else -0.45, max(per_layer) + 0.35)
    else:
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        mx = 0.08 * (max(xs) - min(xs) or 1.0) + 0.3 * (kind in LINES)
        my = 0.12 * (max(ys) - min(ys) or 1.0) + 0.25 * (kind in LINES)
        ax.set_xlim(min(xs) - mx, max(xs) + mx)
        ax.set_ylim(min(ys) - my, max(ys) + my)
    if hosts:
        handles.append(Line2D([], [], ls="none", marker="o", color="0.15", label="host"))
    if routers:
        handles.append(Line2D([], [], ls="none", marker="s", color="#4a4a8a", label="switch / router"))
    notes = []
    if n_hosts > MAX_HOST_LABELS:
        notes.append(f"{n_hosts} hosts, labels hidden: {hosts[0].name} … {hosts[-1].name}")
    ax.set_title(title or heading(topology), fontsize=10)
    legend = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                       ncol=min(len(handles), 3 if len(handles) > 4 else 4), fontsize=8, frameon=False,
                       title="; ".join(notes) or None, title_fontsize=7)
    legend.set_zorder(6)
    fig.tight_layout()
    return fig


def _draw_link_values(fig: plt.Figure, ax: Any, links: list, pos: dict, values: dict,
                      lw: float, label: str) -> None:
    """Links coloured by ``values`` on one scale (0 … max(1, largest)), with a colour bar."""
    from matplotlib.colors import Normalize

    cmap = plt.get_cmap("plasma_r")
    norm = Normalize(0.0, max(1.0, max(values.values(), default=1.0)))
    known = [(a, b, values[frozenset((a, b))]) for a, b, _, _ in links if frozenset((a, b)) in values]
    missing = [(pos[a], pos[b]) for a, b, _, _ in links if frozenset((a, b)) not in values]
    if missing:
        ax.add_collection(LineCollection(missing, colors=["0.85"], linewidths=lw, zorder=1))
    # Busier links on top, and drawn thicker, so hot spots stand out in dense fabrics.
    known.sort(key=lambda t: t[2])
    ax.add_collection(LineCollection([(pos[a], pos[b]) for a, b, _ in known],
                                     colors=[cmap(norm(v)) for _, _, v in known],
                                     linewidths=[lw * (1 + 2 * norm(v)) for _, _, v in known],
                                     zorder=2))
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.025, pad=0.01)
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)


def parse_topology(table: dict[str, Any]) -> Any:
    """The validated model of a ``[topology]`` table.

    Raises:
        UserError: the table is not a valid topology.
    """
    try:
        return TypeAdapter(Topology).validate_python(table)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise UserError(f"topology: {first['msg']}") from None


def write_topology(topology: Any, path: str | Path, title: str | None = None) -> Path:
    """Draw ``topology`` into ``path`` (SVG, PNG or PDF by its extension).

    Raises:
        UserError: an extension other than .svg, .png, .pdf.
    """
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UserError(f"--out: {path.name}: give a file ending in {', '.join(FORMATS)}")
    fig = draw_topology(topology, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def report_figure(part: Any, figures_dir: Path, prefix: str = "") -> list[Figure]:
    """The report's drawing of a part's network (its first run's topology); none when the
    topology cannot be rebuilt from the stored scenario (e.g. a graph file since moved)."""
    run_ids = list(part.run_ids)
    if not run_ids:
        return []
    try:
        table = part.store.read_run_record(run_ids[0]).get("scenario", {}).get("topology")
        topology = parse_topology(table)
        fig = draw_topology(topology)
    except (UserError, OSError, TypeError, AttributeError, KeyError):
        return []
    caption = "Network: " + heading(topology).replace("\n", "; ")
    return [Figure.draw(fig, caption, f"{prefix}topology.png", figures_dir)]


def utilization_map(part: Any, figures_dir: Path, prefix: str = "") -> list[Figure]:
    """The network of a part's first run with every link coloured by the utilization of its
    busier direction (8·bytes sent / (rate·duration)); none when the topology cannot be rebuilt."""
    run_ids = list(part.run_ids)
    if not run_ids:
        return []
    try:
        record = part.store.read_run_record(run_ids[0])
        topology = parse_topology(record.get("scenario", {}).get("topology"))
        links = part.store.read_table(run_ids[0], "links")
    except (UserError, OSError, TypeError, AttributeError, KeyError):
        return []
    values: dict[frozenset[str], float] = {}
    for name, util in zip(links["name"].astype(str), links["utilization"].astype(float)):
        if "->" not in name:
            continue
        a, b = name.split("->", 1)
        key = frozenset((a, b))
        values[key] = max(values.get(key, 0.0), util)
    flavors = ", ".join(dict.fromkeys(part.summary.loc[part.summary["run_id"] == run_ids[0],
                                                       "flavor"].astype(str)))
    # Titles in words (issue 29): the run's flavors, not its id.
    title = f"Link utilization in the first run ({flavors})"
    fig = draw_topology(topology, title=title, link_values=values,
                        value_label="utilization (busier direction)")
    caption = (f"Utilization map of the first run ({flavors}): each link coloured (and thickened) "
               "by the utilization of its busier direction; grey links carried nothing")
    return [Figure.draw(fig, caption, f"{prefix}dc-utilization-map.png", figures_dir)]
