"""Topology builders: each kind is a pydantic model of its scenario table with ``node_names()``
and ``build() -> Network`` (explicit nodes, directed links and routes for the engine).

To add a kind: write a module with its model (``kind: Literal["name"]``) and add the model to
:data:`KINDS`; the scenario schema picks it up from there.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from ccarena.topology.chain import Chain
from ccarena.topology.dumbbell import Dumbbell
from ccarena.topology.fat_tree import FatTree
from ccarena.topology.graph import Graph
from ccarena.topology.leaf_spine import LeafSpine
from ccarena.topology.network import DirectedLink, Network, Node
from ccarena.topology.parking_lot import ParkingLot
from ccarena.topology.single_link import SingleLink
from ccarena.topology.super_spine import SuperSpine

KINDS = {"single_link": SingleLink, "dumbbell": Dumbbell, "chain": Chain,
         "parking_lot": ParkingLot, "fat_tree": FatTree, "leaf_spine": LeafSpine,
         "super_spine": SuperSpine, "graph": Graph}
"""Topology kind name → its model."""

Topology = Annotated[Union[tuple(KINDS.values())], Field(discriminator="kind")]
"""The scenario's ``[topology]`` table: one of :data:`KINDS`, chosen by ``kind``."""

__all__ = ["KINDS", "Topology", "Network", "Node", "DirectedLink", "Dumbbell", "SingleLink",
           "Chain", "ParkingLot", "FatTree", "LeafSpine", "SuperSpine", "Graph"]
