"""Checks of resolved runs that are not errors but make a comparison silently meaningless:
warnings ``validate`` and ``run`` print and the report repeats.

- A flavor built on ECN (DCTCP: the catalogue's ``needs_ecn``) reacts to CE marks (RFC 8257
  §3.3); on a path where no queue marks — no ``ecn_threshold`` (RFC 8257 §3.1 step marking) and
  no AQM with ``ecn = true`` — or with ECN turned off for the flow, it sees only drops and falls
  back to a Reno-like halving, so the run does not measure DCTCP.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

ECN_FIX = 'set e.g. queue = { limit = "100pkt", ecn_threshold = "20pkt" } on its links'


def queue_marks(queue: dict[str, Any]) -> bool:
    """Whether an egress queue (a :class:`ccarena.runspec.QueueSpec` as a dict) can mark CE: a
    step-marking threshold, DualPI2 (which always marks ECN-capable packets, RFC 9332 §2.5), or
    RED, CoDel, FQ-CoDel or PIE with ``ecn`` on."""
    if queue.get("ecn_threshold_packets") or queue.get("ecn_threshold_bytes"):
        return True
    if queue.get("discipline") == "dualpi2":
        return True
    aqm = queue.get(str(queue.get("discipline", ""))) or {}
    return bool(isinstance(aqm, dict) and aqm.get("ecn"))


def unmarked_ecn_flows(spec: dict[str, Any], derived: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The TCP flows of one run whose flavor needs ECN but will never see a mark.

    Args:
        spec: the resolved run spec (:meth:`ccarena.runspec.RunSpec.to_dict`).
        derived: the run's derived facts (``flows[i]["path_links"]``, the link indices of the
            flow's forward path); None or without them: any marking queue in the network counts.

    Returns:
        ``(flow name, flavor)`` of each such flow (ECN off for it, or no marking queue on its
        path), in spec order.
    """
    from ccarena.flavors import engine_flavors

    catalogue = engine_flavors()
    links = spec.get("links", [])
    marks = [queue_marks(link.get("queue") or {}) for link in links]
    paths = {f.get("name"): f.get("path_links") for f in (derived or {}).get("flows", [])}
    out = []
    for flow in spec.get("flows", []):
        if flow.get("kind", "tcp") != "tcp":
            continue
        flavor = str(flow.get("flavor", ""))
        if not catalogue.get(flavor, {}).get("needs_ecn"):
            continue
        path = paths.get(flow.get("name"))
        on_path = any(marks[i] for i in path) if path is not None else any(marks)
        if not flow.get("ecn", False) or not on_path:
            out.append((str(flow.get("name", "")), flavor))
    return out


def ecn_warnings(runs: Iterable[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[str]:
    """One sentence per flavor that needs ECN and, in some of ``runs`` (``(spec, derived)``
    pairs), runs where nothing marks: ``dctcp needs ECN marks, but no queue on the path of 16
    flows (perm-0, perm-1, perm-2, …) marks (no ecn_threshold, no AQM with ecn = true): it will
    react to drops only, like Reno. Fix: set e.g. …``. Empty when every such flow can be marked."""
    found: dict[str, dict[str, None]] = {}
    for spec, derived in runs:
        for name, flavor in unmarked_ecn_flows(spec, derived):
            found.setdefault(flavor, {})[name] = None
    out = []
    for flavor, names in found.items():
        listed = list(names)
        shown = ", ".join(listed[:3]) + (", …" if len(listed) > 3 else "")
        flows = f"{len(listed)} flows ({shown})" if len(listed) > 1 else f"flow {shown}"
        out.append(f"{flavor} needs ECN marks, but nothing marks for {flows} (ECN off, or no "
                   "queue on the path with ecn_threshold or an AQM with ecn = true): it will react "
                   f"to drops only, like Reno. Fix: {ECN_FIX}.")
    return out


def plan_warnings(plans: Sequence[Any]) -> list[str]:
    """The warnings of an experiment's run plans (:class:`ccarena.experiment.expand.RunPlan`);
    only the specs with a flavor that needs ECN are converted and checked (a sweep of hundreds
    of runs pays a scan of its flows' flavors, nothing more)."""
    from ccarena.flavors import engine_flavors

    needs = {name for name, f in engine_flavors().items() if f.get("needs_ecn")}
    runs = [(plan.resolved.spec.to_dict(), plan.resolved.derived) for plan in plans
            if any(getattr(f, "flavor", None) in needs for f in plan.resolved.spec.flows)]
    return ecn_warnings(runs)
