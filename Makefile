# Claimgate: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test test-seeds test-browser-stress install migrate serve lint check conformance bench clean

# Quiet: setuptools' notes about editable installs are noise before the demo's logins
# (errors still print).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

## make demo: SQLite, Celery eager, demo studies and users, served on 127.0.0.1:8000
demo: install
	DJANGO_SETTINGS_MODULE=config.settings.dev $(PY) manage.py migrate --noinput -v 0
	DJANGO_SETTINGS_MODULE=config.settings.dev $(PY) manage.py load_demo
	DJANGO_SETTINGS_MODULE=config.settings.dev $(PY) manage.py runserver 127.0.0.1:8000

## make test: the whole suite (uses DATABASE_URL / CELERY_BROKER_URL when set)
test: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

## make test-seeds: the suite without browsers once per queue seed (SEEDS); a test that
## relies on which unit a seeded queue hands out first fails under some of them
SEEDS ?= 1 2 3 4
test-seeds: install
	for seed in $(SEEDS); do \
	  echo "queue seed $$seed"; \
	  CLAIMGATE_TEST_QUEUE_SEED=$$seed $(PY) -m pytest -q -m "not browser" || exit 1; \
	done

## make test-browser-stress: the browser suite RUNS times (10) with every core kept busy by
## a bounded CPU load (stress-ng, else Python busy loops), stopped at the end; passes and
## failures per test in build/stress/report.txt (uses DATABASE_URL / CELERY_BROKER_URL)
RUNS ?= 10
test-browser-stress: install
	$(PY) tests/stress.py --runs $(RUNS) tests/browser

## make migrate: as the tables' owner (MIGRATE_DATABASE_URL) apply the migrations, then set
## up the app's own login (the user of DATABASE_URL) with manage.py db_app_role: it owns no
## table and may not UPDATE/DELETE history nor TRUNCATE anything (docs/guide-admin.md).
## (In `DATABASE_URL="$$MIGRATE_DATABASE_URL" … --app-url "$$DATABASE_URL"` the argument is
## still the app's URL: the shell expands it before the assignment takes effect.)
migrate: export DJANGO_SETTINGS_MODULE ?= config.settings.production
migrate: install
	test -n "$$MIGRATE_DATABASE_URL" && test -n "$$DATABASE_URL" || \
	  (echo "make migrate needs MIGRATE_DATABASE_URL (the tables' owner) and DATABASE_URL (the app's login)"; exit 2)
	DATABASE_URL="$$MIGRATE_DATABASE_URL" $(PY) manage.py migrate --noinput
	DATABASE_URL="$$MIGRATE_DATABASE_URL" $(PY) manage.py db_app_role --app-url "$$DATABASE_URL"

## make serve: web (gunicorn) + worker (celery) against real PostgreSQL and Redis, as the
## app's own login (DATABASE_URL) after `make migrate` as the owner (MIGRATE_DATABASE_URL)
serve: export DJANGO_SETTINGS_MODULE ?= config.settings.production
serve: install
	test -n "$$DATABASE_URL" && test -n "$$MIGRATE_DATABASE_URL" && test -n "$$CELERY_BROKER_URL" && \
	  test -n "$$CACHE_URL" && test -n "$$SECRET_KEY" || \
	  (echo "make serve needs DATABASE_URL, MIGRATE_DATABASE_URL, CELERY_BROKER_URL, CACHE_URL and SECRET_KEY"; exit 2)
	$(MAKE) --no-print-directory migrate
	$(PY) manage.py collectstatic --noinput
	# The processes get the app's login only, never the owner's.
	env -u MIGRATE_DATABASE_URL $(VENV)/bin/honcho start -f Procfile

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports

conformance: install
	$(PY) -m audit.conformance --out build/conformance

bench: install
	$(PY) bench/checker.py --write

clean:
	rm -rf build .pytest_cache claimgate.sqlite3
