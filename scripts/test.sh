#!/usr/bin/env bash
# Sets up (packages, build; then what the tests need) and runs the whole test
# suite: unit tests, the integration tests against the real daemon and real
# BPF, and the Debian package's test (scripts/test-package.sh). Then the same suite
# again on build-asan, built with ASan and UBSan (-DOFFCPU_SANITIZE=ON), where
# any sanitizer report, leaks at exit included, fails the test that caused it.
# Arguments go to both ctest runs. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup-tests.sh
ctest --test-dir build --output-on-failure "$@"

cmake -S . -B build-asan -DOFFCPU_SANITIZE=ON -DOFFCPU_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "test: building build-asan (log: build-asan/build.log)"
cmake --build build-asan -j"$(nproc)" >build-asan/build.log 2>&1 || { cat build-asan/build.log; exit 1; }
# abort_on_error: a report ends the program with SIGABRT, so that no report
# passes for an exit status a test expects (offcpud's 1 is ASan's default).
# No strict_string_checks: it reports strndup() of an unterminated buffer,
# which is valid.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:check_initialization_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure "$@"

# The parsers of untrusted input under libFuzzer, ASan and UBSan, 20 s each
# (scripts/fuzz.sh; a crash fails the run and leaves its input in build-fuzz/).
scripts/fuzz.sh 20
