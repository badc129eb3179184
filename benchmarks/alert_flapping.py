"""How often a rule flaps on a steady load (issue 21 item 3): a replay, no server.

Issue 21 saw ``HighFanout`` (``outgoing_messages_per_second > 3000 for 10 s``) log 17 firing, 49
pending and 48 resolved events in 20 minutes of a steady ~4,500 deliveries/s, because a late
sampler tick counted everything since the previous tick as one second (rates read 393 … 12,893).

This replays ``--minutes`` of such a load: ticks one second apart, a share ``--late`` of them late
by 0.5–1.9 s (the next one early by as much), deliveries ``--rate``/s with 2 % noise. Each tick
gives two rates: the *naive* one (the tick's count as one second, as before item 1) and the
*elapsed* one (the count over the real time between ticks). Both series go through

* ``reference``: the condition on each sample, pending → firing after it held ``for`` seconds,
  resolved at the first sample that does not hold (the evaluator before this change);
* ``windowed``: ``admin_api.alerting.Evaluator`` (average over ``for`` seconds, hysteresis with
  the default clear threshold and ``clear_for`` = ``for``), and with ``--clear-threshold``.

Prints one JSON line per (series, evaluator): the events by state.

    .venv/bin/python benchmarks/alert_flapping.py --minutes 20 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from dataclasses import dataclass, replace
from itertools import pairwise

from pushgrid.admin_api.alerting import Evaluator, Rule

KEY = ("outgoing_messages_per_second", "current", "current")


def ticks(seconds: int, late: float, rng: random.Random) -> list[float]:
    """Tick instants: whole seconds, some late (the next tick is on time again)."""
    return [
        i + (rng.uniform(0.5, 1.9) if rng.random() < late else rng.gauss(0, 0.02))
        for i in range(seconds)
    ]


def rates(times: list[float], rate: float, rng: random.Random) -> tuple[list[float], list[float]]:
    naive, elapsed = [], []
    for before, now in pairwise(times):
        span = max(now - before, 0.01)
        count = rate * span * (1 + rng.gauss(0, 0.02))
        naive.append(count)  # one tick counted as one second
        elapsed.append(count / span)
    return naive, elapsed


@dataclass
class Reference:
    """The evaluator before windowed evaluation: each sample decides."""

    threshold: float
    for_seconds: float
    state: str = "inactive"
    since: float = 0.0

    def step(self, value: float, now: float) -> str | None:
        if value > self.threshold:
            if self.state == "inactive":
                self.state, self.since = "pending", now
                return "pending"
            if self.state == "pending" and now - self.since >= self.for_seconds:
                self.state = "firing"
                return "firing"
            return None
        if self.state == "inactive":
            return None
        self.state = "inactive"
        return "resolved"


def replay_reference(values: list[float], times: list[float], rule: Rule) -> Counter[str]:
    ref = Reference(rule.threshold, rule.for_seconds)
    return Counter(e for v, t in zip(values, times, strict=False) if (e := ref.step(v, t)))


def replay_windowed(values: list[float], times: list[float], rule: Rule) -> Counter[str]:
    ev = Evaluator()
    return Counter(
        c.state
        for v, t in zip(values, times, strict=False)
        for c in ev.evaluate([rule], {"m1": {KEY: v}}, t)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--rate", type=float, default=4500)
    parser.add_argument("--late", type=float, default=0.1, help="share of late ticks")
    parser.add_argument("--threshold", type=float, default=3000)
    parser.add_argument("--for", dest="for_seconds", type=float, default=10)
    parser.add_argument("--clear-threshold", type=float, default=2700)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    times = ticks(int(args.minutes * 60), args.late, rng)
    naive, elapsed = rates(times, args.rate, rng)
    rule = Rule(
        1,
        "HighFanout",
        KEY[0],
        "current",
        "max",
        ">",
        args.threshold,
        args.for_seconds,
        "warning",
        "cluster",
    )
    banded = replace(rule, clear_threshold=args.clear_threshold)
    for series, values in (("naive", naive), ("elapsed", elapsed)):
        at = times[1:]
        for name, counts in (
            ("reference", replay_reference(values, at, rule)),
            ("windowed", replay_windowed(values, at, rule)),
            ("windowed+clear_threshold", replay_windowed(values, at, banded)),
        ):
            print(
                json.dumps(
                    {
                        "series": series,
                        "evaluator": name,
                        "minutes": args.minutes,
                        "min": round(min(values)),
                        "max": round(max(values)),
                        **dict(counts),
                    }
                )
            )


if __name__ == "__main__":
    main()
