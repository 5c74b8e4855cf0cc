"""The tree shows the architecture, and these rules keep it so.

Between the packages: the sandbox and the bot never import each other, except where the command
line and the demo wire them together; the engine imports neither; none of the three imports
the tools. Inside each of bot/, engine/ and sandbox/: floors, and no import runs upwards.
Inside tools/: each family (bench, match, nnue, texel) imports only itself, the shared
library tools/common/ and the packages it is declared to use.

Each rule is a function of a tree's root, so a test can plant a violation in a small tree of
its own and see the rule catch it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = frozenset({"bot", "engine", "sandbox", "tools"})
WIRING = ("bot/cli.py", "bot/demo.py")  # the two bot modules that start a sandbox

# What each package must never import (the tools measure and train the others, never the reverse).
FORBIDDEN: dict[str, frozenset[str]] = {
    "sandbox": frozenset({"bot", "engine", "tools"}),
    "engine": frozenset({"bot", "sandbox", "tools"}),
    "bot": frozenset({"sandbox", "engine", "tools"}),
}

# The floors inside each package, lowest first: a module may import its own floor and those
# below, never one above. A module on no floor fails test_every_part_has_a_floor, which names
# the table to place it in.
BOT_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"lichess"}),
    frozenset({"ops"}),
    frozenset({"engines", "challenges", "tournaments"}),
    frozenset({"game"}),
    frozenset({"features"}),
    frozenset({"watch"}),
    frozenset({"app", "cli", "demo", "__main__"}),
)
ENGINE_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"constants", "params", "jit", "zobrist"}),  # definitions every floor reads
    frozenset({"pieceset", "psqt", "variant", "movegen", "board", "perft", "pvline"}),  # the board
    frozenset({"evaluate", "nnue", "evalcache"}),  # the evaluations
    frozenset({"movepick", "tt", "timeman"}),  # what the search consults
    # the search, its threads and per-thread tables, its history updates, what it reports,
    # and the limited strength that picks among its root lines
    frozenset({"search", "threads", "history", "info", "strength"}),
    frozenset({"bench", "uci"}),  # the ways in: the bench and the UCI loop
    frozenset({"host", "launcher", "__main__"}),  # the engine host and the process
)
SANDBOX_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "clock", "timecontrol", "timers", "streams", "arena_pause"}),
    frozenset({"accounts", "playban", "ratelimit", "faults", "strength", "opponent",
               "farming"}),  # players, limits, ratings
    frozenset({"games", "challenges", "pgn", "views"}),  # one game, one challenge, their JSON
    frozenset({"lobby"}),
    frozenset({"tournaments", "routes", "online", "tournament_routes"}),  # arenas and the routes
    frozenset({"server"}),
    frozenset({"cli", "__main__"}),
)
FLOORS: dict[str, tuple[frozenset[str], ...]] = {
    "bot": BOT_FLOORS, "engine": ENGINE_FLOORS, "sandbox": SANDBOX_FLOORS,
}

# The tools: the shared library, and what each family may import besides itself and the library.
TOOLS_LIBRARY = "common"
TOOLS_FAMILIES: dict[str, frozenset[str]] = {
    TOOLS_LIBRARY: frozenset({"engine"}),
    "bench": frozenset({"engine", "bot", "sandbox"}),  # the benches run the bot on the sandbox
    "match": frozenset({"engine"}),
    "nnue": frozenset({"engine"}),
    "texel": frozenset({"engine"}),
    "strength": frozenset({"engine"}),
    "container": frozenset(),  # runs inside the image, against the installed bot's processes
}
# A family's declared use of another family's modules: each one is a debt, to be paid by moving
# what they share into the library. None is owed.
TOOLS_FAMILY_USES: dict[str, frozenset[str]] = {}


def imported_names(path: Path, root: Path) -> set[str]:
    """The dotted names a module imports, anywhere in its code (inside functions and
    `if TYPE_CHECKING:` blocks too, since ast.walk visits every node), relative imports resolved
    against the module's package, `from pkg import mod` counted as `pkg.mod`."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def imported_packages(path: Path, root: Path) -> set[str]:
    """The project's top-level packages a module imports."""
    return {name.split(".")[0] for name in imported_names(path, root)} & PROJECT_PACKAGES


def parts_imported(path: Path, root: Path, package: str) -> set[str]:
    """The parts of `package` a module imports (`bot.game.x` -> "game"); a `from bot import x`
    of a name that is no part (a function of bot/__init__.py) is not counted."""
    return {
        name.split(".")[1] for name in imported_names(path, root)
        if name.startswith(f"{package}.")
        and ((root / package / name.split(".")[1]).is_dir()
             or (root / package / f"{name.split('.')[1]}.py").is_file())
    }


def part_of(path: Path, root: Path, package: str) -> str:
    """A module's part of its package: its sub-package, or its own name at the top."""
    relative = path.relative_to(root / package)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def modules(root: Path, package: str) -> list[Path]:
    """The package's modules but its own __init__.py (the package's face, not a floor)."""
    return sorted(path for path in (root / package).rglob("*.py")
                  if path != root / package / "__init__.py")


def floor_of(package: str, part: str, floors: tuple[frozenset[str], ...]) -> int:
    for floor, parts in enumerate(floors):
        if part in parts:
            return floor
    raise AssertionError(
        f"{package}/{part} is on no floor: place it in {package.upper()}_FLOORS in "
        "tests/test_layout.py, on the lowest floor above everything it imports")


def crossings(root: Path, package: str, forbidden: frozenset[str],
              wiring: tuple[str, ...] = ()) -> list[str]:
    """Each import of a forbidden package from `package`, outside the wiring modules."""
    return sorted(
        f"{path.relative_to(root)} imports {other}"
        for path in modules(root, package)
        if str(path.relative_to(root)) not in wiring
        for other in imported_packages(path, root) & forbidden
    )


def upward_imports(root: Path, package: str, floors: tuple[frozenset[str], ...]) -> list[str]:
    """Each import from a module to a part of its package on a higher floor; every module must
    be on a floor, whether it imports anything or not."""
    offenders: list[str] = []
    for path in modules(root, package):
        floor = floor_of(package, part_of(path, root, package), floors)
        offenders += [f"{path.relative_to(root)} imports {package}.{above}"
                      for above in parts_imported(path, root, package)
                      if floor_of(package, above, floors) > floor]
    return sorted(offenders)


def tools_crossings(root: Path, families: Mapping[str, frozenset[str]] = TOOLS_FAMILIES,
                    library: str = TOOLS_LIBRARY,
                    uses: Mapping[str, frozenset[str]] = TOOLS_FAMILY_USES) -> list[str]:
    """Each import from a tools family to another family, or to a package it is not declared
    to use; the library imports no family."""
    offenders: list[str] = []
    for path in modules(root, "tools"):
        family = part_of(path, root, "tools")
        if family not in families:
            raise AssertionError(f"tools/{family} is not declared: place it in TOOLS_FAMILIES "
                                 "in tests/test_layout.py with the packages it may import")
        may_use = {family, library} | uses.get(family, frozenset()) if family != library \
            else {library}
        shown = str(path.relative_to(root))
        offenders += [f"{shown} imports tools.{other}"
                      for other in parts_imported(path, root, "tools") - may_use]
        offenders += [f"{shown} imports {other}"
                      for other in imported_packages(path, root) - families[family] - {"tools"}]
    return sorted(offenders)


def plant(root: Path, modules_text: dict[str, str]) -> Path:
    """A small tree under `root`: each relative path holds its text; every folder is a package."""
    for relative, text in modules_text.items():
        path = root / relative
        for folder in reversed(path.relative_to(root).parents):
            if folder != Path("."):
                (root / folder).mkdir(exist_ok=True)
                (root / folder / "__init__.py").touch()
        path.write_text(text)
    return root


# -- the packages keep to their side --


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_keep_to_their_side(package: str) -> None:
    assert not crossings(ROOT, package, FORBIDDEN[package], WIRING)


def test_the_wiring_is_where_the_readme_says() -> None:
    assert all("sandbox" in imported_packages(ROOT / path, ROOT) for path in WIRING)


@pytest.mark.parametrize(("package", "planted"), [
    ("engine", "import tools.match.match"),
    ("sandbox", "from tools.common import engines"),
    ("bot", "from tools.bench.bot import quotas"),
    ("engine", "from bot.app import run_bot"),
    ("bot", "import engine.search"),
])
def test_a_planted_crossing_is_caught(tmp_path: Path, package: str, planted: str) -> None:
    root = plant(tmp_path, {f"{package}/inner/module.py": f"def f() -> None:\n    {planted}\n"})
    caught = crossings(root, package, FORBIDDEN[package])
    assert caught == [f"{package}/inner/module.py imports {planted.split()[1].split('.')[0]}"]


# -- the floors inside bot/, engine/ and sandbox/ --


def test_no_module_left_in_the_flat_bot_folder() -> None:
    top = sorted(path.name for path in (ROOT / "bot").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "app.py", "cli.py", "demo.py"]


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_every_part_has_a_floor(package: str) -> None:
    parts = {part_of(path, ROOT, package) for path in modules(ROOT, package)}
    assert all(floor_of(package, part, FLOORS[package]) >= 0 for part in parts)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_no_import_runs_upwards(package: str) -> None:
    offenders = upward_imports(ROOT, package, FLOORS[package])
    assert not offenders, offenders


@pytest.mark.parametrize(("package", "low", "planted", "high"), [
    ("bot", "lichess/client.py", "from bot.game import turn", "game/turn.py"),
    ("bot", "ops/config.py", "from ..watch import server", "watch/server.py"),
    ("engine", "board.py", "from engine.search import Searcher", "search.py"),
    ("engine", "evaluate.py", "from engine import uci", "uci.py"),
    ("engine", "search.py", "from .host import main", "host.py"),
    ("sandbox", "errors.py", "from sandbox.server import SandboxServer", "server.py"),
    ("sandbox", "games.py", "from sandbox import lobby", "lobby.py"),
])
def test_a_planted_upward_import_is_caught(tmp_path: Path, package: str, low: str,
                                           planted: str, high: str) -> None:
    root = plant(tmp_path, {f"{package}/{low}": f"def f() -> None:\n    {planted}\n",
                            f"{package}/{high}": ""})
    above = Path(high).parts[0].removesuffix(".py")
    assert upward_imports(root, package, FLOORS[package]) == [
        f"{package}/{low} imports {package}.{above}"]


def test_an_import_on_the_same_floor_or_below_passes(tmp_path: Path) -> None:
    root = plant(tmp_path, {"engine/search.py": "from engine import threads, board\n",
                            "engine/threads.py": "", "engine/board.py": ""})
    assert upward_imports(root, "engine", ENGINE_FLOORS) == []


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_a_module_on_no_floor_names_where_to_place_it(tmp_path: Path, package: str) -> None:
    root = plant(tmp_path, {f"{package}/newcomer.py": ""})
    with pytest.raises(AssertionError, match=f"{package}/newcomer is on no floor: "
                                              f"place it in {package.upper()}_FLOORS"):
        upward_imports(root, package, FLOORS[package])


# -- the tools: families and their shared library --


def test_the_tools_families_import_only_the_library_and_what_they_declare() -> None:
    offenders = tools_crossings(ROOT)
    assert not offenders, offenders


@pytest.mark.parametrize(("module", "planted", "caught"), [
    ("tools/texel/data.py", "from tools.nnue import data", "tools.nnue"),
    ("tools/nnue/data.py", "from tools.match.match import main", "tools.match"),
    ("tools/bench/uci_speed.py", "import tools.match.match", "tools.match"),
    ("tools/common/engines.py", "from tools.match import sprt_pool", "tools.match"),
    ("tools/strength/calibrate.py", "from tools.match.match import run_match", "tools.match"),
    ("tools/nnue/train.py", "from bot.app import run_bot", "bot"),
    ("tools/common/selfplay.py", "import sandbox.server", "sandbox"),
])
def test_a_planted_tools_crossing_is_caught(tmp_path: Path, module: str, planted: str,
                                            caught: str) -> None:
    targets = {"tools/match/match.py": "", "tools/match/sprt_pool.py": "", "tools/nnue/data.py": ""}
    root = plant(tmp_path, targets | {module: f"def f() -> None:\n    {planted}\n"})
    assert tools_crossings(root) == [f"{module} imports {caught}"]


def test_a_family_may_import_itself_the_library_and_the_engine(tmp_path: Path) -> None:
    root = plant(tmp_path, {
        "tools/nnue/train.py": "from tools.nnue import data\nfrom tools.common import selfplay\n"
                               "from engine import nnue\n",
        "tools/nnue/data.py": "", "tools/common/selfplay.py": "from engine import search\n",
    })
    assert tools_crossings(root) == []


def test_an_undeclared_tools_family_names_where_to_declare_it(tmp_path: Path) -> None:
    root = plant(tmp_path, {"tools/newcomer/run.py": ""})
    with pytest.raises(AssertionError, match="tools/newcomer is not declared"):
        tools_crossings(root)
