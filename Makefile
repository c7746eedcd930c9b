# galera-doe: `make demo` runs the main job, `make test` the whole suite; both set up first.
.PHONY: setup demo test lint serve worker

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/galera-doe demo

test: setup lint
	.venv/bin/pytest

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports

serve: setup
	.venv/bin/galera-doe serve

worker: setup
	.venv/bin/galera-doe worker
