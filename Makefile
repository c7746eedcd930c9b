# galera-doe: `make demo` runs the main job, `make test` the whole suite; both set up first.
.PHONY: setup demo test test-fast lint serve worker

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/galera-doe demo

# Two workers: one runs the lab modules in order (one cluster), the other the rest beside it
# (tests/conftest.py: LabInOneUnit).
test: setup lint
	.venv/bin/pytest --numprocesses=2 --dist=loadscope --no-loadscope-reorder

# The inner loop: the pure and API tests (no lab cluster, no worker process), a few minutes.
test-fast:
	.venv/bin/pytest -m fast

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports

serve: setup
	.venv/bin/galera-doe serve

worker: setup
	.venv/bin/galera-doe worker
