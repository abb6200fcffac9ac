"""The front end's architecture, checked: the import contracts in pyproject.toml (layers from the
CLI down the data flow, backends that see only the run spec, no circles) hold for the installed
source, and the package tree shows the data flow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import ccarena
import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ccarena.__file__).parent


def test_import_contracts_hold() -> None:
    # lint-imports reads the package from sys.path: point it at the source tree under test.
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                               "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
                               "no_logo=True))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "3 kept, 0 broken" in report, report


def test_the_tree_shows_the_data_flow() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert {"scenario", "experiment", "backends", "executor", "store", "analysis", "report",
            "topology"} <= packages
    assert (PACKAGE / "runspec.py").is_file()
    assert {p.stem for p in (PACKAGE / "backends").iterdir()} >= {"sim", "kernel"}


# --- The crates' module graphs: no circle inside any crate (issue 30 item 6) -----------------
#
# A module is a file under a crate's src/ (`lib.rs` is `crate`, `a.rs` and `a/mod.rs` are
# `crate::a`, `a/b.rs` is `crate::a::b`); an edge M → N is a reference in M's code to an item of N:
# a `use` of `crate::…`, `super::…`, `self::…` or of a child module, or such a path written
# inline. A `pub use` re-export is the crate's facade, not a dependency of the module holding
# it: a path through it is followed to the module it names (`crate::Foo` → the module defining
# `Foo`). `#[cfg(test)]` modules (blocks and files) are left out: a test module importing its
# parent is not a circle. Inline `mod x { … }` blocks count as their file's module.

CRATES = ROOT / "crates"

_CFG_TEST = re.compile(r"#\[cfg\((?:all\()?test\b[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?"
                       r"mod\s+(\w+)\s*([{;])")
_INLINE_MOD = re.compile(r"(?<![\w:])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")
_USE = re.compile(r"(?<![\w:$])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
_INLINE_PATH = re.compile(r"(?<![\w:])\$?((?:crate|super|self)(?:::\w+)+)")
_CHILD_PATH = re.compile(r"(?<![\w:$])(\w+)::\w")


def _strip_comments_and_strings(text: str) -> str:
    """`text` (Rust source) with comments removed and string and char literals emptied, so a
    path written in a doc comment or a message is not taken for a reference."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (raw := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not text[i - 1].isalnum()):
            end = text.find('"' + raw.group(1), i + raw.end())
            out.append('""')
            i = n if end < 0 else end + 1 + len(raw.group(1))
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and (char := re.match(r"'(?:\\(?:x\w\w|u\{\w+\}|.)|[^\\'])'", text[i:])):
            out.append("' '")
            i += char.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _block_end(text: str, open_brace: int) -> int:
    """The index just past the `}` closing the `{` at `open_brace`."""
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError("unbalanced braces")


def _expand_use_tree(tree: str) -> list[tuple[str, str]]:
    """The leaves of a use tree as (path, bound name): `crate::{a, b::{C, D as E}}` gives
    [("crate::a", "a"), ("crate::b::C", "C"), ("crate::b::D", "E")]."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", tree.strip())
    brace = tree.find("{")
    if brace < 0:
        path, _, alias = tree.partition(" as ")
        path = path.strip().removesuffix("::self")
        return [(path, alias.strip() or path.rsplit("::", 1)[-1])]
    prefix, inner = tree[:brace], tree[brace + 1:_block_end(tree, brace) - 1]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [leaf for part in parts if part.strip() for leaf in _expand_use_tree(prefix + part)]


def _crate_modules(src: Path) -> dict[str, str]:
    """Each module of the crate at `src` (its path, `crate::…`) and its source without comments,
    strings and `#[cfg(test)]` modules."""
    texts = {}
    for file in sorted(src.rglob("*.rs")):
        parts = list(file.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("lib", "mod"):
            parts.pop()
        texts["::".join(["crate", *parts])] = _strip_comments_and_strings(file.read_text())
    test_only = set()
    for module, text in texts.items():
        while match := _CFG_TEST.search(text):
            if match.group(2) == ";":
                test_only.add(f"{module}::{match.group(1)}")
                text = text[:match.start()] + text[match.end():]
            else:
                text = text[:match.start()] + text[_block_end(text, match.end() - 1):]
        texts[module] = text
    return {m: t for m, t in texts.items() if not any(m == t or m.startswith(t + "::") for t in test_only)}


def _scopes(module: str, text: str) -> list[tuple[str, str]]:
    """`text` split into (scope, code) pairs: the file's own code and each inline `mod x { … }`
    block's, so that `super::` and `self::` inside a block resolve from the block."""
    match = _INLINE_MOD.search(text)
    if not match:
        return [(module, text)]
    end = _block_end(text, match.end() - 1)
    inner = text[match.end():end - 1]
    return _scopes(f"{module}::{match.group(1)}", inner) + _scopes(module, text[:match.start()] + text[end:])


def _absolute(scope: str, path: str, modules: set[str]) -> str | None:
    """`path` as written in `scope`, made absolute (`crate::…`); None for another crate's."""
    head, _, rest = path.partition("::")
    if head == "crate":
        return path
    if head in ("self", "super"):
        base = scope
        while head == "super":
            base = base.rsplit("::", 1)[0]
            head, _, rest = rest.partition("::")
            if head not in ("self", "super"):
                rest = f"{head}::{rest}" if rest else head
                break
        return f"{base}::{rest}" if rest and rest != "self" else base
    if f"{scope}::{head}" in modules:
        return f"{scope}::{path}"
    return None


def rust_module_graph(src: Path) -> nx.DiGraph:
    """The module graph of the crate whose sources are under `src` (rules above); each edge's
    `via` is one path that makes it."""
    modules = _crate_modules(src)
    names = set(modules)
    reexports: dict[tuple[str, str], str] = {}
    references: list[tuple[str, str]] = []
    for module, text in modules.items():
        for scope, code in _scopes(module, text):
            for use in _USE.finditer(code):
                for path, bound in _expand_use_tree(use.group(2)):
                    if (target := _absolute(scope, path, names)) is None:
                        continue
                    if use.group(1) and scope == module:
                        reexports[(module, bound)] = target
                    else:
                        references.append((module, target))
            code = _USE.sub(" ", code)
            for path in _INLINE_PATH.findall(code):
                if (target := _absolute(scope, path, names)) is not None:
                    references.append((module, target))
            for head in _CHILD_PATH.findall(code):
                if f"{scope}::{head}" in names:
                    references.append((module, f"{scope}::{head}"))

    def resolve(path: str, hops: int = 0) -> str:
        segments = path.removesuffix("::*").split("::")
        module = segments[0]
        for i, segment in enumerate(segments[1:], start=1):
            if f"{module}::{segment}" in names:
                module = f"{module}::{segment}"
            elif (module, segment) in reexports and hops < 16:
                return resolve("::".join([reexports[(module, segment)], *segments[i + 1:]]), hops + 1)
            else:
                break
        return module

    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    for module, path in references:
        if (target := resolve(path)) != module:
            graph.add_edge(module, target, via=path)
    return graph


def module_circles(graph: nx.DiGraph) -> list[tuple[list[str], list[tuple[str, str, str]]]]:
    """Each strongly connected group of modules (a set of modules that reach one another), as its
    sorted members and one circle through it, given by its edges (from, to, via)."""
    circles = []
    for group in nx.strongly_connected_components(graph):
        if len(group) > 1:
            cycle = nx.find_cycle(graph.subgraph(group))
            circles.append((sorted(group), [(a, b, graph.edges[a, b]["via"]) for a, b in cycle]))
    return sorted(circles)


def _crate_sources() -> list[Path]:
    # Every crate under crates/ with its sources; crates/udp/fuzz is a cargo-fuzz harness outside
    # the workspace, one level deeper, so the pattern leaves it out.
    return sorted(manifest.parent / "src" for manifest in CRATES.glob("*/Cargo.toml"))


def test_no_module_circle_inside_any_crate() -> None:
    sources = _crate_sources()
    assert {src.parent.name for src in sources} >= {"cc", "transport", "link", "sim", "relay", "udp", "py"}
    found = {src.parent.name: module_circles(rust_module_graph(src)) for src in sources}
    report = "\n".join(f"crates/{name}: " + " → ".join(f"{a} ({via})" for a, _, via in circle)
                       + f" → {circle[0][0]}; the group: {', '.join(group)}"
                       for name, circles in found.items() for group, circle in circles)
    assert not report, "module circles:\n" + report


def test_the_module_graph_sees_a_circle(tmp_path: Path) -> None:
    # The finder on a tiny crate, so the test above cannot pass by seeing no edges: `a` uses `b`
    # through a multi-line grouped import, `b` reaches `a::inner` by `super::` through the root's
    # re-export, and `c`'s test module importing its parent is no edge.
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "lib.rs").write_text("//! `crate::c` in a comment is no edge.\nmod a;\nmod b;\nmod c;\n"
                                "pub use a::inner::Thing;\n")
    (src / "a" / "mod.rs").write_text("pub mod inner;\nuse crate::{\n    b::{self,\n        Other as O},\n};\n")
    (src / "a" / "inner.rs").write_text("pub struct Thing;\nfn f() { let s = \"crate::c::X\"; }\n")
    (src / "b.rs").write_text("pub struct Other;\nfn g() -> super::Thing { super::Thing }\n")
    (src / "c.rs").write_text("use crate::b::Other;\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
                              "    use crate::a::inner::Thing;\n}\n")
    graph = rust_module_graph(src)
    assert set(graph.edges) == {("crate::a", "crate::b"), ("crate::b", "crate::a::inner"),
                                ("crate::c", "crate::b")}
    (src / "a" / "inner.rs").write_text("pub struct Thing;\nfn f() { crate::c::h(); }\n")
    circles = module_circles(rust_module_graph(src))
    assert [group for group, _ in circles] == [["crate::a::inner", "crate::b", "crate::c"]]
    assert sorted((a, b) for a, b, _ in circles[0][1]) == [("crate::a::inner", "crate::c"), ("crate::b", "crate::a::inner"),
                                                        ("crate::c", "crate::b")]


def test_no_two_front_end_modules_share_a_file_name() -> None:
    # A module's file name says its job (issue 30): `report/calibration.py` beside
    # `analysis/calibration.py` made every reader open both. Each backend's `backend.py` is the
    # same job in each backend's package, so it may repeat.
    allowed = {"__init__.py", "__main__.py", "backend.py"}
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if "__pycache__" not in path.parts:
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1 and name not in allowed}
    assert not shared, shared


def unlisted_rust_tests(crate: Path) -> list[str]:
    """The integration-test files of ``crate`` that its one test binary, ``tests/all.rs``, does not
    declare as modules (``mod name;``), or every file when a crate with more than one has no
    ``tests/all.rs``: each crate links its integration tests once (Cargo.toml's ``autotests =
    false``, ``[[test]] all``), so a file left out of ``all.rs`` would never be built or run."""
    tests = crate / "tests"
    if not tests.is_dir():
        return []
    modules = sorted(p.stem for p in tests.iterdir()
                     if (p.suffix == ".rs" and p.name != "all.rs") or (p / "mod.rs").is_file())
    root = tests / "all.rs"
    if not root.is_file():
        return modules if len(modules) > 1 else []
    declared = set(re.findall(r"^mod (\w+);$", root.read_text(), flags=re.M))
    return [m for m in modules if m not in declared]


def test_every_rust_integration_test_file_is_in_its_crates_one_binary(tmp_path: Path) -> None:
    crates = sorted(manifest.parent for manifest in CRATES.glob("*/Cargo.toml"))
    with_all = [c.name for c in crates if (c / "tests" / "all.rs").is_file()]
    assert {"sim", "transport", "udp", "relay"} <= set(with_all)
    for name in with_all:
        manifest = (CRATES / name / "Cargo.toml").read_text()
        assert "autotests = false" in manifest and 'path = "tests/all.rs"' in manifest, name
    assert {c.name: unlisted_rust_tests(c) for c in crates if unlisted_rust_tests(c)} == {}
    # The check on a crate that left a file and a shared directory out, and on one with two
    # files and no all.rs, so the assertion above cannot pass by seeing nothing.
    (tmp_path / "a" / "tests" / "common").mkdir(parents=True)
    (tmp_path / "a" / "tests" / "common" / "mod.rs").write_text("")
    for name in ("all.rs", "one.rs", "two.rs"):
        (tmp_path / "a" / "tests" / name).write_text("mod one;\n" if name == "all.rs" else "")
    assert unlisted_rust_tests(tmp_path / "a") == ["common", "two"]
    (tmp_path / "b" / "tests").mkdir(parents=True)
    for name in ("one.rs", "two.rs"):
        (tmp_path / "b" / "tests" / name).write_text("")
    assert unlisted_rust_tests(tmp_path / "b") == ["one", "two"]
