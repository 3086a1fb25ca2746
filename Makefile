# Claimgate: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test test-browser-stress install serve lint check conformance bench clean

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

## make test-browser-stress: the browser suite RUNS times (10) with every core kept busy by
## a bounded CPU load (stress-ng, else Python busy loops), stopped at the end; passes and
## failures per test in build/stress/report.txt (uses DATABASE_URL / CELERY_BROKER_URL)
RUNS ?= 10
test-browser-stress: install
	$(PY) tests/stress.py --runs $(RUNS) tests/browser

## make serve: web (gunicorn) + worker (celery) against real PostgreSQL and Redis
serve: export DJANGO_SETTINGS_MODULE ?= config.settings.production
serve: install
	test -n "$$DATABASE_URL" && test -n "$$CELERY_BROKER_URL" && test -n "$$CACHE_URL" && \
	  test -n "$$SECRET_KEY" || \
	  (echo "make serve needs DATABASE_URL, CELERY_BROKER_URL, CACHE_URL and SECRET_KEY"; exit 2)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput
	$(VENV)/bin/honcho start -f Procfile

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
