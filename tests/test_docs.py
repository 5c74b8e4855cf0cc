"""The manual's links stay true: every `[text](#anchor)` names a heading of its own file, every
relative link names a file that exists (and the heading it names there), every row of a table
has its header's cells, every `README "Section"` that config.yml points to is a heading of the
README, the example chat line is the bot's, and every log line Troubleshooting quotes is one the
bot can write."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import chess
import chess.engine
import pytest

from bot.engines.searchline import SearchLine
from bot.game.chat import kibitz_line

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
README_SECTION = re.compile(r'README "([^"]+)"')
CELL_BAR = re.compile(r"(?<!\\)\|")  # GitHub splits cells at every bar not escaped, even in code


def slug(heading: str) -> str:
    """The anchor a heading gets on GitHub: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def headings(text: str) -> list[str]:
    return HEADING.findall(FENCE.sub("", text))


def broken_links(path: Path) -> list[str]:
    """Each link of a Markdown file that leads nowhere."""
    text = path.read_text()
    anchors = {slug(heading) for heading in headings(text)}
    broken = []
    for target in LINK.findall(FENCE.sub("", text)):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part) if file_part else path
        if file_part and not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in {
                slug(h) for h in headings(linked.read_text())} | (anchors if not file_part
                                                                   else set()):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_link_leads_somewhere(path: Path) -> None:
    assert not broken_links(path)


def ragged_table_rows(text: str) -> list[str]:
    """The start of each table row whose cells are not as many as its header's: GitHub drops
    the cells past the header's and shows a missing one blank, so a row short of its link
    column loses the link without a word."""
    ragged = []
    width: int | None = None
    for line in FENCE.sub("", text).splitlines():
        row = line.strip()
        if not row.startswith("|"):
            width = None
            continue
        cells = len(CELL_BAR.split(row.removeprefix("|").removesuffix("|")))
        if width is None:
            width = cells
        elif cells != width:
            ragged.append(row[:60])
    return ragged


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_table_row_has_its_header_s_cells(path: Path) -> None:
    assert not ragged_table_rows(path.read_text())


def test_a_ragged_table_row_is_caught() -> None:
    table = ("| change | verdict | section |\n| --- | --- | --- |\n| a | b | [c](#c) |\n"
             "| `x\\|y` | kept | |\n| d | landed, no link |\n\n| one |\n| --- |\n| e |\n")
    assert ragged_table_rows(table) == ["| d | landed, no link |"]


def test_config_points_to_sections_the_readme_has() -> None:
    sections = set(headings((ROOT / "README.md").read_text()))
    named = README_SECTION.findall((ROOT / "config.yml").read_text())
    assert named and not sorted(set(named) - sections)


def test_the_readme_s_chat_line_is_the_one_the_bot_writes() -> None:
    """The example after "a line like this one": a Ruy Lopez position and a 15-move PV."""
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"a line like this one.*?^```\n(.*?)\n```", readme, re.MULTILINE | re.DOTALL)
    assert shown is not None
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    ruy_lopez = ("f1b5 g8f6 e1g1 f6e4 f1e1 e4d6 f3e5 f8e7 b5f1 c6e5 e1e5 e8g8 d2d4 e7f6 "
                 "e5e1")
    pv = [chess.Move.from_uci(uci) for uci in ruy_lopez.split(" ")]
    info: chess.engine.InfoDict = {"depth": 14, "seldepth": 21, "nodes": 1_500_000, "time": 1.25,
                                   "score": chess.engine.PovScore(chess.engine.Cp(34), chess.WHITE),
                                   "pv": pv}
    assert shown.group(1) == kibitz_line(board, SearchLine.from_info(info))


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n## The part\n\nSee [it](#the-part), [gone](#no-part), "
                    "[other](other.md) and [far](other.md#x).\n\n```\n## not a heading\n```\n")
    (tmp_path / "other.md").write_text("# Other\n\n## X\n")
    assert broken_links(page) == ["#no-part: no such heading"]
    page.write_text("[a](missing.md) [b](#not-a-heading)\n```\n## not a heading\n```\n")
    assert broken_links(page) == ["missing.md: no such file", "#not-a-heading: no such heading"]


LOG_LINE = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +[\w.]+: (.*)$")
PRINTF = re.compile(r"%(?:\.\d+)?[sdrf]")
MIN_LITERAL_CHARS = 8  # a format of placeholders alone ("%s") would explain any line


def message_formats(root: Path) -> list[re.Pattern[str]]:
    """Every string of the bot's code as a pattern: f-string fields and printf placeholders
    match anything (a logged exception's text is itself one of these strings)."""
    patterns = []
    for path in sorted((root / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                pieces = PRINTF.split(node.value)
            elif isinstance(node, ast.JoinedStr):
                pieces = [""]
                for value in node.values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        pieces[-1] += value.value
                    else:
                        pieces.append("")
            else:
                continue
            if sum(len(piece) for piece in pieces) >= MIN_LITERAL_CHARS:
                patterns.append(re.compile("(.*)".join(re.escape(p) for p in pieces), re.DOTALL))
    return patterns


def unexplained_log_lines(readme: str, formats: list[re.Pattern[str]]) -> list[str]:
    """The log lines the README's Troubleshooting shows that no string of the bot can write."""
    section = readme[readme.index("## Troubleshooting"):]
    section = section[:section.index("\n## ", 1)]
    shown = [line.strip() for block in re.findall(r"^ *```\n(.*?)^ *```", section,
                                                     re.MULTILINE | re.DOTALL)
             for line in block.splitlines()]
    messages = [match.group(1) for line in shown if (match := LOG_LINE.match(line))]
    assert len(messages) == len(shown), "a Troubleshooting block holds a line that is no log line"
    return [message for message in messages
            if not any(pattern.fullmatch(message) for pattern in formats)]


def test_the_troubleshooting_log_lines_are_ones_the_bot_writes() -> None:
    readme = (ROOT / "README.md").read_text()
    unexplained = unexplained_log_lines(readme, message_formats(ROOT))
    assert not unexplained, unexplained


def test_a_log_line_the_bot_cannot_write_is_caught() -> None:
    formats = message_formats(ROOT)
    readme = ("## Troubleshooting\n\n```\nINFO  app: event stream reopened (attempt 3)\n"
              "CRITICAL app: the token has gone fishing\n```\n\n## Next\n")
    assert unexplained_log_lines(readme, formats) == ["the token has gone fishing"]
