#!/usr/bin/env python3
"""Checks from the workers' logs that no training example was trained twice or skipped per epoch
across a chief restart.

Usage: data_order_check.py SAVED_POSITIONS_JSON FINAL_POSITIONS_JSON SPLIT_FILE WORKER_LOG...
  SAVED_POSITIONS_JSON: data_positions.json of the checkpoint the restarted chief resumed from.
  FINAL_POSITIONS_JSON: data_positions.json of the job's last checkpoint.
  SPLIT_FILE: per worker log, "LOG LINE": the first line of that log written for the restarted
  chief (its "configured" line); closures logged before it belong to the first chief.
Each worker logs one line per closure: "closure C: data part P batches A..B examples by epoch
E:N[,E:N] (S per epoch)". A first-chief closure counts when it ends before the saved position of
its part (its update is in the checkpoint); one that starts at or after it was rolled back with
the restore; one that straddles it is an error. Every restarted-chief closure counts. The counted
batches of each part must tile [0, final position) exactly once, and each epoch of a part that
was finished must have trained exactly S examples (each example once: a batch position names the
same examples on every worker)."""
import collections
import json
import re
import sys

LINE = re.compile(r"closure \d+: data part (\d+) batches (\d+)\.\.(\d+) examples by epoch (\S+) \((\d+) per epoch\)")


def main():
    saved = json.load(open(sys.argv[1]))["positions"]
    final = json.load(open(sys.argv[2]))["positions"]
    split = {}
    for line in open(sys.argv[3]):
        log, at = line.split()
        split[log] = int(at)
    ranges = collections.defaultdict(list)  # part -> [(first, last)]
    epochs = collections.defaultdict(int)  # (part, epoch) -> examples
    per_epoch = {}
    rolled_back = 0
    for log in sys.argv[4:]:
        for number, line in enumerate(open(log, errors="replace"), start=1):
            m = LINE.search(line)
            if not m:
                continue
            part, first, last = int(m.group(1)), int(m.group(2)), int(m.group(3))
            per_epoch[part] = int(m.group(5))
            if number < split[log]:  # the first chief's
                if last < saved[part]:
                    pass
                elif first >= saved[part]:
                    rolled_back += 1
                    continue
                else:
                    sys.exit(f"FAIL: {log}:{number}: batches {first}..{last} straddle part {part}'s saved position "
                             f"{saved[part]}")
            ranges[part].append((first, last))
            if m.group(4) != "none":
                for item in m.group(4).split(","):
                    e, n = item.split(":")
                    epochs[(part, int(e))] += int(n)
    for part, end in enumerate(final):
        covered = sorted(ranges[part])
        at = 0
        for first, last in covered:
            if first != at:
                kind = "trained twice" if first < at else "skipped"
                sys.exit(f"FAIL: part {part}: batches from {min(first, at)} {kind} (next closure starts at {first}, "
                         f"expected {at})")
            at = last + 1
        if at != end:
            sys.exit(f"FAIL: part {part}: trained batches 0..{at - 1}, the final position is {end}")
        full_epochs = [e for (p, e) in epochs if p == part]
        last_epoch = max(full_epochs)
        for e in range(last_epoch):  # every finished epoch of this part
            if epochs[(part, e)] != per_epoch[part]:
                sys.exit(f"FAIL: part {part} epoch {e}: {epochs[(part, e)]} examples trained, the part has "
                         f"{per_epoch[part]}")
    print(f"data order ok: parts {len(final)}, final positions {final}, resumed at {saved}, "
          f"{rolled_back} closures of the first chief rolled back with the restore, "
          f"every finished epoch of every part trained each example once")


if __name__ == "__main__":
    main()
