"""The PyTorch peer of `neuroburst bench` (docs/performance.md): the standard workload W(N, K, rho)
as a 30-line event-driven loop (index_add_ over the fired rows' targets), one host round trip a
burst (the injection up, the motor area's fired ids down), timed like the bench: back to back, so
each figure is a burst period. Prints one JSON object.

    python3 examples/peers/pytorch_event_loop.py --neurons 1000000
"""

import argparse
import json
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--neurons", type=int, default=100_000)
ap.add_argument("--fanout", type=int, default=100)
ap.add_argument("--rate", type=float, default=0.01)
ap.add_argument("--bursts", type=int, default=1000)
ap.add_argument("--warmup", type=int, default=100)
a = ap.parse_args()
n, k, dev = a.neurons, a.fanout, "cuda"
thr = 20.0 * k * a.rate
torch.manual_seed(1)
targets = torch.randint(0, n, (n, k), device=dev, dtype=torch.int32)
ones = torch.ones(n * k // 10 + k, device=dev)
v, acc = torch.zeros(n, device=dev), torch.zeros(n, device=dev)
# the injections, ready-made on the host (as the bench's): about rho * N ids a burst, 64 of them cycled
gen = torch.Generator().manual_seed(7)
injections = [torch.nonzero(torch.rand(n, generator=gen) < a.rate).squeeze(1).pin_memory() for _ in range(64)]
motor, times = n // 100, []
for b in range(a.warmup + a.bursts):
    t0 = time.perf_counter()
    inj = injections[b % len(injections)].to(dev, non_blocking=True)
    x = v + acc
    x.index_fill_(0, inj, thr)
    fired_mask = x >= thr
    v = torch.where(fired_mask, torch.zeros_like(x), x * 0.9)
    fired = torch.nonzero(fired_mask).squeeze(1)
    acc.zero_()
    tg = targets[fired].flatten().long()
    acc.index_add_(0, tg, ones[: tg.numel()])
    out = fired[fired < motor].cpu()
    if b >= a.warmup:
        times.append((time.perf_counter() - t0) * 1e6)
times.sort()
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
events = a.rate * n * k
print(json.dumps({"peer": f"pytorch {torch.__version__}", "device": torch.cuda.get_device_name(), "neurons": n, "fanout": k,
                  "p50_us": round(p(0.5), 1), "p99_us": round(p(0.99), 1), "events_per_s": events / (p(0.5) * 1e-6)}))
