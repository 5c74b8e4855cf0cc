# Every target creates .venv if it is missing; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-slow lint bench bench-bot match opponents stockfish demo play sandbox clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check engine bot sandbox tests tools
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	$(BIN)/python -m tools.bench_perft
	$(BIN)/kibitz-engine bench

bench-bot: $(STAMP)
	$(BIN)/python -m tools.bench_bot $(BENCH_BOT_ARGS)

# The opponents of `make match`, from Debian's archive when missing: stockfish is the calibrated
# one (UCI_Elo); gnuchess, phalanx (XBoard) and ethereal-chess are the hand-written engines
# the strength targets are measured against.  Debian puts them in /usr/games.
MATCH_ENGINES := gnuchess phalanx ethereal-chess stockfish
opponents:
	missing=""; for e in $(MATCH_ENGINES); do \
		command -v $$e >/dev/null 2>&1 || test -x /usr/games/$$e || missing="$$missing $$e"; \
	done; \
	test -z "$$missing" || (apt-get update -qq && apt-get install -y -qq $$missing)

# Stockfish alone, for KIBITZ_TEST_ENGINE=stockfish.
stockfish:
	command -v stockfish >/dev/null 2>&1 || test -x /usr/games/stockfish || \
		(apt-get update -qq && apt-get install -y -qq stockfish)

# Sunfish pins an old python-chess, so it lives in a venv of its own.
SUNFISH_VENV := .venv-sunfish
$(SUNFISH_VENV)/.installed:
	test -x $(SUNFISH_VENV)/bin/python || $(PYTHON) -m venv $(SUNFISH_VENV)
	$(SUNFISH_VENV)/bin/python -m pip install --quiet 'sunfish>=2024.1'
	touch $@

match: $(STAMP) opponents $(SUNFISH_VENV)/.installed
	$(BIN)/python -m tools.match $(MATCH_ARGS)

demo: $(STAMP)
	$(BIN)/kibitz demo

play: $(STAMP)
	$(BIN)/kibitz play $(if $(CONFIG),--config $(CONFIG),)

sandbox: $(STAMP)
	$(BIN)/kibitz sandbox

clean:
	rm -rf $(VENV) $(SUNFISH_VENV) build *.egg-info
	find . -name __pycache__ -prune -exec rm -rf {} +
