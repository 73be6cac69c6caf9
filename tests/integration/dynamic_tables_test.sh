#!/usr/bin/env bash
# A CTR job with one dynamic field (no vocabulary: rows made on first use) on an async cluster of
# 2 ps and 2 workers saves the table as one .dtab file per ps; `pstrain inspect` lists it with rows
# in both files. Restarted from that model dir on 3 ps, the chief restores the table re-sharded by
# key over 3 ps, training goes on with a finite loss, and the next checkpoint holds the table in 3
# files with the rows saved before (less any evicted since).
# Needs job specs with "dynamic" fields and workers that train them.
source "$(dirname "$0")/lib.sh" "$1"

"$BIN/pstrain" datagen ctr --out "$WORK/data" --train 4000 --test 500 --vocabulary 3000 --seed 4 \
  >"$WORK/datagen.out" 2>&1 || fail "datagen failed: $(cat "$WORK/datagen.out")"
cat >"$WORK/job.json" <<JSON
{"name": "ctr-dynamic",
 "model": {"numeric_inputs": 13,
           "fields": [{"name": "user", "embedding_dim": 8, "dynamic": {"max_rows": 4000}},
                      {"vocabulary_size": 3000, "embedding_dim": 8, "count": 25}],
           "layers": [{"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 1}]},
 "optimizer": {"type": "adagrad", "learning_rate": 0.02},
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/train.txt"], "test_files": ["$WORK/data/test.txt"]},
 "batch_size": 64, "schedule": {"steps": 40, "steps_per_closure": 5, "checkpoint_every_steps": 20,
                                "eval_every_steps": 0},
 "seed": 5}
JSON
MODEL="$WORK/model"

run_cluster_job 2 2 "$MODEL" 60 --job="$WORK/job.json"
inspect_latest "$MODEL" "$WORK/inspect-2ps.json"
python3 - "$WORK/inspect-2ps.json" <<'PY' || fail "the 2-ps checkpoint does not hold the dynamic table in 2 files"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["step"] == 40, d["step"]
[t] = [t for t in d["dynamic_tables"] if t["name"] == "user/embeddings"]
assert t["dim"] == 8 and t["shards"] == 2 and len(t["files"]) == 2, t
assert all(f["rows"] > 0 and f["file"].endswith("-of-2.dtab") for f in t["files"]), t["files"]
assert t["rows"] == sum(f["rows"] for f in t["files"]) > 0, t
assert t["options"].get("max_rows") == 4000, t["options"]
assert all(v["name"] != "user/embeddings" for v in d["variables"]), "the dynamic table listed as a dense variable"
PY

# The same model dir on 3 ps: restored from ckpt-40, trained to step 80.
run_cluster_job 3 2 "$MODEL" 60 --job="$WORK/job.json" --steps=80
grep -q "resumed from $MODEL/ckpt-40" "$WORK/chief-0.log" || fail "the chief did not resume from ckpt-40"
inspect_latest "$MODEL" "$WORK/inspect-3ps.json"
python3 - "$WORK/inspect-2ps.json" "$WORK/inspect-3ps.json" "$MODEL/summary.json" "$MODEL/metrics.jsonl" <<'PY' \
  || fail "the 3-ps run did not restore the dynamic table or train on"
import json, math, sys
before, after = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert after["step"] == 80, after["step"]
[b] = [t for t in before["dynamic_tables"] if t["name"] == "user/embeddings"]
[a] = [t for t in after["dynamic_tables"] if t["name"] == "user/embeddings"]
assert a["shards"] == 3 and len(a["files"]) == 3, a
assert all(f["rows"] > 0 and f["file"].endswith("-of-3.dtab") for f in a["files"]), a["files"]
evicted = (a["evicted_ttl"] + a["evicted_cap"]) - (b["evicted_ttl"] + b["evicted_cap"])
assert a["rows"] >= b["rows"] - evicted, (a["rows"], b["rows"], evicted)
summary = json.load(open(sys.argv[3]))
assert summary["global_step"] == 80, summary["global_step"]
loss = summary["final_test_logloss"]
assert loss is not None and math.isfinite(loss) and loss > 0, loss
rows = [json.loads(l) for l in open(sys.argv[4])]
later = [r for r in rows if r.get("kind") == "train" and r.get("step", 0) > 40]
assert all(r.get("loss") is not None and math.isfinite(r["loss"]) for r in later), later
PY
# `pstrain evaluate` reads the 3 files back (keys the checkpoint lacks get their initial rows, as a
# pull would) and computes the chief's own final test loss.
evaluate_checkpoint "$MODEL" "$WORK/evaluate.json"
ours=$(json_get "$WORK/evaluate.json" "d['test_loss']")
chief=$(json_get "$MODEL/summary.json" "d['final_test_logloss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*abs(a) else 1)" \
  "$ours" "$chief" || fail "pstrain evaluate gives test loss $ours from the checkpoint; the chief's final evaluation $chief"
echo "PASS: the dynamic table saved over 2 ps ($(json_get "$WORK/inspect-2ps.json" "d['dynamic_tables'][0]['rows']") rows)" \
  "restored onto 3 ps and saved again over 3 files ($(json_get "$WORK/inspect-3ps.json" "d['dynamic_tables'][0]['rows']") rows);" \
  "pstrain evaluate's test loss $ours = the chief's"
