"""The tree shows the architecture: the sandbox and the bot never import each other, except
where the command line and the demo wire them together; the engine imports neither."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIRING = {ROOT / "bot" / "cli.py", ROOT / "bot" / "demo.py"}


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize(("package", "forbidden"), [
    ("sandbox", {"bot", "engine"}),
    ("engine", {"bot", "sandbox"}),
    ("bot", {"sandbox", "engine"}),
])
def test_packages_keep_to_their_side(package: str, forbidden: set[str]) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & forbidden)
        for path in (ROOT / package).rglob("*.py")
        if path not in WIRING and imported_packages(path) & forbidden
    }
    assert not offenders


def test_the_wiring_is_where_the_readme_says() -> None:
    assert all("sandbox" in imported_packages(path) for path in WIRING)


def test_no_module_left_in_the_flat_bot_folder() -> None:
    top = sorted(path.name for path in (ROOT / "bot").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "app.py", "cli.py", "demo.py"]
