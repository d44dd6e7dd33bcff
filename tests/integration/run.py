"""Runs the integration tests, or exits 77 (ctest: skipped) with the reason
when this host cannot run BPF programs at all."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if os.geteuid() != 0:
    print("skipped: the integration tests load BPF programs and need root")
    sys.exit(77)
if not os.path.exists("/sys/kernel/btf/vmlinux"):
    print("skipped: this kernel has no BTF (/sys/kernel/btf/vmlinux)")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
loader = unittest.defaultTestLoader
suite = loader.loadTestsFromNames(sys.argv[1:]) if sys.argv[1:] else loader.discover(here, "test_*.py")
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
