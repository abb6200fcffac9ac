"""Field paths into a scenario (``"topology.bottleneck.loss"``, ``"flows[1].flavor"``,
``"flows[*].flavor"``): parsed, and set in a copy of the scenario as written. Sweeps and matrices
use them to make each point's scenario."""

from __future__ import annotations

import copy
import re
from typing import Any

from ccarena.errors import UserError

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+|\*)\]|(\.)")
EVERY = "*"
"""The index token that stands for every entry of a list (``flows[*].flavor``)."""
UNSWEEPABLE = ("name", "sweep", "description", "backend")


def parse_path(path: str) -> list[str | int]:
    """``"flows[1].flavor"`` → ``["flows", 1, "flavor"]``; ``[*]`` gives the token ``"*"``
    (:data:`EVERY`).

    Raises:
        UserError: not a field path.
    """
    tokens: list[str | int] = []
    pos = 0
    expect_name = True
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            raise UserError(f'sweep."{path}": not a field path (write e.g. "topology.bottleneck.loss" '
                            'or "flows[1].flavor")')
        name, index, dot = match.groups()
        if name is not None and expect_name:
            tokens.append(name)
            expect_name = False
        elif index is not None and not expect_name:
            tokens.append(EVERY if index == EVERY else int(index))
        elif dot is not None and not expect_name:
            expect_name = True
        else:
            raise UserError(f'sweep."{path}": not a field path (write e.g. "topology.bottleneck.loss" '
                            'or "flows[1].flavor")')
        pos = match.end()
    if not tokens or expect_name:
        raise UserError(f'sweep."{path}": not a field path')
    return tokens


def set_path(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with the field at ``path`` set to ``value``.

    Missing tables along the path are created (so a default can be swept); list indices must
    exist; ``[*]`` sets the field in every entry of the list.

    Raises:
        UserError: the path crosses a value that is not a table or list, or an index is out of range.
    """
    tokens = parse_path(path)
    if tokens[0] in UNSWEEPABLE:
        raise UserError(f'sweep."{path}": `{tokens[0]}` cannot be swept')
    out = copy.deepcopy(raw)
    _set_in(out, tokens, 0, value, path)
    return out


def _set_in(node: Any, tokens: list[str | int], i: int, value: Any, path: str) -> None:
    token = tokens[i]
    last = i == len(tokens) - 1
    where = render_path(tokens[:i]) or "the scenario"
    if isinstance(token, int) or token == EVERY:
        if not isinstance(node, list):
            raise UserError(f'sweep."{path}": {where} is not a list')
        indices = range(len(node)) if token == EVERY else [token]
        if token != EVERY and token >= len(node):
            raise UserError(f'sweep."{path}": there is no {render_path(tokens[:i + 1])} '
                            f"({where} has {len(node)} entries)")
        for k in indices:
            if last:
                node[k] = copy.deepcopy(value)
            else:
                _set_in(node[k], tokens, i + 1, value, path)
        return
    if not isinstance(node, dict):
        raise UserError(f'sweep."{path}": {where} is not a table')
    if last:
        node[token] = copy.deepcopy(value)
        return
    if token not in node:
        node[token] = [] if isinstance(tokens[i + 1], int) else {}
    _set_in(node[token], tokens, i + 1, value, path)


def render_path(tokens: list[str | int]) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) or t == EVERY else (f".{t}" if out else t)
    return out
