#!/usr/bin/env python3
"""Checks that a set of TF_CONFIG documents, one per process, describes one consistent cluster.

    tf_config_check.py consistent DIR       DIR/<host>.json, one TF_CONFIG per process
    tf_config_check.py compose RENDERED OUT  writes OUT/<service>.json from `docker-compose config`
    tf_config_check.py compose-ops RENDERED  checks health checks, restarts, metrics ports and labels

`consistent` requires: every document has the same "cluster"; every task of the cluster is the
"task" of exactly one document; the address of a document's own task has the document's name as
its first DNS label (the service, pod or host name the process runs as). It prints one line per
problem and exits 1 when there is any. pstrain's own parser is run on each file by the caller.
"""
import json
import os
import sys


def load_dir(directory):
    docs = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                docs[name[: -len(".json")]] = json.load(f)
    return docs


def addresses(cluster, job):
    """The job's addresses by task index (TF_CONFIG allows lists and sparse maps)."""
    tasks = cluster.get(job, [])
    if isinstance(tasks, dict):
        return {int(i): a for i, a in tasks.items()}
    return dict(enumerate(tasks))


def check_consistent(docs):
    problems = []
    if not docs:
        return ["no TF_CONFIG documents found"]
    first_name, first = next(iter(docs.items()))
    cluster = first.get("cluster", {})
    wanted = {(job, i) for job in cluster for i in addresses(cluster, job)}
    seen = {}
    for name, doc in docs.items():
        if doc.get("cluster") != cluster:
            problems.append(f"{name}: its cluster differs from {first_name}'s")
        task = doc.get("task", {})
        key = (task.get("type"), int(task.get("index", -1)))
        if key in seen:
            problems.append(f"{name}: task {key[0]}:{key[1]} is also the task of {seen[key]}")
        seen[key] = name
        own = addresses(cluster, key[0]).get(key[1])
        if own is None:
            problems.append(f"{name}: task {key[0]}:{key[1]} is not in the cluster")
        elif own.rsplit(":", 1)[0].split(".")[0] != name:
            problems.append(f"{name}: its own address {own} names another host")
    for job, i in sorted(wanted - set(seen)):
        problems.append(f"task {job}:{i} ({addresses(cluster, job)[i]}) is run by no process")
    return problems


def write_compose_tf_configs(rendered, out_dir):
    import yaml  # python3-yaml, a dependency of docker-compose

    with open(rendered) as f:
        services = yaml.safe_load(f)["services"]
    for name, service in services.items():
        env = service.get("environment") or {}
        if "TF_CONFIG" not in env:
            print(f"{name}: no TF_CONFIG in its environment")
            return 1
        with open(os.path.join(out_dir, f"{service.get('hostname', name)}.json"), "w") as f:
            f.write(env["TF_CONFIG"])
    return 0


def check_compose_ops(rendered):
    """Every service: a `pstrain health localhost:<port>` healthcheck, --metrics_port equal to its
    prometheus.io/port label with prometheus.io/scrape "true"; ps and workers restart on failure
    only (a done job's tasks exit 0 and stay down), the chief never;
    the chief waits for every other service to be healthy. Prints one line per problem."""
    import yaml

    with open(rendered) as f:
        services = yaml.safe_load(f)["services"]
    problems = []
    for name, s in services.items():
        test = (s.get("healthcheck") or {}).get("test") or []
        if test[:3] != ["CMD", "pstrain", "health"] or not test[3].startswith("localhost:"):
            problems.append(f"{name}: healthcheck is not `pstrain health localhost:PORT`: {test}")
        labels = s.get("labels") or {}
        port = str(labels.get("prometheus.io/port", ""))
        if labels.get("prometheus.io/scrape") != "true" or labels.get("prometheus.io/path") != "/metrics":
            problems.append(f"{name}: missing prometheus.io/scrape or /path labels: {labels}")
        if f"--metrics_port={port}" not in (s.get("command") or []):
            problems.append(f"{name}: its command has no --metrics_port={port} (the label's port)")
        # A done job's ps and workers exit 0 and stay down (on-failure), so `up` returns; the
        # chief's exit status is the job's, never restarted.
        want = "no" if name == "chief" else "on-failure"
        if str(s.get("restart", "no")) != want:
            problems.append(f"{name}: restart is {s.get('restart')}, expected {want}")
    depends = (services.get("chief") or {}).get("depends_on") or {}
    for name in services:
        if name != "chief" and (depends.get(name) or {}).get("condition") != "service_healthy":
            problems.append(f"chief: does not wait for {name} to be healthy")
    return problems


def main(argv):
    if len(argv) == 3 and argv[1] == "compose-ops":
        problems = check_compose_ops(argv[2])
        for p in problems:
            print(p)
        return 1 if problems else 0
    if len(argv) == 3 and argv[1] == "consistent":
        problems = check_consistent(load_dir(argv[2]))
        for p in problems:
            print(p)
        return 1 if problems else 0
    if len(argv) == 4 and argv[1] == "compose":
        return write_compose_tf_configs(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
