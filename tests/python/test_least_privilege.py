"""Least privilege where it is free (issue 37, "Security"): text read from a file never drives
the terminal, and ``ccarena query`` reads only the experiment it is given.

The hostile experiment is made the way a user would get one: ``ccarena import iperf3`` of a file
whose congestion-controller name (it becomes the flavor and the flow's name) holds terminal escape
sequences (retitle: ``ESC ] 0; … BEL``; clear: ``ESC [ 2J``) and rich markup (``[/x]`` ended
``report`` in a MarkupError traceback; ``[link=…]`` would print a hyperlink).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ccarena.cli import app
from ccarena.errors import printable, terminal_text
from typer.testing import CliRunner

IPERF3 = Path(__file__).resolve().parents[1] / "data" / "iperf3" / "tcp-default.json"
"""A real iperf3 3.12 file (tests/data/iperf3/README.md)."""

HOSTILE = "cu\x1b]0;pwned\x07bic\x1b[2J[/x][link=http://evil.example]k[/link]<i>"
"""A flavor name that retitles and clears the terminal and carries rich markup and HTML."""

CONTROL = ("\x1b", "\x07", "\x9b")
"""ESC, BEL and the 8-bit CSI: none may reach the terminal from a file."""

REFUSED = "ccarena query reads only this experiment; --unsafe-sql allows any SQL"


def cli(*args: object, columns: int = 300) -> tuple[int, str, str]:
    """`ccarena ARGS` in this process, ``COLUMNS`` wide: (exit code, stdout, stderr)."""
    import ccarena.cli as cli_module

    # The CLI's consoles are made once per process, at the width of their first use: an earlier
    # test in this process (CI sets COLUMNS=80) would otherwise fix it for these.
    cli_module.stdout._console = cli_module.stderr._console = None
    done = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, done.stdout, done.stderr


def assert_clean(*texts: str) -> None:
    for text in texts:
        for c in CONTROL:
            assert c not in text, f"{c!r} reached the terminal: {text[:300]!r}"


def hostile_experiment(directory: Path, name: str) -> Path:
    doc = json.loads(IPERF3.read_text())
    doc["end"]["sender_tcp_congestion"] = HOSTILE
    source = directory / f"{name}.json"
    source.write_text(json.dumps(doc))
    out = directory / name
    code, _, err = cli("import", "iperf3", source, "--name", name, "-o", out)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_experiment(tmp_path_factory.mktemp("hostile"), "evil")


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# --- terminal output ---------------------------------------------------------------------------


def test_terminal_text_escapes_controls_and_markup():
    assert printable("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"
    assert printable("a\nb\tc\x1b", keep="\n\t") == "a\nb\tc\\x1b"
    shown = terminal_text(HOSTILE)
    assert_clean(shown)
    from rich.console import Console

    console = Console(width=200, force_terminal=True, record=True)
    console.print(shown)
    # Shown as the text it is: no hyperlink (OSC 8), no tag swallowed, no MarkupError.
    assert console.export_text().strip() == printable(HOSTILE)
    assert "\x1b]8;" not in console.export_text(styles=True)


def test_report_summary_shows_hostile_names_as_text(hostile, tmp_path):
    code, out, err = cli("report", hostile, "-o", tmp_path / "report.html")
    assert code == 0, err  # was a MarkupError traceback ('[/x]')
    assert_clean(out, err)
    assert printable(HOSTILE) in out  # the flavor column, escaped, whole at 300 columns
    assert "evil: summary" in out
    # The page: the name is HTML-escaped by jinja2.
    page = (tmp_path / "report.html").read_text()
    assert "k[/link]<i>" not in page and "k[/link]&lt;i&gt;" in page


def test_report_in_a_process_prints_library_warnings_escaped(hostile, tmp_path):
    """matplotlib warns of the glyphs it cannot draw, quoting them (ESC, BEL): the ``ccarena``
    process prints warnings through :func:`printable`."""
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "ccarena", "report", str(hostile), "-o",
                           str(tmp_path / "r.html")], capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert_clean(done.stdout.decode(), done.stderr.decode())


def test_compare_table_shows_hostile_names_as_text(hostile, tmp_path):
    other = hostile_experiment(tmp_path, "evil-b")
    code, out, err = cli("compare", hostile, other, "-o", tmp_path / "cmp")
    assert code == 0, err
    assert_clean(out, err)
    assert printable(HOSTILE) in out
    # Narrow: the stacked layout, keys one per line.
    code, out, err = cli("compare", hostile, other, "-o", tmp_path / "cmp", columns=60)
    assert code == 0, err
    assert_clean(out, err)


def test_query_table_and_csv_show_hostile_names_as_text(hostile):
    code, out, err = cli("query", hostile, "SELECT name, flavor, flavor AS \"h\x1b[2J\" FROM summary")
    assert code == 0, err
    assert_clean(out, err)
    assert printable(HOSTILE) in out and "h\\x1b[2J" in out
    code, out, err = cli("query", hostile, "SELECT flavor FROM summary", "--csv")
    assert code == 0, err
    assert_clean(out, err)
    assert out.splitlines()[1] == printable(HOSTILE)


def test_run_refuses_a_hostile_flow_name_in_one_clean_line(tmp_path):
    scenario = tmp_path / "evil.toml"
    scenario.write_text("""
name = "evil-run"
duration = "1s"
seed = 1

[topology]
kind = "dumbbell"
pairs = 1
bottleneck = { rate = "10Mbps", delay = "1ms", queue = { limit = "100pkt" } }
access = { rate = "1Gbps", delay = "0.1ms" }

[[flows]]
name = "x\\u001b]0;pwned\\u0007y\\u001b[2J"
from = "left0"
to = "right0"
flavor = "cubic"
""")
    code, out, err = cli("run", scenario, "--out", tmp_path / "out", "--no-report")
    assert code == 2
    assert_clean(out, err)
    assert len(err.strip().splitlines()) == 1 and "flows[0].name" in err


# --- query: the experiment's files, read only --------------------------------------------------


@pytest.mark.parametrize("sql, target", [
    ("SELECT * FROM read_text('/etc/passwd')", None),
    ("SELECT * FROM read_csv('/etc/passwd', sep = ':')", None),
    ("SELECT * FROM glob('/*')", None),
    ("SELECT * FROM read_text('runs/../../outside.txt')", None),
    ("SELECT * FROM read_text('link/outside.txt')", None),
    ("COPY (SELECT 1) TO '{tmp}/copied.csv'", "copied.csv"),
    ("COPY (SELECT 1 AS x) TO 'summary.parquet'", None),
    ("SELECT 1; COPY (SELECT 1) TO 'copied.csv'", None),
    ("EXPLAIN ANALYZE COPY (SELECT 1) TO 'copied.csv'", None),
    ("COPY (PIVOT (SELECT 1 AS a) ON a) TO '{tmp}/pivot.csv'", "pivot.csv"),
    ("EXPORT DATABASE '{tmp}/exported'", "exported"),
    ("ATTACH '{tmp}/attached.db'", "attached.db"),
    ("ATTACH 'inside.db'", None),
    ("INSTALL httpfs", None),
    ("SELECT * FROM sqlite_scan('{tmp}/other.db', 't')", None),  # autoloads sqlite_scanner
    ("SELECT * FROM 'https://example.com/x.parquet'", None),
    ("LOAD httpfs", None),
    ("SET enable_external_access = true", None),
    ("RESET lock_configuration", None),
])
def test_query_refuses_what_is_not_reading_this_experiment(hostile, tmp_path, sql, target):
    (tmp_path / "outside.txt").write_text("secret")
    link = hostile / "link"
    if not link.is_symlink():
        link.symlink_to(tmp_path)
    try:
        before = listing(hostile)
        cwd = os.getcwd()
        code, out, err = cli("query", hostile, sql.format(tmp=tmp_path))
        assert code == 2, out
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: query: ")
        assert err.strip().endswith(REFUSED) and "is not allowed" in err
        assert "secret" not in out + err and out == ""
        assert listing(hostile) == before  # nothing written in the experiment
        if target is not None:
            assert not (tmp_path / target).exists()
        assert os.getcwd() == cwd
    finally:
        link.unlink()


def test_query_reads_the_views_and_paths_inside_the_experiment(hostile):
    queries = {
        "SELECT count(*) AS n FROM summary": "1",
        "SELECT count(*) AS n FROM flows": "1",
        "SELECT count(*) AS n FROM 'runs/*/flows.parquet'": "1",
        f"SELECT count(*) AS n FROM '{hostile.resolve()}/runs/*/samples.parquet' WHERE time_s > 0":
            None,
        "SELECT count(*) AS n FROM read_parquet('./summary.parquet')": "1",
        "SELECT count(*) AS n FROM read_json('experiment.json')": "1",
        "SELECT count(*) AS n FROM (DESCRIBE flows)": None,
        "SELECT count(*) AS n FROM (SUMMARIZE summary)": None,
        "SELECT count(*) AS n FROM glob('runs/*/*.parquet')": None,
        "PIVOT (SELECT 'a' AS k, 1 AS v) ON k IN ('a') USING sum(v)": None,
    }
    for sql, expected in queries.items():
        code, out, err = cli("query", hostile, sql, "--csv")
        assert code == 0, (sql, err)
        if expected is not None:
            assert out.splitlines()[1] == expected, sql
    code, out, err = cli("query", hostile, "SHOW TABLES")
    assert code == 0 and "flows" in out and "summary" in out, err


def test_unsafe_sql_allows_any_file(hostile, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside-marker")
    code, out, err = cli("query", hostile, f"SELECT content FROM read_text('{outside}')", "--csv",
                         "--unsafe-sql")
    assert code == 0, err
    assert "outside-marker" in out
    code, _, err = cli("query", hostile, f"COPY (SELECT 42 AS x) TO '{tmp_path}/written.csv'",
                       "--unsafe-sql")
    assert code == 0, err
    assert (tmp_path / "written.csv").read_text().split() == ["x", "42"]


def test_query_is_refused_rather_than_run_unconfined_on_an_old_duckdb(tmp_path):
    """A DuckDB without ``allowed_directories`` (before 1.1): one line, never full access."""
    import duckdb
    from ccarena.errors import UserError
    from ccarena.store import query_access

    class OldDuckDB:
        def execute(self, sql: str, params: object = None) -> None:
            if "allowed_directories" in sql:
                raise duckdb.CatalogException('Catalog Error: unrecognized configuration parameter '
                                              '"allowed_directories"')

    with pytest.raises(UserError, match=r"^query: DuckDB .* cannot keep SQL to this experiment "
                                        r".*allowed_directories.*--unsafe-sql"):
        query_access.confine(OldDuckDB(), tmp_path)


def test_recv_prints_a_peers_file_name_as_text(tmp_path):
    """A file name comes from the remote peer: rich markup in it is shown (not a hyperlink) and
    a bidi override (which the receiver's name check lets through) as an escape."""
    import re

    src = tmp_path / "payload.bin"
    src.write_bytes(os.urandom(20_000))
    incoming = tmp_path / "in"
    incoming.mkdir()
    name = "a\u202e[link=https:evil.example]b[bold].bin"
    recv = subprocess.Popen([sys.executable, "-m", "ccarena", "recv", "--bind", "127.0.0.1:0",
                             "--dir", str(incoming), "--once"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = recv.stderr.readline()
        match = re.search(r"listening on (\S+)", line)
        assert match, line
        code, _, err = cli("send", src, match.group(1), "--name", name)
        assert code == 0, err
        _, recv_err = recv.communicate(timeout=30)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    assert recv.returncode == 0, recv_err
    assert (incoming / name).read_bytes() == src.read_bytes()
    assert "\u202e" not in recv_err and "\x1b" not in recv_err
    assert printable(name) in recv_err and "[link=https:evil.example]b[bold].bin" in recv_err


def _hostile_summary(flows: int, repeats: int) -> "pd.DataFrame":
    import pandas as pd

    rows = []
    for part in ("p\x1b[2J[/x]", "q"):
        for flavor in ("reno", HOSTILE):
            for repeat in range(repeats):
                for f in range(flows):
                    rows.append({"run_id": f"{part}_{flavor}_r{repeat}", "part": part, "point": 0,
                                 "repeat": repeat, "sweep.x": f"v\x07{flavor}", "flow": f,
                                 "name": f"n\x1b]0;t\x07{f}", "flavor": flavor,
                                 "goodput_mean_bps": 1e6 * (f + 1 + repeat),
                                 "retransmission_rate": 0.01, "jain_index": 0.9})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("flows, repeats", [(2, 1), (2, 3), (12, 1)])
def test_every_summary_layout_shows_hostile_text_as_text(flows, repeats):
    """Per flow, mean ± CI over repeats, one row per run (many flows); a table per part."""
    import io

    from ccarena.report.terminal import terminal_table
    from rich.console import Console

    out = io.StringIO()
    table = terminal_table(_hostile_summary(flows, repeats), ["sweep.x"], "t\x1b]0;x\x07",
                           width=None)
    Console(file=out, width=2000, color_system=None).print(table)
    text = out.getvalue()
    assert_clean(text)
    assert "t\\x1b]0;x\\x07" in text and "p\\x1b[2J[/x]" in text
    assert printable(HOSTILE) in text
