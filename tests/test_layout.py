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


# The floors inside the bot, lowest first: a module may import its own floor and those below,
# never one above, so the configuration never needs a game and a game never needs a feature.
BOT_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"lichess"}),
    frozenset({"ops"}),
    frozenset({"engines", "challenges", "tournaments"}),
    frozenset({"game"}),
    frozenset({"features"}),
    frozenset({"watch"}),
    frozenset({"app", "cli", "demo", "__main__"}),
)


def floor_of(part: str) -> int:
    """The floor of a part of the bot (a sub-package or a top-level module)."""
    for floor, parts in enumerate(BOT_FLOORS):
        if part in parts:
            return floor
    raise AssertionError(f"bot/{part} is on no floor: place it in BOT_FLOORS")


def bot_parts_imported(path: Path) -> set[str]:
    """The parts of the bot a module imports (`bot.game.x` -> "game"), anywhere in its code:
    inside functions and `if TYPE_CHECKING:` blocks too, since ast.walk visits every node."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # a relative import, resolved against the module's package
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [base] if base != "bot" else [f"bot.{alias.name}" for alias in node.names]
        found.update(name.split(".")[1] for name in names
                     if name.startswith("bot.") and len(name.split(".")) > 1)
    return found


def part_of(path: Path) -> str:
    relative = path.relative_to(ROOT / "bot")
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_every_part_of_the_bot_has_a_floor() -> None:
    parts = {part_of(path) for path in (ROOT / "bot").rglob("*.py")} - {"__init__"}
    assert all(floor_of(part) >= 0 for part in parts)


def test_the_bot_never_imports_upwards() -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports bot.{above}"
        for path in (ROOT / "bot").rglob("*.py")
        if part_of(path) != "__init__"
        for above in bot_parts_imported(path)
        if floor_of(above) > floor_of(part_of(path))
    }
    assert not offenders, sorted(offenders)
