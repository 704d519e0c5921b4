"""A machine's speed index: how fast this machine runs the kind of work the course does.

    python -m tools.speed_index      # prints the index and the workload's seconds (about 5 s)

Machines of one kind differ two to three times in speed, so a timing means little without
the speed of the machine it was taken on. The workload is fixed for good and uses nothing of
``helpers`` (a change to the course must not change the yardstick): on one PyTorch thread,
SGD on a plain 20-layer ReLU MLP of width 32 with batches of 128, the size of the course's
nets, where the time goes into per-operation overhead as much as into arithmetic.

``index = REFERENCE_S / seconds``: 1.0 on the reference machine (the 2-core AMD EPYC of
2026-11-25 on which the budgets were set), 2.0 on a machine twice as fast. A time measured
here times the index is the time the reference machine would take (``normalised``); every
budget in ``tools/benchmark.py`` is stated in reference seconds, so a record from a fast
machine cannot hide a regression, and a slow machine does not look like one.
"""

from __future__ import annotations

import platform
import time

REFERENCE_S = 0.75  # the workload's best-of-five seconds on the reference machine
STEPS = 300
REPEATS = 5


def workload_seconds(clock=time.perf_counter) -> float:
    """Seconds of one run of the fixed workload (see the module's docstring), best of five, by
    ``clock``: wall-clock time, or with ``time.process_time`` the CPU time, which another
    process loading the machine does not lengthen."""
    import torch
    from torch import nn

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = float("inf")
        for _ in range(REPEATS):
            generator = torch.Generator().manual_seed(0)
            layers = []
            for _ in range(20):
                layers += [nn.Linear(32, 32), nn.ReLU()]
            net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), *layers, nn.Linear(32, 10))
            with torch.no_grad():
                for p in net.parameters():
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.2)
            x = torch.randn(1024, 64, generator=generator)
            y = torch.randint(0, 10, (1024,), generator=generator)
            optimiser = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
            start = clock()
            for step in range(STEPS):
                rows = slice(128 * (step % 8), 128 * (step % 8 + 1))
                loss = nn.functional.cross_entropy(net(x[rows]), y[rows])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
            best = min(best, clock() - start)
        return best
    finally:
        torch.set_num_threads(before)


def speed_index(seconds: float | None = None) -> float:
    """``REFERENCE_S / seconds`` of the workload (measured now unless given)."""
    seconds = workload_seconds() if seconds is None else seconds
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return REFERENCE_S / seconds


def normalised(seconds: float, index: float) -> float:
    """``seconds`` measured on a machine of speed ``index``, as reference-machine seconds."""
    return seconds * index


def machine() -> dict:
    """What the machine is: processor, PyTorch's CPU capability, cores, Python, and its speed."""
    import torch

    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:
        pass
    from helpers.parallel import available_cores

    seconds = workload_seconds()
    return {"processor": model, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cores": available_cores(), "python": platform.python_version(), "system": platform.platform(),
            "speed_workload_s": round(seconds, 3), "speed_index": round(speed_index(seconds), 3)}


if __name__ == "__main__":
    info = machine()
    print(f"speed index {info['speed_index']:.2f} (the workload took {info['speed_workload_s']:.2f} s; "
          f"reference {REFERENCE_S} s) on {info['processor']}, {info['torch_cpu_capability']}, {info['cores']} cores")
