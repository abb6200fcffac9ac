"""Topology builders: each kind is a pydantic model of its scenario table with ``node_names()``
and ``build() -> Network`` (explicit nodes, directed links and routes for the engine).

To add a kind: write a module with its model (``kind: Literal["name"]``) and add the model to
:data:`KINDS`; the scenario schema picks it up from there.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from ccarena.topology.dumbbell import Dumbbell
from ccarena.topology.network import DirectedLink, Network, Node
from ccarena.topology.single_link import SingleLink

KINDS = {"single_link": SingleLink, "dumbbell": Dumbbell}
"""Topology kind name → its model."""

Topology = Annotated[Union[tuple(KINDS.values())], Field(discriminator="kind")]
"""The scenario's ``[topology]`` table: one of :data:`KINDS`, chosen by ``kind``."""

__all__ = ["KINDS", "Topology", "Network", "Node", "DirectedLink", "Dumbbell", "SingleLink"]
