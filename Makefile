# The two commands of the README: `make serve` and `make test`. Both set up .venv first.
PY := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 5006
SCENARIO ?= default

.PHONY: setup serve run test test-fast test-busy lint bench docs clean kube-real

setup:
	@scripts/setup-venv.sh

## Serve the live dashboard on the default scenario at http://$(HOST):$(PORT)/app
serve: setup
	@echo "scalelab dashboard: http://$(HOST):$(PORT)/app  (Ctrl-C stops it)"
	$(PY) -m panel serve dashboard/app.py --address $(HOST) --port $(PORT) \
	  --allow-websocket-origin $(HOST):$(PORT) --allow-websocket-origin localhost:$(PORT) \
	  --check-unused-sessions 1000 --unused-session-lifetime 60000

## Run one scenario headless and print its summary
run: setup
	$(PY) -m engine run data/scenarios/$(SCENARIO).yaml --out out/$(SCENARIO)

## Real Kubernetes v1.20.2 (kube-apiserver, kube-scheduler, kubectl, etcd) for the kube_real tests: built once per
## machine into ~/.cache/scalelab/kube-v1.20.2 (8-13 min), reused after (about 1 s)
kube-real:
	@scripts/kube-real.sh build >/dev/null

## The whole suite: lint, unit/property/end-to-end tests, notebooks, browser tests (serially)
test: setup kube-real
	@scripts/ensure-chromium.sh
	$(PY) -m ruff check engine dashboard tests benchmarks docs/conf.py docs/_ext
	$(PY) -m ruff format --check engine dashboard tests benchmarks docs/conf.py docs/_ext
	.venv/bin/lint-imports --no-cache
	$(PY) -m pytest -p no:cacheprovider

test-fast: setup
	$(PY) -m pytest -p no:cacheprovider -m "not browser and not slow and not kube_real"

## The browser tests, one file at a time, with two CPU-bound processes beside them (a busy machine): they must still pass.
## A test's hang guard (pytest-timeout, 600 s) is tripled here: on a busy machine a long browser test is slow, not hung.
test-busy: setup
	@scripts/ensure-chromium.sh
	@$(PY) -c "while True: pass" & h1=$$!; $(PY) -c "while True: pass" & h2=$$!; \
	trap 'kill $$h1 $$h2' EXIT; status=0; \
	for f in tests/dashboard/*browser*.py tests/dashboard/test_smoke_serve.py; do \
	  $(PY) -m pytest -p no:cacheprovider -q -o timeout=1800 $$f || status=1; \
	done; exit $$status

lint: setup
	$(PY) -m ruff check engine dashboard tests benchmarks docs/conf.py docs/_ext
	$(PY) -m ruff format --check engine dashboard tests benchmarks docs/conf.py docs/_ext
	.venv/bin/lint-imports --no-cache

## Build the docs site offline into docs/_build/html (every page anew, warnings are errors; notebooks from their executed copies)
docs: setup
	$(PY) -m sphinx -E -W --keep-going -n -q -b html docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

bench: setup
	$(PY) benchmarks/engine_throughput.py --quick

clean:
	rm -rf .venv out test-artifacts .pytest_cache
