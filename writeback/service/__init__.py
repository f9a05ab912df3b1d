"""Service mode: the scheduler, metrics and health, structured logs, hotfix capture and Lease sharding.

Sits between the CLI and the pipeline: ``writeback run --config FILE`` without ``--once`` calls
``writeback.service.serving.serve``.
"""
