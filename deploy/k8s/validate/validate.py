#!/usr/bin/env python3
"""Validates pstrain's Kubernetes manifests offline and writes the TF_CONFIG each pod would get.

    python validate.py [--kubernetes-version 1.34.0] [--tf-configs DIR] MANIFEST.yaml...

MANIFEST: multi-document YAML as `kubectl kustomize` renders it ("-" reads stdin). Checks:
 - every built-in object against the Kubernetes OpenAPI schema with kubernetes-validate (PyPI) in
   strict mode: an unknown or misspelt field is an error, not ignored;
 - a TFJob against tfjob.schema.json (beside this file), each of its pod templates as a
   PodTemplate (strict), and the training operator's conventions (container "tensorflow", port
   "tfjob-port", one chief, ps and workers);
 - references between objects: claims, config maps, StatefulSet serviceName and pod subdomain (a
   headless Service whose selector matches the pods).
--tf-configs DIR writes DIR/<pod>.json with each pod's TF_CONFIG: for a TFJob as the operator forms
it; for the plain manifests by running the pod's own entry command (its config-map script) with the
pstrain binary swapped for a command that prints TF_CONFIG.
Prints one line per problem and exits 1 if there is any. Needs kubernetes-validate (which brings
jsonschema and PyYAML): deploy/install-python-peers.sh tools.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []


def problem(where, what):
    problems.append("%s: %s" % (where, what))


def id_of(o):
    return "%s/%s" % (o.get("kind"), (o.get("metadata") or {}).get("name"))


def load_documents(files):
    docs = []
    for name in files:
        text = sys.stdin.read() if name == "-" else open(name).read()
        try:
            docs += [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as e:
            problem(name, str(e).replace("\n", " "))
    return docs


def error_text(e):
    """A jsonschema error as 'path: message'."""
    path = "/".join(str(p) for p in e.absolute_path)
    return "%s%s" % (path + ": " if path else "", e.message)


def validate_built_in(obj, version):
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError as e:
        problem(id_of(obj), "unknown kind %s in %s (%s)" % (obj.get("kind"), obj.get("apiVersion"), e))
    except kubernetes_validate.ValidationError as e:
        problem(id_of(obj), error_text(e))


def validate_pod_template(where, template, version):
    wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "template"}, "template": template}
    try:
        kubernetes_validate.validate(wrapped, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        problem(where, error_text(e))


def validate_tf_job(job, schema, version):
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(job), key=lambda e: list(e.absolute_path))
    for e in errors:
        problem(id_of(job), error_text(e))
    if errors:
        return
    specs = job["spec"]["tfReplicaSpecs"]
    for rtype, spec in specs.items():
        where = "%s %s" % (id_of(job), rtype)
        validate_pod_template(where, spec["template"], version)
        tf = [c for c in spec["template"]["spec"]["containers"] if c.get("name") == "tensorflow"]
        if not tf:
            problem(where, 'the operator sets TF_CONFIG only in a container named "tensorflow"')
        elif not any(p.get("name") == "tfjob-port" for p in tf[0].get("ports") or []):
            problem(where, 'no port named "tfjob-port": the operator would use 2222 whatever the container serves')
    if (specs.get("Chief") or {}).get("replicas", 0) > 1:
        problem(id_of(job), "more than one Chief replica")
    for rtype in ("PS", "Worker"):
        if not (specs.get(rtype) or {}).get("replicas", 0) >= 1:
            problem(id_of(job), "a training cluster needs %s replicas" % rtype)


def pod_templates(docs):
    """Every pod template: (owner, where, template, pod names)."""
    out = []
    for o in docs:
        kind = o.get("kind")
        if kind == "StatefulSet":
            pods = ["%s-%d" % (o["metadata"]["name"], i) for i in range(o["spec"].get("replicas", 1))]
            out.append((o, id_of(o), o["spec"]["template"], pods))
        elif kind == "Job" and o["spec"].get("completionMode") == "Indexed":
            # An Indexed Job's pods have the host names <job>-<index>.
            pods = ["%s-%d" % (o["metadata"]["name"], i) for i in range(o["spec"].get("completions", 1))]
            out.append((o, id_of(o), o["spec"]["template"], pods))
        elif kind in ("Job", "Deployment"):
            host = o["spec"]["template"]["spec"].get("hostname")
            out.append((o, id_of(o), o["spec"]["template"], [host] if host else []))
        elif kind == "TFJob":
            for rtype, spec in o["spec"]["tfReplicaSpecs"].items():
                out.append((o, "%s %s" % (id_of(o), rtype), spec["template"], []))
    return out


def selects(service, labels):
    sel = (service.get("spec") or {}).get("selector") or {}
    return bool(sel) and all((labels or {}).get(k) == v for k, v in sel.items())


def check_references(docs):
    def named(kind):
        return {o["metadata"]["name"]: o for o in docs if o.get("kind") == kind}
    claims, config_maps, services = named("PersistentVolumeClaim"), named("ConfigMap"), named("Service")

    def headless_for(where, name, labels, field):
        svc = services.get(name)
        if svc is None:
            return problem(where, "%s %s: no such Service" % (field, name))
        if svc["spec"].get("clusterIP") != "None":
            problem(where, "%s %s: the Service is not headless" % (field, name))
        if not selects(svc, labels):
            problem(where, "%s %s: the Service does not select these pods" % (field, name))

    for owner, where, template, _ in pod_templates(docs):
        for v in template["spec"].get("volumes") or []:
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is not None and claim not in claims:
                problem(where, "volume %s: no PersistentVolumeClaim %s" % (v["name"], claim))
            cm = (v.get("configMap") or {}).get("name")
            if cm is not None and cm not in config_maps:
                problem(where, "volume %s: no ConfigMap %s" % (v["name"], cm))
        labels = (template.get("metadata") or {}).get("labels")
        if owner["kind"] == "StatefulSet":
            headless_for(where, owner["spec"].get("serviceName"), labels, "serviceName")
        if template["spec"].get("subdomain"):
            headless_for(where, template["spec"]["subdomain"], labels, "subdomain")


def operator_tf_configs(job, namespace):
    """The TF_CONFIG the training operator sets (pkg/controller.v1/tensorflow: genClusterSpec)."""
    def port(spec):
        for c in spec["template"]["spec"]["containers"]:
            if c.get("name") == "tensorflow":
                for p in c.get("ports") or []:
                    if p.get("name") == "tfjob-port":
                        return p["containerPort"]
        return 2222
    name, specs = job["metadata"]["name"], job["spec"]["tfReplicaSpecs"]
    cluster = {}
    for rtype, spec in specs.items():
        if rtype == "Evaluator":  # outside the training cluster, as in TensorFlow
            continue
        rt = rtype.lower()
        cluster[rt] = ["%s-%s-%d.%s.svc:%d" % (name, rt, i, namespace, port(spec)) for i in range(spec.get("replicas", 1))]
    out = {}
    for rtype, spec in specs.items():
        rt = rtype.lower()
        for i in range(spec.get("replicas", 1)):
            out["%s-%s-%d" % (name, rt, i)] = {"cluster": cluster, "task": {"type": rt, "index": i}, "environment": "cloud"}
    return out


def entry_tf_config(docs, template, pod):
    """Runs a pod's entry command with its config-map files in a temp dir and the pstrain binary
    replaced by a command that prints TF_CONFIG; returns the parsed TF_CONFIG."""
    container = template["spec"]["containers"][0]
    tmp = tempfile.mkdtemp(prefix="pstrain-k8s-")
    command = list(container.get("command") or []) + list(container.get("args") or [])
    for mount in container.get("volumeMounts") or []:
        volume = next((v for v in template["spec"].get("volumes") or [] if v["name"] == mount["name"]), None)
        cm_name = ((volume or {}).get("configMap") or {}).get("name")
        cm = next((o for o in docs if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == cm_name), None)
        if cm is None:
            continue
        for fname, text in (cm.get("data") or {}).items():
            with open(os.path.join(tmp, fname), "w") as f:
                f.write(text)
        prefix = mount["mountPath"] + "/"
        command = [os.path.join(tmp, a[len(prefix):]) if a.startswith(prefix) else a for a in command]
    program = next((i for i, a in enumerate(command) if re.match(r"^pstrain(-\w+)?$", a)), None)
    if program is None:
        raise ValueError("%s: the entry command runs no pstrain binary: %s" % (pod, " ".join(command)))
    command = command[:program] + ["/bin/sh", "-c", 'printf %s "$TF_CONFIG"']
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTNAME": pod}
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    out = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True,
                         timeout=30)
    return json.loads(out.stdout)


def write_tf_configs(docs, out_dir):
    count = 0

    def write(pod, tf_config):
        nonlocal count
        with open(os.path.join(out_dir, pod + ".json"), "w") as f:
            json.dump(tf_config, f)
        count += 1
    for job in (o for o in docs if o.get("kind") == "TFJob"):
        for pod, tf_config in operator_tf_configs(job, job["metadata"].get("namespace", "default")).items():
            write(pod, tf_config)
    for owner, where, template, pods in pod_templates(docs):
        if owner["kind"] == "TFJob":
            continue
        for pod in pods:
            try:
                write(pod, entry_tf_config(docs, template, pod))
            except (ValueError, subprocess.SubprocessError, json.JSONDecodeError) as e:
                problem(where, str(e))
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubernetes-version", default="1.34.0")
    ap.add_argument("--tf-configs")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    docs = load_documents(args.files)
    if not docs:
        problem(" ".join(args.files), "no Kubernetes objects")
    schema = json.load(open(os.path.join(HERE, "tfjob.schema.json")))
    for obj in docs:
        if obj.get("kind") == "TFJob":
            validate_tf_job(obj, schema, args.kubernetes_version)
        else:
            validate_built_in(obj, args.kubernetes_version)
    if not problems:
        check_references(docs)
    written = 0
    if args.tf_configs and not problems:
        written = write_tf_configs(docs, args.tf_configs)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("%d objects valid against Kubernetes %s, strict (%s)%s" % (
        len(docs), args.kubernetes_version, ", ".join(id_of(o) for o in docs),
        "; %d TF_CONFIGs written to %s" % (written, args.tf_configs) if args.tf_configs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
