"""What a backend says about itself, once, in its own package (:data:`DECLARATION` there).

Every layer that would otherwise name a backend reads these instead (:mod:`ccarena.backends`
collects them): the scenario validates ``backend`` and each backend's options table against
them, the experiment twins runs of real-TCP backends with the simulator, the store records the
options tables, and the report titles the side-by-side sections. Declarations import nothing
heavy: the scenario reads them whenever it loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class Needs:
    """What a machine must offer a backend before it can run anything.

    Attributes:
        root: root (or CAP_NET_ADMIN) is required.
        commands: program on PATH → the Debian package that provides it.
        kernel_features: Linux facilities the backend uses (e.g. ``"network namespaces"``).
    """

    root: bool = False
    commands: Mapping[str, str] = field(default_factory=dict)
    kernel_features: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """How the report sets a backend's runs beside their simulated twins.

    Attributes:
        title: the side-by-side section's heading.
        intro: the paragraph under it.
        slug: what tells this backend's section anchor (``side-by-side-<slug>``) and figure files
            (``compare-<slug>-<run>``) from another's; ``""`` for the unsuffixed ``side-by-side``
            and ``compare-<run>`` (the first backend compared, whose names predate the others).
    """

    title: str
    intro: str
    slug: str


@dataclass(frozen=True)
class BackendDeclaration:
    """One backend, as the layers outside :mod:`ccarena.backends` know it.

    Attributes:
        name: what ``backend = ...`` and ``--backend`` call it (also the ``@<name>`` suffix of its
            run ids, :mod:`ccarena.experiment.runids`).
        implementation: ``"module:Class"`` of the backend protocol's implementation, imported on
            first use (:func:`ccarena.backends.get_backend`).
        options_table: the scenario table holding its options (``[kernel]``), or None when it
            takes none; several backends may share one table.
        options_model: the pydantic model of that table (unknown fields forbidden; every field
            has a default); None with no table.
        needs: what the machine must offer (:class:`Needs`).
        real_tcp: it runs a host's own TCP stack (Linux): runs on it and their simulated twins
            recover losses as Linux does (:data:`ccarena.experiment.runids.LINUX_RECOVERY`), and
            ``ccarena calibrate`` measures it against the simulator.
        offered_flavors: for a real-TCP backend, ``"module:function"`` of a function returning
            the congestion controllers this machine's stack offers (names as Linux gives them),
            imported on first use (:func:`ccarena.backends.offered_flavors`); None otherwise.
        reference: it is the simulator: the scenario's default backend, whose run ids carry no
            suffix and with which every other backend's runs are compared. Exactly one backend is.
        comparison: the report's side-by-side section for it (:class:`Comparison`); None for the
            reference itself.
    """

    name: str
    implementation: str
    options_table: str | None = None
    options_model: type[BaseModel] | None = None
    needs: Needs = Needs()
    real_tcp: bool = False
    offered_flavors: str | None = None
    reference: bool = False
    comparison: Comparison | None = None
