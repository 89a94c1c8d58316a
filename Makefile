# schedlab: every target sets itself up on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
N       ?= 500
SEED    ?= 1000
export SCHEDLAB_CACHE_DIR ?= $(CURDIR)/.cache/schedlab
export MPLCONFIGDIR ?= $(CURDIR)/.cache/matplotlib

.PHONY: venv test demo fuzz bench clean

venv: $(STAMP)

# torch first (its CPU build comes from a local wheel; later packages then find it satisfied)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# two pytest workers, one per core; a test file stays on one worker (its module fixtures run once)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

demo: $(STAMP)
	$(BIN)/python benchmarks/schedules_matter.py --demo

fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz --n $(N) --seed $(SEED)

bench: $(STAMP)
	$(BIN)/python benchmarks/schedules_matter.py

clean:
	rm -rf .cache .pytest_cache
