# Two commands do everything on a fresh machine:
#   make report   the main job (sized for a 2-core CPU), installs into .venv first
#   make test     the whole test suite, installs into .venv first
# CPU torch by default. A GPU user installs a CUDA build of torch into .venv first
# (or sets TORCH="torch==<version>" with a CUDA index configured for pip).

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
PY      = $(VENV)/bin/python
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: install report test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The default report also trains small MDMs and AR baselines (2gram, interval and the real-text lee-char-2gram);
# --progress prints one line per section and per long step when the output is not a terminal (a log, CI).
# How long it takes, measured, is stated once: validation/setup_text.py (README and the report read it).
report: install
	$(VENV)/bin/mdm-theory report --train --progress --jobs 2

test: install
	$(PY) -m pytest -n 2

# The speed targets, each printed as one JSON object with its reference measured in the same run.
bench: install
	$(VENV)/bin/mdm-theory bench forward-backward --states 32 --length 512 --batch 200 --mask-rate 0.5 --json
	$(VENV)/bin/mdm-theory bench forward-backward --states 256 --length 512 --batch 200 --mask-rate 0.5 --json
	$(VENV)/bin/mdm-theory bench forward-backward --language 4gram --length 512 --batch 200 --mask-rate 0.5 --json
	$(VENV)/bin/mdm-theory bench sweep --json

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache .hypothesis
