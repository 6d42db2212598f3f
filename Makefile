# Thin wrapper over CMake/Ninja. `make` builds Release into build/; `make test` runs every
# test: the Release build, a ThreadSanitizer build, an ASan+UBSan build, and the Python
# suite; `make install PREFIX=...` installs headers, libraries, pkg-config and CMake files.
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Sanitizer builds run the same tests with less work each (check_scale in tests/check.h).
SANITIZER_TEST_SCALE ?= 0.2

CTEST = ctest --output-on-failure --no-tests=error -j $(JOBS)
SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

.PHONY: all build test test-release test-tsan test-asan format format-check install clean

all: build

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

test: format-check test-release test-tsan test-asan

test-release: build
	$(CTEST) --test-dir $(BUILD)

test-tsan:
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXALLOC_SANITIZE=thread $(CMAKE_ARGS)
	cmake --build build-tsan -j $(JOBS)
	TXALLOC_TEST_SCALE=$(SANITIZER_TEST_SCALE) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  $(CTEST) --test-dir build-tsan -LE slow

test-asan:
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXALLOC_SANITIZE=address,undefined $(CMAKE_ARGS)
	cmake --build build-asan -j $(JOBS)
	TXALLOC_TEST_SCALE=$(SANITIZER_TEST_SCALE) ASAN_OPTIONS="detect_leaks=1 abort_on_error=0" \
	  UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" $(CTEST) --test-dir build-asan -LE slow

format:
	clang-format -i $(SOURCES)

format-check:
	@command -v clang-format >/dev/null || { echo "clang-format is missing: apt-get install clang-format"; exit 1; }
	clang-format --dry-run --Werror $(SOURCES)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-tsan build-asan
