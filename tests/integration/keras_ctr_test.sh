#!/usr/bin/env bash
# Recommendation models written by real Keras (tests/common/graph/testdata: DeepFM, DCN-v2 with
# Cross, Wide & Deep, DLRM with DotInteraction, two towers with Dot) trained as CTR jobs on Criteo TSV
# files of a synthetic set (3 numeric and 4 categorical columns; the fixtures' Embedding input_dim
# raised to 1000 for the ids to carry signal):
#   1. `pstrain train` learns each (test AUC >= 0.54; 0.5 is chance);
#   2. `pstrain plan` names the Embedding tables as tables (sparse ps variables);
#   3. 2 ps + 2 workers in sync mode train DeepFM to `pstrain train`'s test loss (full-batch steps:
#      the same global batches), and `pstrain evaluate` of the final checkpoint gives the chief's figures;
#   4. 2 ps + 2 workers in async mode train DCN-v2 to `pstrain train`'s AUC (at most 0.03 below it;
#      the workers' stale pulls make it vary by run).
#   keras_ctr_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

"$BIN/pstrain" datagen ctr --out="$WORK/full" --train=30000 --test=8000 --vocabulary=1000 >"$WORK/datagen.log" 2>&1 \
  || fail "pstrain datagen failed: $(tail -n 3 "$WORK/datagen.log")"
mkdir -p "$WORK/data" "$WORK/models"
for split in train test; do cut -f1-4,15-18 "$WORK/full/$split.txt" >"$WORK/data/$split.txt"; done
MODELS="keras3_deepfm keras2_dcn_v2 keras3_wide_deep keras2_dlrm keras3_two_tower"
for m in $MODELS; do
  python3 "$(dirname "$0")/keras/set_input_dim.py" "$FIXTURES/$m.json" "$WORK/models/$m.json" 1000
done
head -n 512 "$WORK/data/train.txt" >"$WORK/data/small.txt"
job() {  # job FILE MODEL MODE [TRAIN BATCH SCHEDULE]
  local train=${4:-train} batch=${5:-256} schedule=${6:-'{"epochs": 2, "steps_per_closure": 10}'}
  cat >"$1" <<JSON
{"name": "keras-ctr", "model": {"keras_json": "$WORK/models/$2.json"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/$train.txt"], "test_files": ["$WORK/data/test.txt"]},
 "batch_size": $batch, "schedule": $schedule, "mode": "$3", "seed": 7,
 "partitioner": {"type": "min_size", "min_shard_bytes": 4096, "max_shards": 2, "strategy": "mod"}}
JSON
}

# 1. Each model learns in one process.
declare -A AUC LOSS
for m in $MODELS; do
  job "$WORK/$m.json" "$m" async
  "$BIN/pstrain" train --job="$WORK/$m.json" --threads=1 >"$WORK/$m.out" 2>"$WORK/$m.log" \
    || fail "pstrain train of $m failed: $(tail -n 3 "$WORK/$m.log")"
  tail -n 1 "$WORK/$m.out" >"$WORK/$m.train.json"
  AUC[$m]=$(json_get "$WORK/$m.train.json" "d['final_test_auc']")
  LOSS[$m]=$(json_get "$WORK/$m.train.json" "d['final_test_loss']")
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.54 else 1)" "${AUC[$m]}" \
    || fail "$m reached test AUC ${AUC[$m]} (want >= 0.54; chance is 0.5)"
done

# 2. The plan: Keras's names, the tables as tables.
"$BIN/pstrain" plan --job="$WORK/keras3_wide_deep.json" --num_ps=2 >"$WORK/plan.txt" 2>&1 \
  || fail "pstrain plan failed: $(cat "$WORK/plan.txt")"
tables=$(grep -c "table" "$WORK/plan.txt")
[ "$tables" -ge 8 ] || fail "the plan shows $tables table lines; Wide & Deep has 8 Embedding tables: $(cat "$WORK/plan.txt")"
grep "deep_emb0/embeddings" "$WORK/plan.txt" | grep -q table || fail "deep_emb0/embeddings is not a table in the plan"

cluster_run() {  # cluster_run JOB MODEL_DIR: 2 ps + 2 workers train JOB to its end
  make_cluster 2 2
  start_servers 2 2 --threads=1
  start chief 0 pstrain-chief --job="$1" --model_dir="$2" --wait_timeout_secs=30
  wait_pid "$LAST_PID" 240
  [ "$WAIT_RC" = 0 ] || fail "the chief of $1 exited $WAIT_RC: $(tail -n 5 "$WORK/chief-0.log")"
  for pid in "${PIDS[@]}"; do wait_pid "$pid" 30; done
  PIDS=()
}

# 3. Sync mode with full-batch steps: 2 workers x half of the global batch == one process with it.
job "$WORK/sync.json" keras3_deepfm sync small 512 '{"steps": 6, "steps_per_closure": 2}'
SYNC="$WORK/sync"
cluster_run "$WORK/sync.json" "$SYNC"
"$BIN/pstrain" train --job="$WORK/sync.json" --threads=1 >"$WORK/sync_train.out" 2>"$WORK/sync_train.log" \
  || fail "pstrain train of the sync job failed: $(tail -n 3 "$WORK/sync_train.log")"
cluster=$(json_get "$SYNC/summary.json" "d['final_test_loss']")
single=$(tail -n 1 "$WORK/sync_train.out" | python3 -c "import json,sys; print(json.load(sys.stdin)['final_test_loss'])")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-4*abs(b) else 1)" \
  "$cluster" "$single" || fail "DeepFM's sync cluster test loss $cluster differs from pstrain train's $single"
"$BIN/pstrain" evaluate --checkpoint="$SYNC" --format=json >"$WORK/evaluate.json" 2>"$WORK/evaluate.log" \
  || fail "pstrain evaluate failed: $(cat "$WORK/evaluate.log")"
evaluated=$(json_get "$WORK/evaluate.json" "d['test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*abs(b) else 1)" \
  "$evaluated" "$cluster" || fail "pstrain evaluate's test loss $evaluated differs from the chief's $cluster"

# 4. Async mode: the same AUC within noise.
job "$WORK/async.json" keras2_dcn_v2 async
ASYNC="$WORK/async"
cluster_run "$WORK/async.json" "$ASYNC"
async_auc=$(json_get "$ASYNC/summary.json" "d['final_test_auc']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) - 0.03 else 1)" \
  "$async_auc" "${AUC[keras2_dcn_v2]}" || fail "DCN-v2's async cluster AUC $async_auc is more than 0.03 below pstrain train's ${AUC[keras2_dcn_v2]}"
summary=""
for m in $MODELS; do summary+=" $m AUC ${AUC[$m]};"; done
echo "PASS: pstrain train:$summary DeepFM sync cluster $cluster == pstrain train $single == evaluate $evaluated;" \
  "DCN-v2 async cluster AUC $async_auc"
