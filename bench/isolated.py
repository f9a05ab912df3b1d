"""Run one command in a process of its own and report its resource use: the launcher of ``measuring.run_process``.

    python3 -I -S bench/isolated.py FD COMMAND [ARG ...]

Why a launcher: on Linux a child's ``ru_maxrss`` is at least the resident peak of the memory it was forked from,
because ``exec`` folds the old address space's high-water mark into the process's maximum. A benchmark harness
holding 70 MiB (or a whole world's worth) that spawns a command directly would report at least that much for it,
however little the command itself uses. This launcher is a fresh, minimal Python (``-I -S``: no site, about
9 MiB resident), so the command it spawns starts from the launcher's small address space, and its peak RSS is
exact whenever it is larger than the launcher's (every Python process is: ``python -c pass`` peaks at ~13 MiB).

The command inherits the launcher's environment, working directory, standard streams and exit; the launcher
writes one JSON object to file descriptor FD when the command has exited: wall seconds (spawn to exit), user and
system CPU seconds and peak RSS (KiB) of the command and its waited-for children (``os.wait4``), its exit code,
and the launcher's own peak RSS (KiB), below which a peak cannot be told apart from the launcher's.
"""

import json
import os
import sys
import time


def _own_peak_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    fd, cmd = int(sys.argv[1]), sys.argv[2:]
    if not cmd:
        raise SystemExit("usage: isolated.py FD COMMAND [ARG ...]")
    os.set_inheritable(fd, False)  # the command must not hold the result pipe open
    own = _own_peak_kib()
    t0 = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, dict(os.environ))
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    result = {
        "wall": wall,
        "utime": usage.ru_utime,
        "stime": usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
        "returncode": os.waitstatus_to_exitcode(status),
        "launcher_kib": own,
    }
    os.write(fd, json.dumps(result).encode())
    os.close(fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
