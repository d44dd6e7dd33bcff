#!/usr/bin/env bash
# Sets up (packages, build) and runs the whole test suite: unit tests and the
# integration tests against the real daemon and real BPF. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure "$@"
