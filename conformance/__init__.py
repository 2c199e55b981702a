"""conformance: spec-derived cases at levels L0-L3 that any backend is run against (runner.py,
report.py, plugin.py; ``pto conformance``). See docs/architecture.md and the README."""
