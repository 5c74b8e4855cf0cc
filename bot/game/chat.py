"""Chat text: the kibitz line (depth, score, nodes/s, PV in SAN) and the outgoing sanitizer.

Lichess takes at most 140 characters and silently drops a bot's message with a link, so
every line we send goes through `sanitize` and the PV is cut between moves, never inside one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Final

import chess
import chess.engine

from bot.engines.searchline import pv_san, score_text

MAX_CHAT_CHARS: Final = 140

# Links in any of their usual shapes: scheme, www., or a bare domain with a common TLD.
_LINK = re.compile(
    r"(?i)(?:\b[a-z][a-z0-9+.-]*://\S*|\bwww\.\S*"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|tv|gg|me|ly|co|be|to|xyz|ru|de|uk|fr|info|link"
    r"|app|dev|page|site|club|live)\b\S*)"
)


# lila lowers a chat line whose first 80 characters hold more capitals than small letters
# (lila.common.String isShouting, castling words aside): "PV Nf3 Nf6 Bb5 Bb4 ..." would read
# "pv nf3 nf6 bb5 bb4". Every SAN move has at least as many small letters as capitals.
_SHOUT_WINDOW_CHARS: Final = 80
_CASTLING = re.compile(r"\bO-O(?:-O)?\b")


def lila_would_lower(text: str) -> bool:
    """Whether lila's chat would print `text` in lower case (it is "shouting")."""
    if len(text) < 5:
        return False
    window = _CASTLING.sub("", text)[:_SHOUT_WINDOW_CHARS]
    return sum(c.isupper() for c in window) > sum(c.islower() for c in window)


def sanitize(text: str, max_chars: int = MAX_CHAT_CHARS) -> str:
    """A line safe to send: no control characters, no links, one line, <= max_chars.

    Cut at a word boundary when possible. An empty result means: send nothing.
    """
    cleaned = "".join(
        " " if unicodedata.category(ch).startswith(("C", "Z")) else ch for ch in text
    )
    cleaned = _LINK.sub("", cleaned)
    cleaned = " ".join(cleaned.split())
    if len(cleaned) <= max_chars:
        return cleaned
    cut = cleaned[: max_chars + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > max_chars // 2 else cleaned[:max_chars]).rstrip()


def format_count(value: float) -> str:
    """1234567 -> "1.2M", 45210 -> "45k", 950 -> "950"."""
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def fit_tokens(prefix: str, tokens: list[str], max_chars: int = MAX_CHAT_CHARS) -> str:
    """`prefix` followed by as many whole tokens as fit in max_chars."""
    line = prefix
    for token in tokens:
        candidate = f"{line} {token}" if line else token
        if len(candidate) > max_chars:
            break
        line = candidate
    return line


def kibitz_line(
    board: chess.Board, info: Mapping[str, Any], max_chars: int = MAX_CHAT_CHARS
) -> str:
    """The line posted after our move: `board` is the position *before* it (the PV's root)."""
    parts: list[str] = []
    depth = info.get("depth")
    if isinstance(depth, int):
        seldepth = info.get("seldepth")
        parts.append(f"depth {depth}" + (f"/{seldepth}" if isinstance(seldepth, int) else ""))
    score = info.get("score")
    if isinstance(score, chess.engine.PovScore):
        parts.append(f"eval {score_text(score)}")
    nps = info.get("nps")
    if not isinstance(nps, int | float):
        nodes, time_s = info.get("nodes"), info.get("time")
        if isinstance(nodes, int) and isinstance(time_s, int | float) and time_s > 0:
            nps = nodes / time_s
    if isinstance(nps, int | float) and nps > 0:
        parts.append(f"{format_count(nps)} nps")
    pv = info.get("pv")
    prefix = " | ".join(parts)
    tokens = pv_san(board, pv) if isinstance(pv, list) and pv else []
    if not tokens:
        return sanitize(prefix, max_chars)
    if prefix:
        return fit_tokens(f"{prefix} | PV", tokens, max_chars)
    line = fit_tokens("PV", tokens, max_chars)
    # a bare PV of piece moves tips over lila's shouting rule by the marker's two capitals
    return "pv" + line[2:] if lila_would_lower(line) else line

