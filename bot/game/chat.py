"""Chat text: the kibitz line (depth, score, nodes/s, PV in SAN) and the outgoing sanitizer.

Lichess takes at most 140 characters and silently drops a bot's message with a link, so
every line we send goes through `sanitize` and the PV is cut between moves, never inside one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import chess

from bot.engines.searchline import SearchLine, pv_san, score_text

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


def kibitz_line(board: chess.Board, line: SearchLine, max_chars: int = MAX_CHAT_CHARS) -> str:
    """The line posted after our move: `board` is the position *before* it (the PV's root)."""
    parts: list[str] = []
    if line.depth is not None:
        parts.append(f"depth {line.depth}"
                     + (f"/{line.seldepth}" if line.seldepth is not None else ""))
    if line.score is not None:
        parts.append(f"eval {score_text(line.score)}")
    nps = line.speed_nps
    if nps is not None and nps > 0:
        parts.append(f"{format_count(nps)} nps")
    prefix = " | ".join(parts)
    tokens = pv_san(board, line.pv)
    if not tokens:
        return sanitize(prefix, max_chars)
    if prefix:
        return fit_tokens(f"{prefix} | PV", tokens, max_chars)
    bare = fit_tokens("PV", tokens, max_chars)
    # a bare PV of piece moves tips over lila's shouting rule by the marker's two capitals
    return "pv" + bare[2:] if lila_would_lower(bare) else bare

