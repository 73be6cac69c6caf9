// Validates pstrain's Kubernetes manifests offline and writes the TF_CONFIG each pod would get.
//
//   node validate.mjs [--tf-configs DIR] MANIFEST.yaml...
//
// MANIFEST: multi-document YAML as `kubectl kustomize` renders it ("-" reads stdin). Checks:
//  - every built-in object against the Kubernetes OpenAPI schema (kubernetes-models);
//  - a TFJob against tfjob.schema.json, each of its pod templates as a Pod, and the training
//    operator's conventions (container "tensorflow", port "tfjob-port", one chief, ps and workers);
//  - references between objects: claims, config maps, StatefulSet serviceName and pod subdomain
//    (a headless Service whose selector matches the pods).
// --tf-configs DIR writes DIR/<pod>.json with each pod's TF_CONFIG: for a TFJob as the operator forms
// it; for the plain manifests by running the pod's own entry command (its config-map script) with the
// pstrain binary swapped for a command that prints TF_CONFIG.
// Prints one line per problem and exits 1 if there is any.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import YAML from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
const problems = [];
const problem = (where, what) => problems.push(`${where}: ${what}`);
const idOf = (o) => `${o.kind}/${o.metadata?.name}`;

function parseArgs(argv) {
  const args = { tfConfigs: null, files: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--tf-configs") args.tfConfigs = argv[++i];
    else args.files.push(argv[i]);
  }
  return args;
}

function loadDocuments(files) {
  const docs = [];
  for (const file of files) {
    const text = readFileSync(file === "-" ? 0 : file, "utf8");
    for (const doc of YAML.parseAllDocuments(text)) {
      if (doc.errors.length) problem(file, doc.errors.map((e) => e.message).join("; "));
      else if (doc.toJS()) docs.push(doc.toJS());
    }
  }
  return docs;
}

// kubernetes-models: apiVersion "apps/v1" -> module "kubernetes-models/apps/v1", class = kind.
async function validateBuiltIn(obj) {
  let module;
  try {
    module = await import(`kubernetes-models/${obj.apiVersion}`);
  } catch {
    return problem(idOf(obj), `unknown apiVersion ${obj.apiVersion}`);
  }
  const Kind = module[obj.kind];
  if (!Kind) return problem(idOf(obj), `unknown kind in ${obj.apiVersion}`);
  try {
    new Kind(obj).validate();
  } catch (e) {
    problem(idOf(obj), e.message);
  }
}

async function validatePodTemplate(where, template) {
  const { Pod } = await import("kubernetes-models/v1");
  try {
    new Pod({ metadata: template.metadata ?? {}, spec: template.spec }).validate();
  } catch (e) {
    problem(where, e.message);
  }
}

async function validateTfJob(job, validateSchema) {
  if (!validateSchema(job)) {
    for (const e of validateSchema.errors) problem(idOf(job), `${e.instancePath} ${e.message}`);
    return;
  }
  const specs = job.spec.tfReplicaSpecs;
  for (const [type, spec] of Object.entries(specs)) {
    const where = `${idOf(job)} ${type}`;
    await validatePodTemplate(where, spec.template);
    const tf = spec.template.spec.containers.find((c) => c.name === "tensorflow");
    if (!tf) problem(where, 'the operator sets TF_CONFIG only in a container named "tensorflow"');
    else if (!(tf.ports ?? []).some((p) => p.name === "tfjob-port")) {
      problem(where, 'no port named "tfjob-port": the operator would use 2222 whatever the container serves');
    }
  }
  if ((specs.Chief?.replicas ?? 0) > 1) problem(idOf(job), "more than one Chief replica");
  for (const type of ["PS", "Worker"]) {
    if (!((specs[type]?.replicas ?? 0) >= 1)) problem(idOf(job), `a training cluster needs ${type} replicas`);
  }
}

// Every pod template in the documents, with a name for messages and its pods' names.
function podTemplates(docs) {
  const out = [];
  for (const o of docs) {
    if (o.kind === "StatefulSet") {
      const pods = [...Array(o.spec.replicas ?? 1).keys()].map((i) => `${o.metadata.name}-${i}`);
      out.push({ owner: o, where: idOf(o), template: o.spec.template, pods });
    } else if (o.kind === "Job" || o.kind === "Deployment") {
      const host = o.spec.template.spec.hostname;
      out.push({ owner: o, where: idOf(o), template: o.spec.template, pods: host ? [host] : [] });
    } else if (o.kind === "TFJob") {
      for (const [type, spec] of Object.entries(o.spec.tfReplicaSpecs)) {
        out.push({ owner: o, where: `${idOf(o)} ${type}`, template: spec.template, pods: [] });
      }
    }
  }
  return out;
}

function selects(service, labels) {
  const sel = service.spec?.selector ?? {};
  return Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels?.[k] === v);
}

function checkReferences(docs) {
  const named = (kind) => new Map(docs.filter((o) => o.kind === kind).map((o) => [o.metadata.name, o]));
  const claims = named("PersistentVolumeClaim");
  const configMaps = named("ConfigMap");
  const services = named("Service");
  const headlessFor = (where, name, labels, field) => {
    const svc = services.get(name);
    if (!svc) return problem(where, `${field} ${name}: no such Service`);
    if (svc.spec.clusterIP !== "None") problem(where, `${field} ${name}: the Service is not headless`);
    if (!selects(svc, labels)) problem(where, `${field} ${name}: the Service does not select these pods`);
  };
  for (const { owner, where, template } of podTemplates(docs)) {
    for (const v of template.spec.volumes ?? []) {
      if (v.persistentVolumeClaim && !claims.has(v.persistentVolumeClaim.claimName)) {
        problem(where, `volume ${v.name}: no PersistentVolumeClaim ${v.persistentVolumeClaim.claimName}`);
      }
      if (v.configMap && !configMaps.has(v.configMap.name)) {
        problem(where, `volume ${v.name}: no ConfigMap ${v.configMap.name}`);
      }
    }
    const labels = template.metadata?.labels;
    if (owner.kind === "StatefulSet") headlessFor(where, owner.spec.serviceName, labels, "serviceName");
    if (template.spec.subdomain) headlessFor(where, template.spec.subdomain, labels, "subdomain");
  }
}

// The TF_CONFIG the training operator sets (pkg/controller.v1/tensorflow: genClusterSpec).
function operatorTfConfigs(job, namespace) {
  const cluster = {};
  const port = (spec) =>
    spec.template.spec.containers.find((c) => c.name === "tensorflow")?.ports?.find((p) => p.name === "tfjob-port")
      ?.containerPort ?? 2222;
  for (const [type, spec] of Object.entries(job.spec.tfReplicaSpecs)) {
    if (type === "Evaluator") continue; // outside the training cluster, as in TensorFlow
    const rt = type.toLowerCase();
    cluster[rt] = [...Array(spec.replicas ?? 1).keys()].map(
      (i) => `${job.metadata.name}-${rt}-${i}.${namespace}.svc:${port(spec)}`);
  }
  const out = {};
  for (const [type, spec] of Object.entries(job.spec.tfReplicaSpecs)) {
    const rt = type.toLowerCase();
    for (let i = 0; i < (spec.replicas ?? 1); i++) {
      out[`${job.metadata.name}-${rt}-${i}`] = { cluster, task: { type: rt, index: i }, environment: "cloud" };
    }
  }
  return out;
}

// Runs a pod's entry command with its config-map files in a temp dir and the last program replaced
// by one that prints TF_CONFIG. Returns the parsed TF_CONFIG.
function entryTfConfig(docs, template, pod) {
  const container = template.spec.containers[0];
  const dir = mkdtempSync(join(tmpdir(), "pstrain-k8s-"));
  let command = [...(container.command ?? []), ...(container.args ?? [])];
  for (const mount of container.volumeMounts ?? []) {
    const volume = (template.spec.volumes ?? []).find((v) => v.name === mount.name);
    const cm = volume?.configMap && docs.find((o) => o.kind === "ConfigMap" && o.metadata.name === volume.configMap.name);
    if (!cm) continue;
    for (const [file, text] of Object.entries(cm.data ?? {})) writeFileSync(join(dir, file), text);
    command = command.map((a) => (a.startsWith(mount.mountPath + "/") ? join(dir, a.slice(mount.mountPath.length + 1)) : a));
  }
  const program = command.findIndex((a) => /^pstrain(-\w+)?$/.test(a));
  if (program < 0) throw new Error(`${pod}: the entry command runs no pstrain binary: ${command.join(" ")}`);
  command = [...command.slice(0, program), "/bin/sh", "-c", 'printf %s "$TF_CONFIG"'];
  const env = { PATH: process.env.PATH, HOSTNAME: pod };
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  const stdio = ["ignore", "pipe", "pipe"];
  return JSON.parse(execFileSync(command[0], command.slice(1), { env, stdio, encoding: "utf8" }));
}

function writeTfConfigs(docs, dir) {
  let count = 0;
  const write = (pod, tfConfig) => {
    writeFileSync(join(dir, `${pod}.json`), JSON.stringify(tfConfig));
    count++;
  };
  for (const job of docs.filter((o) => o.kind === "TFJob")) {
    for (const [pod, tfConfig] of Object.entries(operatorTfConfigs(job, job.metadata.namespace ?? "default"))) {
      write(pod, tfConfig);
    }
  }
  for (const { where, template, pods, owner } of podTemplates(docs)) {
    if (owner.kind === "TFJob") continue;
    for (const pod of pods) {
      try {
        write(pod, entryTfConfig(docs, template, pod));
      } catch (e) {
        problem(where, e.message);
      }
    }
  }
  return count;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.files.length === 0) {
    console.error("usage: node validate.mjs [--tf-configs DIR] MANIFEST.yaml...");
    process.exit(2);
  }
  const docs = loadDocuments(args.files);
  if (docs.length === 0) problem(args.files.join(" "), "no Kubernetes objects");
  const validateSchema = new Ajv({ allErrors: true }).compile(
    JSON.parse(readFileSync(join(here, "tfjob.schema.json"), "utf8")));
  for (const obj of docs) {
    if (obj.kind === "TFJob") await validateTfJob(obj, validateSchema);
    else await validateBuiltIn(obj);
  }
  checkReferences(docs);
  let written = 0;
  if (args.tfConfigs && problems.length === 0) written = writeTfConfigs(docs, args.tfConfigs);
  for (const p of problems) console.log(p);
  if (problems.length) process.exit(1);
  console.log(`${docs.length} objects valid (${docs.map(idOf).join(", ")})` +
    (args.tfConfigs ? `; ${written} TF_CONFIGs written to ${args.tfConfigs}` : ""));
}

await main();
