"""What the PyTorch baselines (joint_propagation_torch.py, gaussian_torch.py) share: CUDA-event timing and their rows' output."""
import json
import sys

import torch


def time_ms(fn, iters=10, warmup=3):
    """The median of `iters` CUDA-event-timed calls of fn after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


class Rows:
    """Rows printed as they come (a run cut short keeps what it measured) and written to argv[1] at the end."""

    def __init__(self):
        self.rows = []

    def add(self, method, workload, batch, forward_ms, forward_backward_ms):
        row = {"method": method, "workload": workload, "batch": batch, "forward_ms": forward_ms,
               "forward_backward_ms": forward_backward_ms}
        print(json.dumps(row), flush=True)
        self.rows.append(row)

    def write(self):
        if len(sys.argv) > 1:
            with open(sys.argv[1], "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": self.rows},
                          f, indent=1)
