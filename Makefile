# One-command set-up: every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch's CPU build: PyPI's torch is the multi-GB CUDA one. An extra index (the configured one stays), so pip
# takes 2.13.0+cpu (a local version sorts above 2.13.0) and still finds a local wheel when offline. torch alone
# (--no-deps) asks that index: its dependencies come with requirements.txt from the configured index, so an
# unreachable extra index costs one lookup's retries, not one per dependency.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install test test-all demo bench clean

$(STAMP): requirements.txt pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-deps --retries 1 --extra-index-url $(TORCH_INDEX) "$$(grep '^torch==' requirements.txt)"
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet -e '.[all,test]'  # every extra (the pins above satisfy them), so the suite tests each path
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)  # the suite without the tests marked slow (CI: .ci/run)
	$(BIN)/python -m pytest -q -m "not slow" tests

test-all: $(STAMP)  # every test, the slow end-to-end runs included
	$(BIN)/python -m pytest -q tests

demo: $(STAMP)
	$(BIN)/python -m synthformer.cli.demo

clean:
	rm -rf $(VENV) .pytest_cache
