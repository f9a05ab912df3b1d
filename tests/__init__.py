"""writeback's tests: one package, imported as ``tests.<dir>.<module>`` (the repo root is on sys.path).

Shared helpers live in ``tests.support`` (git repos, the CLI runner, services), the forge fakes in ``tests.fakes``,
the control plane in ``tests.controlplane`` and the real Flux controllers in ``tests.flux``.
"""
