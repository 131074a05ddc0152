"""A bot program that misbehaves on purpose: ``python3 hostile_bot.py MODE``.

It speaks the text protocol well enough to be seated, then does what its mode says:

* ``honest``: the first legal action that is not ``concede`` (the control);
* ``garbage``: answers that are not actions; ``illegal``: well-formed, never legal;
* ``padded``: a legal action followed by a hundred spaces (longer than any action);
* ``stall``: reads everything, answers nothing;
* ``late``: its first answer comes after ``LATE_S`` seconds, the others at once;
* ``die``: two answers, a last word on stderr, then exit code 3; ``killed``: SIGKILL itself;
* ``flood``: lines nobody asked for, as fast as it can, never reading;
* ``oversize``: a line of 2 MiB;
* ``badhello``: a hello in a version nobody speaks; ``nohello``: says nothing at all;
* ``early-exit``: a last word on stderr and exit code 1 before its hello;
* ``stderr``: plays like ``honest`` while writing megabytes on its standard error.
"""

from __future__ import annotations

import os
import signal
import sys
import time

#: One and a half times the decision time of its case (2 s): the gateway adds to a deadline
#: the time it was itself late (sixteen matches share one event loop here), and that must
#: not cover the sleep; the next request still finds the program awake in time.
LATE_S = 3.0


def requests() -> object:
    """Each request's legal actions, events skipped; ends at ``bye`` or end of input."""
    while True:
        line = sys.stdin.readline()
        if not line or line.startswith("bye"):
            return
        words = line.split()
        if words and words[0] in ("request", "event"):
            fields = {}
            for _ in range(int(words[-1])):
                key, _, value = sys.stdin.readline().rstrip("\n").partition(" ")
                fields[key] = value
            if words[0] == "request":
                yield fields["legal"].split(",")


def answer(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def first(legal: list[str]) -> str:
    return next((a for a in legal if a != "concede"), legal[0])


def main(mode: str) -> int:
    if mode == "nohello":
        time.sleep(3600)
        return 0
    if mode == "early-exit":
        print("cannot load my model", file=sys.stderr, flush=True)
        return 1
    answer("hello 7" if mode == "badhello" else "hello 1 events=all")
    if mode == "flood":
        while True:
            answer("flood")
    if mode == "oversize":
        sys.stdout.write("x" * (2 << 20))
        sys.stdout.flush()
        time.sleep(3600)
    for count, legal in enumerate(requests(), start=1):  # type: ignore[attr-defined]
        if mode == "garbage":
            answer("fly me to the moon")
        elif mode == "illegal":
            answer("bid 995")
        elif mode == "padded":
            answer(first(legal) + " " * 100)
        elif mode == "stall":
            continue
        elif mode == "late":
            if count == 1:
                time.sleep(LATE_S)
            answer(first(legal))
        elif mode in ("die", "killed") and count > 2:
            print("dying now", file=sys.stderr, flush=True)
            if mode == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            return 3
        else:
            if mode == "stderr":
                sys.stderr.write(("noise " * 170 + "\n") * 1000)  # a megabyte a decision
                sys.stderr.flush()
            answer(first(legal))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
