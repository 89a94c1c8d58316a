# schedlab: every target sets itself up on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
N       ?= 500
SEED    ?= 1000
BACKEND ?= numba
DEMO    ?= $(CURDIR)/.cache/demo
DEMO_TRACKING := sqlite:///$(DEMO)/mlflow.db
export SCHEDLAB_CACHE_DIR ?= $(CURDIR)/.cache/schedlab
export MPLCONFIGDIR ?= $(CURDIR)/.cache/matplotlib
export RAY_AUTH_MODE ?= disabled
export RAY_USAGE_STATS_ENABLED ?= 0

.PHONY: venv compiled test demo fuzz fuzz-cuda bench clean

venv: $(STAMP)

# torch first (its CPU build comes from a local wheel; later packages then find it satisfied)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,halide,gpu]"
	touch $(STAMP)

# the search's hot modules compiled by Cython (ir/hot.py): only those whose source changed since their last build
# (~1 minute for all ten on 2 cores, a second when all are current); a module without a current build runs as the
# pure Python it is, so a build that fails only makes search slower
compiled: $(STAMP)
	$(BIN)/python -m ir.compiled build || echo "make compiled failed: the hot modules run as pure Python" >&2

# two pytest workers, one per core; a test file stays on one worker (its module fixtures run once); the 25
# slowest tests listed at the end (where CI time goes)
test: $(STAMP) compiled
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=25

# the main job end to end: local Ray data generation (2 rounds, a model trained and registered after each,
# champion only if it beats random weights and the analytical model), the newest model evaluated on the
# pipelines it held out and, at full size next to the built-in and analytical models, expert schedules and
# Halide's autoschedulers, on three apps; everything under $(DEMO)
demo: $(STAMP) compiled
	$(BIN)/python -m generator.job --config conf/demo.yaml out=$(DEMO)/data tracking_uri=$(DEMO_TRACKING)
	$(BIN)/python -m evaluate --config conf/evaluate.yaml model=models:/schedlab-host/latest data=$(DEMO)/data \
		split=val val_fraction=0.25 min_schedules=6 tracking_uri=$(DEMO_TRACKING)
	$(BIN)/python -m evaluate.apps --config conf/evaluate_apps.yaml model=models:/schedlab-host/latest \
		compare_models=[builtin,analytical] algorithms=[beam] apps=blur,unsharp,harris size=full beam_size=4 passes=1 \
		random_schedules=2 protocol=quick backend=llvm tracking_uri=$(DEMO_TRACKING)
	@echo
	@echo "demo done. data: $(DEMO)/data   models, runs, plots: $(DEMO)/mlflow.db (+ $(DEMO)/artifacts)"
	@echo "(the apps ran at the papers' sizes, compiled by llvm and by Halide; beam is the demo's newest model,"
	@echo " beam:builtin the shipped model, beam:analytical the hand-written one; every app:"
	@echo " $(BIN)/python -m evaluate.apps model=models:/schedlab-host/latest compare_models=[builtin,analytical]"
	@echo " tracking_uri=$(DEMO_TRACKING))"
	@echo "point a shell at this store (the README's Python, python -m scheduler model=champion, mlflow ui):"
	@echo "  export MLFLOW_TRACKING_URI=$(DEMO_TRACKING)"
	@echo "  $(BIN)/mlflow ui --backend-store-uri $(DEMO_TRACKING)"
	@echo "  then http://127.0.0.1:5000/#/experiments?workflowType=machine_learning (MLflow's Model training layout)"

fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz --n $(N) --seed $(SEED) --backend $(BACKEND)

# random pipelines x random GPU schedules: NVRTC (sm_80, sm_90) and the CPU run of the same CUDA text vs the interpreter
fuzz-cuda: $(STAMP)
	$(BIN)/python -m tests.fuzz_cuda --n $(N) --seed $(SEED)

bench: $(STAMP) compiled
	$(BIN)/python benchmarks/schedules_matter.py

clean:
	rm -rf .cache .pytest_cache
