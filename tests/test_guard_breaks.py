"""The catalog of guard breaks (scripts/guard_breaks.py) fits the code: each break applies, its tests exist."""

import ast
import pathlib
import re

import guard_breaks
import pytest

pytestmark = pytest.mark.unit

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _tests_in(path):
    """The node ids (without parameters) a test module defines: test_x, and Class::test_x."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found |= {f"{node.name}::{item.name}" for item in node.body
                      if isinstance(item, ast.FunctionDef) and item.name.startswith("test")}
    return found


def test_every_break_applies_once_to_the_code_as_it_is():
    problems = [problem for brk in guard_breaks.BREAKS for problem in guard_breaks.problems(brk, ROOT)]
    assert problems == [], "\n".join(problems)


def test_ids_are_unique_and_each_names_a_doc_and_its_tests():
    ids = [brk.id for brk in guard_breaks.BREAKS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids), ids
    for brk in guard_breaks.BREAKS:
        assert (ROOT / brk.doc).is_file() and brk.doc.startswith("docs/"), brk
        assert brk.promise.strip() and brk.tests and isinstance(brk.tests, tuple), brk


def test_every_named_test_exists():
    missing = []
    for brk in guard_breaks.BREAKS:
        for node in brk.tests:
            module, _, name = node.partition("::")
            path = ROOT / module
            if not (module.startswith("tests/test_") and path.is_file() and name
                    and name.split("[")[0] in _tests_in(path)):
                missing.append(f"{brk.id}: {node}")
    assert missing == [], missing


def test_a_find_text_that_moved_or_repeats_is_refused_loudly(tmp_path):
    """The script's own check, which stops a run before any copy is made: text gone, found twice, or a break
    that does not compile (its tests would fail for that alone)."""
    (tmp_path / "m.py").write_text("a = 1\nb = 1\n")
    gone = guard_breaks.Break("x", "m.py", "c = 1", "c = 2", "p", "docs/safety.md", ("tests/test_x.py::test_y",))
    twice = guard_breaks.Break("y", "m.py", " = 1", " = 2", "p", "docs/safety.md", ("tests/test_x.py::test_y",))
    assert "occurs 0 times" in " ".join(guard_breaks.problems(gone, tmp_path))
    assert "occurs 2 times" in " ".join(guard_breaks.problems(twice, tmp_path))
    broken = guard_breaks.Break("w", "m.py", "b = 1", "b = (", "p", "docs/safety.md", ("tests/test_x.py::test_y",))
    assert "does not compile" in " ".join(guard_breaks.problems(broken, tmp_path))
    with pytest.raises(guard_breaks.CatalogError, match="occurs 2 times"):
        guard_breaks.apply(twice, tmp_path)
    once = guard_breaks.Break("z", "m.py", "b = 1", "b = 2", "p", "docs/safety.md", ("tests/test_x.py::test_y",))
    before = guard_breaks.apply(once, tmp_path)
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 2\n"
    guard_breaks.restore(once, tmp_path, before)
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 1\n"
