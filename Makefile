# Thin wrapper over CMake/Ninja. `make` builds Release into build/; `make test` runs every
# test: the Release build, a ThreadSanitizer build, an ASan+UBSan build, and the Python
# suite; `make install PREFIX=...` installs headers, libraries, pkg-config and CMake files.
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Sanitizer builds run the same tests with less work each (check_scale in tests/check.h).
# Both skip the tests labelled `slow`; the TSan run also skips those labelled `nothreads`
# (single-threaded: no race to find; the ASan+UBSan run has them). tests/CMakeLists.txt
# describes the labels.
SANITIZER_TEST_SCALE ?= 0.2

CTEST = ctest --output-on-failure --no-tests=error -j $(JOBS)
SOURCES = $(shell git ls-files '*.c' '*.h' '*.cc' 2>/dev/null)

# The study harness (python/): a virtual environment with the `txalloc` CLI and its
# dependencies from PyPI at the versions pinned in python/constraints.txt, rebuilt only when
# python/pyproject.toml or the constraints change.
VENV       ?= .venv
PYTHON3    ?= python3
VENV_STAMP  = $(VENV)/.installed

.PHONY: all build test test-c test-release test-tsan test-asan test-python venv study format format-check install clean

all: build
	@$(MAKE) --no-print-directory venv || echo "make: $(VENV) could not be built (is PyPI reachable?); 'make study' needs it"

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# `make test`: the format check and the Release build, then two lanes at once: the ctest runs
# of the Release, TSan and ASan+UBSan builds one after another (each uses every core), and
# the Python suite (one core; it reads only the Release build). The C lane prints as it
# goes, the Python suite's output comes in one piece when it ends; either failing fails.
test: format-check build
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-c test-python

# -Onone: the C lane's sub-makes print as they go (the outer make syncs only whole targets).
test-c:
	@$(MAKE) --no-print-directory -Onone test-release
	@$(MAKE) --no-print-directory -Onone test-tsan
	@$(MAKE) --no-print-directory -Onone test-asan

test-release: build
	$(CTEST) --test-dir $(BUILD)

test-tsan:
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXALLOC_SANITIZE=thread $(CMAKE_ARGS)
	cmake --build build-tsan -j $(JOBS)
	TXALLOC_TEST_SCALE=$(SANITIZER_TEST_SCALE) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  $(CTEST) --test-dir build-tsan -LE 'slow|nothreads'

test-asan:
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXALLOC_SANITIZE=address,undefined $(CMAKE_ARGS)
	cmake --build build-asan -j $(JOBS)
	TXALLOC_TEST_SCALE=$(SANITIZER_TEST_SCALE) ASAN_OPTIONS="detect_leaks=1 abort_on_error=0" \
	  UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" $(CTEST) --test-dir build-asan -LE slow

venv: $(VENV_STAMP)

$(VENV_STAMP): python/pyproject.toml python/constraints.txt
	$(PYTHON3) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c python/constraints.txt -e 'python[test]'
	touch $@

# Lint and format check first (ruff, configured in python/pyproject.toml), then the tests.
test-python: venv
	$(VENV)/bin/ruff check python
	$(VENV)/bin/ruff format --check python
	$(VENV)/bin/python -m pytest -q python/tests

# The README's main command: builds what is missing, adds missing peer allocators when it
# can (root + apt-get; otherwise says how), runs the default study, prints the report path.
study: build venv
	$(VENV)/bin/txalloc study default --install-peers --build-dir $(BUILD)

format:
	clang-format -i $(SOURCES)

format-check:
	@command -v clang-format >/dev/null || { echo "clang-format is missing: apt-get install clang-format"; exit 1; }
	clang-format --dry-run --Werror $(SOURCES)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-tsan build-asan
