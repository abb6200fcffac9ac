"""The scenario file: TOML validated by pydantic models into a :class:`Scenario` per part.

- :mod:`ccarena.scenario.schema`: the models of every table;
- :mod:`ccarena.scenario.events`: ``[[events]]`` and their resolution into the run spec's events;
- :mod:`ccarena.scenario.paths`: field paths (``flows[1].flavor``) for sweeps and matrices;
- :mod:`ccarena.scenario.loading`: reading the file, ``[[parts]]``, checking every swept value;
- :mod:`ccarena.scenario.error_lines`: pydantic's errors as one line naming the field.

Entry points: :func:`load_scenario` (a path or a dict → :class:`LoadedScenario`) and
:func:`validate_scenario` (a dict → :class:`Scenario`); both raise
:class:`ccarena.errors.UserError` with one line naming the field.
"""

from ccarena.scenario.executor_options import EXECUTOR_KINDS, ExecutorOptions
from ccarena.scenario.loading import (
    LoadedScenario,
    Part,
    check_sweep,
    load_scenario,
    merge_tables,
    read_toml,
    select_parts,
    split_parts,
    validate_scenario,
    without_sweep,
)
from ccarena.scenario.schema import (
    RECOVERIES,
    Flow,
    Matrix,
    Output,
    Reference,
    ReportOptions,
    Scenario,
    Sweep,
    matrix_flows,
)

__all__ = ["EXECUTOR_KINDS", "RECOVERIES", "ExecutorOptions", "Flow",
           "LoadedScenario", "Matrix", "Output", "Part", "Reference", "ReportOptions", "Scenario",
           "Sweep", "check_sweep", "load_scenario", "matrix_flows", "merge_tables", "read_toml", "select_parts",
           "split_parts", "validate_scenario",
           "without_sweep"]
