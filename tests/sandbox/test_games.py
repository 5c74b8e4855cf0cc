"""Games: the game stream, move validation, castling notation, every end state, offers, chat."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import chess
import pytest

from sandbox.lobby import Quirks
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from tests.sandbox.conftest import (
    CLAIM_WIN_AFTER_S,
    GONE_AFTER_S,
    KEEPALIVE_S,
    Duel,
    eventually,
)
from tests.sandbox.spec import SpecClient, Stream

Client = Callable[[str | None], SpecClient]
CASTLING_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"


async def test_game_stream_sends_game_full_then_a_state_per_move(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        full = await stream.next()
        assert full["type"] == "gameFull"
        assert (full["white"]["id"], full["black"]["id"]) == ("bot1", "human1")
        assert full["white"]["title"] == "BOT" and full["black"]["title"] is None
        assert full["initialFen"] == "startpos"
        assert full["clock"] == {"initial": 180_000, "increment": 2_000}
        assert full["state"]["moves"] == ""
        assert full["state"]["status"] == "started"
        await duel.move(game_id, "e2e4")
        assert (await stream.next())["moves"] == "e2e4"
        await duel.move(game_id, "e7e5")
        assert (await stream.next())["moves"] == "e2e4 e7e5"
        await duel.bot.post(f"/api/bot/game/{game_id}/resign")
        final = await stream.next()
        assert (final["status"], final["winner"]) == ("resign", "black")
        with pytest.raises(EOFError):
            await stream.next()
    # A finished game's stream is its gameFull, then the end.
    async with duel.human.stream(f"/api/board/game/stream/{game_id}") as stream:
        full = await stream.next()
        assert full["state"]["status"] == "resign"
        with pytest.raises(EOFError):
            await stream.next()


async def test_unknown_games_and_other_peoples_games_are_404(
        sandbox: SandboxServer, client: Client, duel: Duel) -> None:
    game_id = await duel.start_game()
    missing = await duel.bot.post("/api/bot/game/nosuchgm/move/e2e4")
    assert (missing.status, missing.json()) == (404, {"error": "No such game"})
    stranger = client(sandbox.add_account("stranger", bot=True))
    theirs = await stranger.post(f"/api/bot/game/{game_id}/move/e2e4")
    assert (theirs.status, theirs.json()) == (404, {"error": "Not your game"})
    async with stranger.stream(f"/api/bot/game/stream/{game_id}") as stream:
        assert stream.status == 404


@pytest.mark.parametrize(("uci", "error"), [
    ("e2e5", "Piece on e2 cannot move to e5"),
    ("e3e4", "No piece on e3"),
    ("e7e5", "No piece on e7"),
    ("zz99", "Invalid UCI: zz99"),
    ("e2e4x", "Invalid UCI: e2e4x"),
    ("0000", "Invalid UCI: 0000"),
])
async def test_illegal_moves_are_refused(duel: Duel, uci: str, error: str) -> None:
    game_id = await duel.start_game(bot_color="white")
    reply = await duel.bot.post(f"/api/bot/game/{game_id}/move/{uci}")
    assert (reply.status, reply.json()) == (400, {"error": error})
    assert duel.sandbox.game_record(game_id).moves == ()


async def test_moving_out_of_turn_or_after_the_end_is_refused(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    early = await duel.human.post(f"/api/board/game/{game_id}/move/e7e5")
    assert early.json() == {"error": "Not your turn, or game already over"}
    await duel.bot.post(f"/api/bot/game/{game_id}/abort")
    late = await duel.bot.post(f"/api/bot/game/{game_id}/move/e2e4")
    assert late.json() == {"error": "Not your turn, or game already over"}


@pytest.mark.parametrize(("sent", "shown"), [
    ("e1g1", "e1h1"), ("e1h1", "e1h1"), ("e1c1", "e1a1"), ("e1a1", "e1a1")])
async def test_castling_is_accepted_both_ways_and_sent_king_takes_rook(
        duel: Duel, sent: str, shown: str) -> None:
    game_id = await duel.start_game(bot_color="white", fen=CASTLING_FEN)
    await duel.move(game_id, sent)
    assert duel.sandbox.game_record(game_id).moves == (shown,)


async def test_standard_castling_in_the_legacy_notation_on_request(
        client: Client) -> None:
    server = SandboxServer(keepalive_s=KEEPALIVE_S, legacy_castling=True)
    await server.start()
    try:
        server.add_account("white", bot=False)
        server.add_account("black", bot=False)
        game_id = await server.pair("white", "black", source="friend")
        white = SpecClient(server.url, server.account("white").token, client(None).session)
        black = SpecClient(server.url, server.account("black").token, client(None).session)
        for player, uci in ((white, "e2e4"), (black, "e7e5"), (white, "g1f3"),
                            (black, "b8c6"), (white, "f1c4"), (black, "g8f6"),
                            (white, "e1h1")):
            assert (await player.post(f"/api/board/game/{game_id}/move/{uci}")).status == 200
        assert server.game_record(game_id).moves[-1] == "e1g1"
    finally:
        await server.stop()


async def test_fools_mate(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    async with duel.human.stream("/api/stream/event") as events:
        await duel.play(game_id, "f2f3 e7e5 g2g4 d8h4")
        finish = await events.until("gameFinish")
    record = duel.sandbox.game_record(game_id)
    assert (record.status, record.winner) == ("mate", "black")
    assert finish["game"]["winner"] == "black"
    assert finish["game"]["status"] == {"id": 30, "name": "mate"}


@pytest.mark.parametrize(("fen", "moves", "status"), [
    ("7k/8/6K1/5Q2/8/8/8/8 w - - 0 1", "f5f7", "stalemate"),
    ("4k3/8/8/8/8/8/3p4/4K3 w - - 0 1", "e1d2", "draw"),  # insufficient material
    ("4k3/8/8/8/8/8/8/R3K3 w - - 99 80", "a1a2", "draw"),  # fifty moves
    (None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8", "draw"),  # threefold repetition
])
async def test_drawn_endings(duel: Duel, fen: str | None, moves: str, status: str) -> None:
    game_id = await duel.start_game(bot_color="white", fen=fen)
    await duel.play(game_id, moves)
    record = duel.sandbox.game_record(game_id)
    assert (record.status, record.winner) == (status, None)


async def test_resign_aborts_an_abortable_game_and_abort_has_a_deadline(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    await duel.move(game_id, "e2e4")
    assert (await duel.human.post(f"/api/board/game/{game_id}/resign")).status == 200
    assert duel.sandbox.game_record(game_id).status == "aborted"
    again = await duel.human.post(f"/api/board/game/{game_id}/resign")
    assert again.json() == {"error": "This game cannot be resigned"}
    game_id = await duel.start_game(bot_color="white")
    await duel.play(game_id, "e2e4 e7e5")
    late = await duel.bot.post(f"/api/bot/game/{game_id}/abort")
    assert late.json() == {"error": "This game can no longer be aborted"}
    assert (await duel.bot.post(f"/api/bot/game/{game_id}/resign")).status == 200
    record = duel.sandbox.game_record(game_id)
    assert (record.status, record.winner) == ("resign", "black")


async def test_draw_offers(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        # Too early to offer: ignored, and still OK.
        assert (await duel.bot.post(f"/api/bot/game/{game_id}/draw/yes")).status == 200
        await duel.play(game_id, "e2e4 e7e5")
        await duel.move(game_id, "g1f3", offering_draw=True)
        state = await stream.until("gameState", moves="e2e4 e7e5 g1f3")
        assert state.get("wdraw") is True
        assert (await duel.human.post(f"/api/board/game/{game_id}/draw/no")).status == 200
        declined = await stream.until("gameState")
        assert "wdraw" not in declined
        await duel.move(game_id, "b8c6", offering_draw=True)
        offered = await stream.until("gameState", moves="e2e4 e7e5 g1f3 b8c6")
        assert offered.get("bdraw") is True
        await duel.bot.post(f"/api/bot/game/{game_id}/draw/yes")
        final = await stream.until("gameState", status="draw")
        assert "winner" not in final
    chat = (await duel.bot.get(f"/api/bot/game/{game_id}/chat")).json()
    assert {"user": "lichess", "text": "Draw offer accepted"} in chat


async def test_a_draw_offer_with_a_move_needs_two_plies_before_that_move(duel: Duel) -> None:
    """lila BotPlayer.scala `apply` offers before the move: at ply 1 it is too early."""
    game_id = await duel.start_game(bot_color="black")
    await duel.move(game_id, "e2e4")
    await duel.move(game_id, "e7e5", offering_draw=True)
    assert not duel.sandbox.game(game_id).draw_offers
    await duel.move(game_id, "g1f3", offering_draw=True)
    assert duel.sandbox.game(game_id).draw_offers == {chess.WHITE}


async def test_claims_do_nothing_while_the_game_can_be_aborted(
        duel: Duel, clock: ManualClock) -> None:
    """lila BotPlayer.scala: claimVictory needs `forceResignable`, claimDraw `drawable`;
    neither holds before both sides have moved, so both answer 200 and change nothing."""
    game_id = await duel.start_game(bot_color="black")
    await duel.move(game_id, "e2e4")
    for claim in ("claim-victory", "claim-draw"):
        assert (await duel.bot.post(f"/api/bot/game/{game_id}/{claim}")).status == 200
    assert duel.sandbox.game_record(game_id).status == "started"


async def test_a_move_made_while_offered_a_draw_declines_it(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    await duel.play(game_id, "e2e4 e7e5")
    await duel.move(game_id, "g1f3", offering_draw=True)
    assert duel.sandbox.game(game_id).draw_offers
    await duel.move(game_id, "b8c6")
    assert not duel.sandbox.game(game_id).draw_offers


async def test_takeback_rewinds_to_the_proposers_turn(
        sandbox: SandboxServer, client: Client) -> None:
    # Between two people: with a BOT in the game no takeback is possible (the next test).
    white = client(sandbox.add_account("human2", bot=False))
    black = client(sandbox.add_account("human3", bot=False))
    reply = await white.post("/api/challenge/human3", data={
        "color": "white", "clock.limit": "180", "clock.increment": "2"})
    game_id = reply.json()["id"]
    assert (await black.post(f"/api/challenge/{game_id}/accept")).status == 200
    board = f"/api/board/game/{game_id}"

    async def play(player: SpecClient, uci: str) -> None:
        assert (await player.post(f"{board}/move/{uci}")).status == 200

    await play(white, "e2e4")
    await play(black, "e7e5")
    await play(white, "g1f3")
    assert (await black.post(f"{board}/takeback/yes")).status == 200
    assert sandbox.game(game_id).takeback_offers
    assert (await white.post(f"{board}/takeback/yes")).status == 200
    assert sandbox.game_record(game_id).moves == ("e2e4",)
    # Nothing to take back yet for black: no proposal.
    await black.post(f"{board}/takeback/yes")
    assert not sandbox.game(game_id).takeback_offers
    await play(black, "c7c5")
    await black.post(f"{board}/takeback/yes")
    await white.post(f"{board}/takeback/no")
    assert sandbox.game_record(game_id).moves == ("e2e4", "c7c5")
    texts = [line.text for line in sandbox.game_record(game_id).chat]
    assert texts == ["Takeback sent", "Takeback accepted", "Takeback sent", "Takeback declined"]


async def test_no_takeback_in_a_game_with_a_bot(duel: Duel) -> None:
    """lila Takebacker.scala `isAllowedByPrefs` with PrefApi.scala `setBot` (takeback NEVER):
    a proposal from either side is answered 200 and does nothing."""
    game_id = await duel.start_game(bot_color="white")
    await duel.play(game_id, "e2e4 e7e5 g1f3")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        assert (await duel.human.post(f"/api/board/game/{game_id}/takeback/yes")).status == 200
        assert (await duel.bot.post(f"/api/bot/game/{game_id}/takeback/yes")).status == 200
        await duel.move(game_id, "b8c6")
        state = await stream.until("gameState")
    assert "btakeback" not in state and "wtakeback" not in state
    assert state["moves"] == "e2e4 e7e5 g1f3 b8c6"
    assert not duel.sandbox.game(game_id).takeback_offers
    assert duel.sandbox.game_record(game_id).chat == ()


async def test_chat_rooms_limits_and_links(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as bot_stream, \
            duel.human.stream(f"/api/board/game/stream/{game_id}") as human_stream:
        await bot_stream.next()
        await human_stream.next()
        path = f"/api/bot/game/{game_id}/chat"
        assert (await duel.bot.post(path, data={"room": "player", "text": "gl hf"})).status == 200
        for stream in (bot_stream, human_stream):
            line = await stream.until("chatLine")
            assert (line["room"], line["username"], line["text"]) == ("player", "bot1", "gl hf")
        await duel.bot.post(path, data={"room": "spectator", "text": "eval +0.3"})
        spectator = await bot_stream.until("chatLine")
        assert spectator["room"] == "spectator"
        await duel.bot.post(path, data={"room": "player", "text": "see https://example.com"})
        await duel.human.post(f"/api/board/game/{game_id}/chat",
                              data={"room": "player", "text": "THANKS A LOT"})
        # The human never sees the spectator room, and the link was dropped.
        assert (await human_stream.until("chatLine"))["text"] == "thanks a lot"
    too_long = await duel.bot.post(path, data={"room": "player", "text": "x" * 141})
    assert too_long.status == 400 and "140" in too_long.json()["error"]
    assert (await duel.bot.post(path, data={"room": "player", "text": "x" * 140})).status == 200
    bad_room = await duel.bot.post(path, data={"room": "lobby", "text": "hi"})
    assert bad_room.status == 400 and "room" in bad_room.json()
    empty = await duel.bot.post(path, data={"room": "player", "text": "  "})
    assert empty.status == 400
    history = (await duel.bot.get(path)).json()
    assert history == [{"user": "bot1", "text": "gl hf"},
                       {"user": "human1", "text": "thanks a lot"},
                       {"user": "bot1", "text": "x" * 140}]


async def test_chat_lines_are_cleaned_as_lila_does(duel: Duel) -> None:
    """lila ChatApi.scala `Writer.preprocessUserInput`: trimmed, blank lines made one space
    (a single newline stays), one's own @mention made the bare name, shouting lowered
    (castling words do not count); a line that cleans down to nothing is dropped (200)."""
    game_id = await duel.start_game(bot_color="white")
    path = f"/api/bot/game/{game_id}/chat"
    sent = ["  gl\n\n\nhf  ", "one\ntwo", "hi @bot1, and @bot1x", "PV 1. O-O O-O 2. Re1 Nc6",
            "GOOD LUCK", "ok"]
    for text in sent:
        reply = await duel.bot.post(path, data={"room": "player", "text": text})
        assert reply.status == 200, reply.text
    history = [line["text"] for line in (await duel.bot.get(path)).json()]
    assert history == ["gl hf", "one\ntwo", "hi bot1, and @bot1x", "PV 1. O-O O-O 2. Re1 Nc6",
                       "good luck", "ok"]


@contextlib.asynccontextmanager
async def human_left(duel: Duel, claim_after_s: float) -> AsyncIterator[
        tuple[SandboxServer, Duel, str, Stream]]:
    """A sandbox with quick presence ticks, a game after 1. e4 e5 2. Nf3 (the human, black,
    to move), the bot's game stream open, and the human's opened and closed again."""
    server = SandboxServer(keepalive_s=KEEPALIVE_S, gone_after_s=0.05, gone_tick_s=0.05,
                           claim_win_after_s=claim_after_s)
    await server.start()
    session = duel.bot.session
    gone = Duel(server, SpecClient(server.url, server.add_account("bot1", bot=True), session),
                SpecClient(server.url, server.add_account("human1", bot=False), session))
    try:
        game_id = await gone.start_game(bot_color="white")
        await gone.play(game_id, "e2e4 e7e5 g1f3")
        async with gone.bot.stream(f"/api/bot/game/stream/{game_id}") as bot_stream:
            await bot_stream.next()
            async with gone.human.stream(f"/api/board/game/stream/{game_id}") as human:
                await human.next()
            yield server, gone, game_id, bot_stream
    finally:
        await server.stop()


async def test_a_player_who_leaves_is_announced_until_claimable_then_claimed(
        duel: Duel) -> None:
    """lila RoundAsyncActor.scala `Tick`: `gone: true` repeated with a falling
    `claimWinInSeconds`, then 0; BotPlayer.scala `claimVictory`: refused (400) before,
    won after, a no-op (OK) on one's own turn and once the game is over."""
    async with human_left(duel, claim_after_s=2.5) as (server, gone, game_id, bot_stream):
        first = await bot_stream.until("opponentGone")
        assert first["gone"] is True and 0 < first["claimWinInSeconds"] <= 2
        early = await gone.bot.post(f"/api/bot/game/{game_id}/claim-victory")
        assert early.status == 400
        assert early.json() == {"error": "You cannot claim the win on this game"}
        counts = [first["claimWinInSeconds"]]
        while counts[-1] > 0:
            counts.append((await bot_stream.until("opponentGone", gone=True))
                          ["claimWinInSeconds"])
        assert counts == sorted(counts, reverse=True) and len(counts) >= 3
        again = await bot_stream.until("opponentGone", gone=True)  # repeated at 0
        assert again["claimWinInSeconds"] == 0
        # lila truncates the count to whole seconds: 0 may come up to 1 s early.
        await eventually(lambda: server.game(game_id).long_gone(chess.BLACK))
        assert (await gone.bot.post(f"/api/bot/game/{game_id}/claim-victory")).status == 200
        final = await bot_stream.until("gameState")
        assert (final["status"], final["winner"]) == ("timeout", "white")
        late = await gone.bot.post(f"/api/bot/game/{game_id}/claim-victory")
        assert late.status == 200  # mightClaimWin is false: nothing happens
        assert server.game_record(game_id).status == "timeout"


async def test_back_before_claimable_is_not_announced(duel: Duel) -> None:
    """lila RoundAsyncActor.scala `setOnline`: a player back before the claim delay ran out
    is not announced (no `gone: false`). A claim on one's own turn does nothing
    (BotPlayer.scala `mightClaimWin`)."""
    async with human_left(duel, claim_after_s=30) as (server, gone, game_id, bot_stream):
        assert (await bot_stream.until("opponentGone"))["claimWinInSeconds"] > 0
        async with gone.human.stream(f"/api/board/game/stream/{game_id}") as human:
            await human.next()
            await gone.move(game_id, "b8c6")
            line = await bot_stream.next()
            while line.get("type") == "opponentGone" and line["gone"]:
                line = await bot_stream.next()  # ticks sent before it came back
            assert line["type"] == "gameState"  # and no `gone: false`
        mine = await gone.bot.post(f"/api/bot/game/{game_id}/claim-victory")
        assert mine.status == 200 and server.game(game_id).playing  # our turn: no effect


async def test_back_after_claimable_is_announced(duel: Duel) -> None:
    """lila RoundAsyncActor.scala `setOnline`: `gone: false` for a player who had become
    claimable (`isLongGone`) and came back."""
    async with human_left(duel, claim_after_s=0.2) as (server, gone, game_id, bot_stream):
        await bot_stream.until("opponentGone", claimWinInSeconds=0)
        await eventually(lambda: server.game(game_id).long_gone(chess.BLACK))
        async with gone.human.stream(f"/api/board/game/stream/{game_id}") as human:
            await human.next()
            await bot_stream.until("opponentGone", gone=False)


async def test_a_second_stream_with_the_same_user_agent_replaces_the_first(
        duel: Duel) -> None:
    game_id = await duel.start_game()
    path = f"/api/bot/game/stream/{game_id}"
    async with duel.bot.stream(path) as first:
        await first.next()
        async with duel.bot.stream(path, headers={"User-Agent": "other"}) as other, \
                duel.bot.stream(path) as second:
            await other.next()
            await second.next()
            with pytest.raises(EOFError):
                await first.next()
            assert await other.raw_line() == b"\n"


async def test_export_gives_pgn_and_json(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    await duel.play(game_id, "f2f3 e7e5 g2g4 d8h4")
    pgn = await duel.bot.get(f"/game/export/{game_id}?clocks=true")
    assert pgn.content_type == "application/x-chess-pgn"
    assert '[Result "0-1"]' in pgn.text
    assert '[White "bot1"]' in pgn.text and '[WhiteTitle "BOT"]' in pgn.text
    assert '[TimeControl "180+2"]' in pgn.text
    assert "1. f3 { [%clk 0:03:00] } 1... e5" in pgn.text
    assert "2... Qh4# { [%clk" in pgn.text
    assert duel.sandbox.game_record(game_id).pgn == pgn.text
    bare = await duel.bot.get(f"/game/export/{game_id}?tags=false&clocks=false")
    assert bare.text.strip() == "1. f3 e5 2. g4 Qh4# 0-1"
    body = (await duel.bot.get(f"/game/export/{game_id}",
                               headers={"Accept": "application/json"})).json()
    assert (body["status"], body["winner"], body["moves"]) == ("mate", "black", "f3 e5 g4 Qh4#")
    # lila GameApiV2.scala `toJson`: a player asking gets their fullId; new ratings are
    # provisional; pgnInJson adds the PGN, moves=false leaves the moves out.
    assert body["fullId"] == duel.sandbox.game(game_id).full_id(chess.WHITE)
    assert body["players"]["white"]["provisional"] is True
    assert "pgn" not in body
    more = (await duel.human.get(f"/game/export/{game_id}?pgnInJson=true&moves=false",
                                 headers={"Accept": "application/json"})).json()
    assert more["fullId"] == duel.sandbox.game(game_id).full_id(chess.BLACK)
    assert "moves" not in more and more["pgn"].startswith("[Event ")


@pytest.mark.parametrize(("quirk", "states"), [
    (None, ["draw"]),
    ("split_final_state", ["started", "draw"]),
    ("stale_final_state", ["started"]),
    ("omit_final_state", []),
])
async def test_end_of_game_quirks(client: Client, quirk: str | None, states: list[str]) -> None:
    server = SandboxServer(keepalive_s=KEEPALIVE_S,
                           quirks=Quirks(**({quirk: True} if quirk else {})))
    await server.start()
    try:
        session = client(None).session
        duel = Duel(server, SpecClient(server.url, server.add_account("bot1", bot=True), session),
                    SpecClient(server.url, server.add_account("human1", bot=False), session))
        game_id = await duel.start_game(bot_color="white")
        async with duel.bot.stream("/api/stream/event") as events:
            async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
                await stream.next()
                await duel.play(game_id, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1")
                for _ in range(7):
                    await stream.next()
                await duel.move(game_id, "f6g8")  # threefold repetition
                seen = [state["status"] async for state in stream.lines()]
            finish = await events.until("gameFinish")
        assert seen == states
        assert finish["game"]["status"]["name"] == "draw"
    finally:
        await server.stop()


async def test_unknown_routes_and_methods_answer_json(client: Client) -> None:
    missing = await client(None).get("/api/nothing/here")
    assert (missing.status, missing.json()) == (404, {"error": "Not found"})
    wrong = await client(None).request("DELETE", "/api/account")
    assert wrong.status == 405 and "DELETE" in wrong.json()["error"]


async def test_challenge_rules_no_abort_no_early_draw_no_claim_win(
        duel: Duel, clock: ManualClock) -> None:
    reply = await duel.bot.post("/api/challenge/human1", data={
        "clock.limit": "180", "clock.increment": "0", "color": "white",
        "rules": "noAbort,noEarlyDraw,noClaimWin"})
    assert reply.json()["rules"] == ["noAbort", "noClaimWin", "noEarlyDraw"]
    game_id = reply.json()["id"]
    await duel.human.post(f"/api/challenge/{game_id}/accept")
    # Stuck until both have moved: no abort, no resignation (lila#15318).
    abort = await duel.bot.post(f"/api/bot/game/{game_id}/abort")
    assert abort.json() == {"error": "This game can no longer be aborted"}
    resign = await duel.bot.post(f"/api/bot/game/{game_id}/resign")
    assert resign.json() == {"error": "This game cannot be resigned"}
    await duel.play(game_id, "e2e4 e7e5")
    await duel.move(game_id, "g1f3", offering_draw=True)  # too early under noEarlyDraw
    assert not duel.sandbox.game(game_id).draw_offers
    async with duel.human.stream(f"/api/board/game/stream/{game_id}") as stream:
        await stream.next()
    human_id = duel.sandbox.account("human1").id  # the server has seen the stream close
    await eventually(lambda: not duel.sandbox.lobby.hub.watching(game_id, human_id))
    clock.advance(GONE_AFTER_S + CLAIM_WIN_AFTER_S * 2)
    assert duel.sandbox.game(game_id).gone_since_s  # gone long enough: only the rule holds
    await duel.bot.post(f"/api/bot/game/{game_id}/claim-victory")  # noClaimWin: no effect
    assert duel.sandbox.game_record(game_id).status == "started"
    assert (await duel.bot.post(f"/api/bot/game/{game_id}/resign")).status == 200


async def test_chat_is_normalised_like_lila(duel: Duel) -> None:
    # lila ChatApi.scala `removeSelfMention` keeps the name (without the @) and `multiline`
    # makes blank lines one space.
    game_id = await duel.start_game()
    await duel.bot.post(f"/api/bot/game/{game_id}/chat", data={
        "room": "player", "text": "hi @Bot1 and @human1\n\n\nbye"})
    assert duel.sandbox.game_record(game_id).chat[-1].text == "hi bot1 and @human1 bye"


async def test_ultrabullet_games_cannot_be_played_through_the_apis(
        sandbox: SandboxServer, duel: Duel) -> None:
    game_id = await sandbox.pair("bot1", "human1", 15, 0, source="lobby")
    bot = await duel.bot.post(f"/api/bot/game/{game_id}/move/e2e4")
    assert bot.json() == {"error": "This game cannot be played with the Bot API."}
    human = await duel.human.post(f"/api/board/game/{game_id}/move/e7e5")
    assert human.json() == {"error": "This game cannot be played with the Board API."}


async def test_rated_games_move_ratings(duel: Duel) -> None:
    reply = await duel.human.post("/api/challenge/bot1", data={
        "clock.limit": "300", "clock.increment": "0", "rated": "true", "color": "black"})
    game_id = reply.json()["id"]
    async with duel.bot.stream("/api/stream/event") as events:
        await duel.bot.post(f"/api/challenge/{game_id}/accept")
        await duel.play(game_id, "f2f3 e7e5 g2g4 d8h4")
        finish = (await events.until("gameFinish"))["game"]
    assert finish["rated"] is True and finish["winner"] == "black"
    assert finish["ratingDiff"] == -10 and finish["opponent"]["ratingDiff"] == 10
    assert duel.sandbox.account("bot1").rating("blitz") == 1490
    assert duel.sandbox.account("human1").rating("blitz") == 1510
    profile = (await duel.human.get("/api/account")).json()
    assert profile["perfs"]["blitz"]["games"] == 1
    assert profile["count"]["win"] == 1
    assert '[WhiteRatingDiff "-10"]' in duel.sandbox.game_record(game_id).pgn


async def test_chess960_castling_is_sent_king_takes_rook(duel: Duel) -> None:
    start = "bbqrknnr/pppppppp/8/8/8/8/PPPPPPPP/BBQRKNNR w KQkq - 0 1"  # position 672
    game_id = await duel.start_game(bot_color="white", variant="chess960", fen=start)
    await duel.play(game_id, "g1h3 a7a6 f1g3 a6a5 e1g1")
    record = duel.sandbox.game_record(game_id)
    assert record.moves[-1] == "e1h1"
    assert record.fen.startswith("bbqrknnr/1ppppppp/8/p7/8/6NN/PPPPPPPP/BBQR1RK1 b")
    async with duel.human.stream(f"/api/board/game/stream/{game_id}") as stream:
        full = await stream.next()
    assert (full["variant"]["key"], full["initialFen"]) == ("chess960", start)
    assert full["state"]["moves"].endswith("e1h1")


async def test_the_server_can_end_a_game_itself(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    async with duel.bot.stream("/api/stream/event") as events:
        duel.sandbox.end_game(game_id, "cheat", winner="black")
        finish = (await events.until("gameFinish"))["game"]
    assert finish["status"] == {"id": 36, "name": "cheat"}
    assert finish["winner"] == "black"
    duel.sandbox.end_game(game_id, "draw")  # already over: nothing changes
    assert duel.sandbox.game_record(game_id).status == "cheat"
    with pytest.raises(ValueError, match="status 'started'"):
        duel.sandbox.end_game(game_id, "started")
    with pytest.raises(ValueError, match="winner 'red'"):
        duel.sandbox.end_game(game_id, "resign", winner="red")
