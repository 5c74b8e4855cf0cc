# Every target creates .venv if it is missing; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-slow lint bench bench-bot bench-soak bench-memory match opponents demo play \
	sandbox clean stockfish fairy-stockfish xboard-engines chromium train datagen datagen-status \
	datagen-merge calibrate perf profile

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check engine bot sandbox tests tools
	$(BIN)/mypy

# The tests run in a random order (pytest-randomly); the seed is printed first, and
# `make test SEED=<seed>` repeats that order. `make test SEED=off` keeps the file order.
ifndef SEED
SEED := $(shell $(PYTHON) -c 'import random; print(random.randrange(10**9))')
endif
ORDER = $(if $(filter off,$(SEED)),-p no:randomly,--randomly-seed=$(SEED))
# Worker processes of the test run (pytest-xdist). Most end-to-end tests wait on real game
# clocks and use well under a core, so two workers on two cores take about half the time.
# `make test JOBS=1` runs everything in this process (a failure's output is easier to read).
JOBS ?= 2
WORKERS = $(if $(filter 1,$(JOBS)),-p no:xdist,-n $(JOBS))

# The variant and XBoard engines are tried first: a new machine that may install packages
# runs those end-to-end tests instead of skipping them (where it may not, they skip).
test: lint fairy-stockfish xboard-engines chromium perf
	@# numba compiles the engine into its cache once per checkout: done here, so that no
	@# test (whichever comes first in the random order) waits minutes for it
	$(BIN)/kibitz-engine bench > /dev/null
	@echo "test order: SEED=$(SEED) (make test SEED=$(SEED) repeats it), $(JOBS) worker(s)"
	$(BIN)/python -m pytest -q $(ORDER) $(WORKERS)

# The trainer of the learned evaluation needs PyTorch, in a venv of its own (the tests never
# do): `make train DATA=~/kibitz-data/gen0.bin NET=/tmp/kibitz.nnue ARGS='--hidden 128'`.
TRAIN_VENV := .venv-train
TORCH_VERSION := 2.13.0
$(TRAIN_VENV)/.installed: pyproject.toml
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TRAIN_VENV)/bin/python -m pip install --quiet torch==$(TORCH_VERSION) -e .
	touch $@

train: $(TRAIN_VENV)/.installed
	@test -n "$(DATA)" -a -n "$(NET)" || \
		{ echo "usage: make train DATA=records.bin NET=out.nnue [ARGS='--epochs 20 ...']"; exit 2; }
	$(TRAIN_VENV)/bin/python -m tools.nnue.train --data $(DATA) --out $(NET) $(ARGS)

# The data factory (tools/nnue/factory.py): self-play positions piled up in DATA_DIR across
# runs, at low priority, for DATAGEN_S seconds with DATAGEN_JOBS processes; killable at any
# moment (only the games in flight are lost). `timeout` is the hard bound behind the run's own.
DATA_DIR ?= $(HOME)/kibitz-data
DATAGEN_S ?= 3600
DATAGEN_JOBS ?= $(JOBS)
DATAGEN_NODES ?= 3000
DATAGEN_GRACE_S := 120
datagen: $(STAMP)
	timeout --kill-after=30 $$(( $(DATAGEN_S) + $(DATAGEN_GRACE_S) )) nice -n 19 \
		$(BIN)/python -m tools.nnue.factory run --dir $(DATA_DIR) --seconds $(DATAGEN_S) \
		--jobs $(DATAGEN_JOBS) --nodes $(DATAGEN_NODES) $(DATAGEN_ARGS)

datagen-status: $(STAMP)
	$(BIN)/python -m tools.nnue.factory status --dir $(DATA_DIR)

# another machine's data directory (FROM=...) into DATA_DIR: its ledgered shards and lines
datagen-merge: $(STAMP)
	@test -n "$(FROM)" || { echo "make datagen-merge FROM=DIR: the data directory to merge"; exit 2; }
	$(BIN)/python -m tools.nnue.merge "$(FROM)" --dir $(DATA_DIR)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	$(BIN)/python -m tools.bench.perft
	$(BIN)/kibitz-engine bench

bench-bot: $(STAMP)
	$(BIN)/python -m tools.bench.bot $(BENCH_BOT_ARGS)

bench-soak: $(STAMP)
	$(BIN)/python -m tools.bench.bot --soak $(BENCH_BOT_ARGS)

# The bot's Pss with 1, 2, 4, 8 games (engines forked by the host, then each in its own
# process), and start-up and speed forked against in a process of its own.
bench-memory: $(STAMP)
	$(BIN)/python -m tools.bench.memory $(BENCH_MEMORY_ARGS)
	$(BIN)/python -m tools.bench.memory --no-fork-host $(BENCH_MEMORY_ARGS)
	$(BIN)/python -m tools.bench.memory --speed

# Where the compiled search spends its time, by function: `make profile PROFILE_ARGS='--part
# middle --depth 15'` (the bench's end games at depth 17 without).
profile: $(STAMP) perf
	$(BIN)/python -m tools.bench.profile $(PROFILE_ARGS)

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

# Debian's fairy-stockfish plays the Lichess variants; phalanx is an XBoard engine (fairymax
# is not usable: it lacks `setboard`, which python-chess's XBoard client requires). Both are
# installed when missing and apt-get can run (root); otherwise the tests that need them skip.
fairy-stockfish:
	command -v fairy-stockfish >/dev/null 2>&1 || test -x /usr/games/fairy-stockfish || \
		(apt-get update -qq && apt-get install -y -qq fairy-stockfish) || \
		echo "fairy-stockfish could not be installed: its tests will skip"

xboard-engines:
	command -v phalanx >/dev/null 2>&1 || test -x /usr/games/phalanx || \
		(apt-get update -qq && apt-get install -y -qq phalanx) || \
		echo "phalanx could not be installed: its tests will skip"

# Debian's perf samples the compiled search (tools.bench.profile); installed when missing and
# apt-get can run, otherwise the profiler's end-to-end test skips.
perf:
	command -v perf >/dev/null 2>&1 || \
		(apt-get update -qq && apt-get install -y -qq linux-perf) || \
		echo "perf could not be installed: the profiler's end-to-end test will skip"

# Debian's chromium and its WebDriver drive the status page's browser test (Selenium);
# installed when missing and apt-get can run, otherwise that test skips.
chromium:
	command -v chromedriver >/dev/null 2>&1 && (command -v chromium >/dev/null 2>&1) || \
		(apt-get update -qq && apt-get install -y -qq chromium chromium-driver) || \
		echo "chromium could not be installed: the status page's browser test will skip"

# Sunfish pins an old python-chess, so it lives in a venv of its own.
SUNFISH_VENV := .venv-sunfish
$(SUNFISH_VENV)/.installed:
	test -x $(SUNFISH_VENV)/bin/python || $(PYTHON) -m venv $(SUNFISH_VENV)
	$(SUNFISH_VENV)/bin/python -m pip install --quiet 'sunfish>=2024.1'
	touch $@

match: $(STAMP) opponents $(SUNFISH_VENV)/.installed
	$(BIN)/python -m tools.match $(MATCH_ARGS)

# The engine's UCI_Elo levels against Stockfish's (tools/strength/calibrate.py): 100 games a
# level at 10 s + 0.1 s, about an hour on 2 cores.  CALIBRATE_ARGS='--chain' measures the
# levels below Stockfish's floor against each other; '--cploss' adds centipawn-loss columns.
calibrate: $(STAMP) stockfish
	$(BIN)/python -m tools.strength.calibrate $(CALIBRATE_ARGS)

demo: $(STAMP)
	$(BIN)/kibitz demo

play: $(STAMP)
	$(BIN)/kibitz play $(if $(CONFIG),--config $(CONFIG),)

sandbox: $(STAMP)
	$(BIN)/kibitz sandbox

clean:
	rm -rf $(VENV) $(SUNFISH_VENV) build *.egg-info
	find . -name __pycache__ -prune -exec rm -rf {} +

# --- The container image (Containerfile, compose.yaml) -----------------------------------
# `make container` builds the image with podman or docker (BASE=... names another base than
# Docker Hub's debian:bookworm-slim). `make test-container` needs no registry: it makes a
# base from Debian's archive, builds with podman and tries the image (tools/container/test.sh;
# several minutes, so not part of `make test`).
CONTAINER_TOOL ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE ?= kibitz:latest

.PHONY: container test-container
container:
	@test -n "$(CONTAINER_TOOL)" || { echo "make container needs podman or docker"; exit 2; }
	@# podman keeps HEALTHCHECK only in the docker image format (OCI's has no such field)
	$(CONTAINER_TOOL) build $(if $(findstring podman,$(CONTAINER_TOOL)),--format docker,) \
		$(if $(BASE),--build-arg BASE=$(BASE),) --tag $(IMAGE) --file Containerfile .

test-container:
	tools/container/test.sh
