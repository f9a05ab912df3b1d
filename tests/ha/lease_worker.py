"""A replica for the Lease tests: runs writeback's LeaseCoordinator against a real API server.

One thread per target loops: take a run guard, log ``start``, "work" in small steps checking ``still_leader()``
between them (the safe points), log ``stop``. Log lines are JSON, appended with one write() each to a shared file.
SIGTERM stops it gracefully (the coordinator hands its Leases back).

    python lease_worker.py --kubeconfig K --namespace NS --identity a --targets t0,t1 --lease-seconds 3 --log F
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time

from kubernetes import config

from writeback.service.sharding import LeaseCoordinator


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--identity", required=True)
    parser.add_argument("--targets", required=True)
    parser.add_argument("--lease-seconds", type=float, default=3)
    parser.add_argument("--work-seconds", type=float, default=0.6)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format=f"{args.identity} %(asctime)s %(message)s")

    fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(event: str, target: str) -> None:
        line = json.dumps({"replica": args.identity, "event": event, "target": target, "t": time.time()})
        os.write(fd, (line + "\n").encode())

    api = config.new_client_from_config(config_file=args.kubeconfig)
    coordinator = LeaseCoordinator.connect(
        api_client=api,
        namespace=args.namespace,
        targets=args.targets.split(","),
        identity=args.identity,
        lease_seconds=args.lease_seconds,
    )
    stopping = threading.Event()

    def work(target: str) -> None:
        while not stopping.is_set():
            guard = coordinator.begin(target)
            if guard is None:
                time.sleep(0.05)
                continue
            with guard:
                record("start", target)
                until = time.monotonic() + args.work_seconds
                while time.monotonic() < until and guard.still_leader():
                    time.sleep(0.05)  # one stage of the pipeline; still_leader() is the safe point
                record("stop", target)
            time.sleep(0.02)

    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    coordinator.start()
    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in coordinator.targets]
    for w in workers:
        w.start()
    stopping.wait()
    coordinator.stop(grace_seconds=10)  # runs see still_leader() False and stop; then the Leases are released
    for w in workers:
        w.join(timeout=10)
    record("exit", "-")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
