# Developer shortcuts. Uses the tools in .venv when it exists (bash scripts/test.sh makes it),
# otherwise whatever is on PATH.
.DEFAULT_GOAL := help
.PHONY: help proto vectors lint typecheck test bench compile uncompile

BIN := $(if $(wildcard .venv/bin/python),.venv/bin/,)
PYTHON := $(if $(BIN),$(BIN)python,python3)
# The same, usable from another directory.
PYTHON_ABS := $(if $(BIN),$(abspath $(BIN)python),python3)

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

proto: ## Regenerate sdk/flipflop/_proto/ from proto/ (commit the result)
	$(PYTHON) scripts/gen_protos.py

vectors: ## Regenerate proto/testdata/decision_vectors.json from the engine (commit the result)
	$(PYTHON) scripts/gen_vectors.py

lint: ## Check lint and formatting with ruff, and the import contracts (docs/architecture.md)
	$(BIN)ruff check
	$(BIN)ruff format --check
	$(BIN)lint-imports

typecheck: ## Type-check with mypy --strict (each bundled bot on its own: all are bot.py)
	$(BIN)mypy
	@for f in bots/*/bot.py; do $(BIN)mypy "$$f" || exit 1; done

test: ## Run the test suite
	$(PYTHON) -m pytest

bench: ## Run every benchmarks/*.py
	@for script in benchmarks/*.py; do \
		[ -e "$$script" ] || continue; \
		echo "== $$script"; \
		$(PYTHON) "$$script" || exit 1; \
	done

compile: ## Compile the engine with mypyc, in place (needs a C compiler; docs/engine.md)
	cd sdk && FLIPFLOP_COMPILE=1 $(PYTHON_ABS) setup.py -q build_ext --inplace
	@$(PYTHON) -c "import flipflop; print('flipflop.COMPILED =', flipflop.COMPILED)"

uncompile: ## Remove the compiled engine: back to the pure-Python modules
	rm -f sdk/flipflop/*.so
	rm -rf sdk/build
	@$(PYTHON) -c "import flipflop; print('flipflop.COMPILED =', flipflop.COMPILED)"
