#!/usr/bin/env bash
# Files that are not regular or not small (common/platform/file_rules.h): a FIFO, /dev/zero or a
# symlink to it given as a job spec, a TF_CONFIG file, a TLS file or a data file is refused at
# once (exit 2, the file named), never read forever or until memory runs out; a gzip data file is
# counted against --memory_budget_bytes while it is decompressed; `pstrain plot` refuses a line
# longer than its limit. Each case runs under `timeout`, so a hang fails instead of blocking.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
CASES=0
mkfifo "$WORK/fifo"
ln -s /dev/zero "$WORK/zero-link"
make_cluster 1 1

# Job specs and TF_CONFIG files: JSON documents.
for f in "$WORK/fifo" /dev/zero "$WORK/zero-link"; do
  name=$(basename "$f")
  expect_exit 2 "job-$name" "JSON file $f is a (FIFO \(named pipe\)|character device), not a regular file" \
    timeout 30 "$P" train --job="$f"
  expect_exit 2 "chief-job-$name" "JSON file $f is a (FIFO|character device)" timeout 30 \
    env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$f" --model_dir="$WORK/m-$name"
  expect_exit 2 "tf-config-$name" "TF_CONFIG file: JSON file $f is a (FIFO|character device)" \
    timeout 30 "$BIN/pstrain-ps" --tf_config="$f"
done

# TLS files (symlinks followed, as a Kubernetes secret's are; the target must be a regular file).
echo "$(tf_config ps 0)" >"$WORK/tf_config.json"
"$P" certs --out="$WORK/tls" --cluster="$WORK/tf_config.json" >"$WORK/certs.log" 2>&1 || fail "certs: $(cat "$WORK/certs.log")"
for f in "$WORK/fifo" /dev/zero "$WORK/zero-link"; do
  expect_exit 2 "tls-ca-$(basename "$f")" "cannot read the TLS CA $f: .*(FIFO|character device).*not a regular file" \
    timeout 30 env TF_CONFIG="$(tf_config ps 0)" "$BIN/pstrain-ps" --tls_ca="$f" --tls_cert="$WORK/tls/ps-0.crt" \
    --tls_key="$WORK/tls/ps-0.key"
done

# Data files: a CSV train file that is a FIFO or a device.
csv_job() {  # csv_job FILE TRAIN_FILE
  write_job "$1" "{\"model\": {\"input_shape\": [1], \"loss\": \"mse\", \"layers\": [{\"type\": \"dense\", \"units\": 1}]},
    \"optimizer\": {\"type\": \"sgd\", \"learning_rate\": 0.01}, \"batch_size\": 4,
    \"data\": {\"dataset\": \"csv\", \"train_file\": \"$2\", \"test_file\": \"$2\", \"header\": false, \"allow_test_in_train\": true},
    \"schedule\": {\"steps\": 2}}"
}
for f in "$WORK/fifo" /dev/zero "$WORK/zero-link"; do
  name=$(basename "$f")
  csv_job "$WORK/csv-$name.json" "$f"
  expect_exit 2 "data-$name" "data file $f is a (FIFO|character device).*not a regular file" \
    timeout 30 "$P" train --job="$WORK/csv-$name.json" --eval=false
done

# A gzip file that decompresses past --memory_budget_bytes: stopped while decompressing, naming
# the budget (the file is 96 MiB of CSV lines, a few hundred KiB compressed).
python3 - "$WORK/big.csv.gz" <<'PY'
import gzip, sys
with gzip.open(sys.argv[1], "wb", compresslevel=1) as f:
    line = b"1,2\n" * (1 << 20)
    for _ in range(24):
        f.write(line)
PY
csv_job "$WORK/csv-big.json" "$WORK/big.csv.gz"
expect_exit 2 data-gzip-budget "data file $WORK/big.csv.gz holds more than 64.0 MiB .* \(uncompressed\), more than the memory budget \(--memory_budget_bytes\)" \
  timeout 60 "$P" train --job="$WORK/csv-big.json" --eval=false --memory_budget_bytes=$((64 << 20))
# A CSV line longer than the data line limit (1 MiB).
python3 -c "import sys; sys.stdout.write('1,' + '2' * (2 << 20) + '\n')" >"$WORK/long.csv"
csv_job "$WORK/csv-long.json" "$WORK/long.csv"
expect_exit 2 data-long-line "long.csv: line 1 is longer than 1048576 bytes" \
  timeout 60 "$P" train --job="$WORK/csv-long.json" --eval=false

# `pstrain plot`: metrics.jsonl lines longer than 1 MiB are refused, naming the line.
mkdir -p "$WORK/run"
{
  echo '{"kind": "train", "step": 1, "loss": 1.0}'
  python3 -c "import sys; sys.stdout.write('{\"kind\": \"train\", \"note\": \"' + 'x' * (2 << 20) + '\"}\n')"
} >"$WORK/run/metrics.jsonl"
expect_exit 2 plot-long-line "metrics file $WORK/run/metrics.jsonl: line 2 is longer than 1048576 bytes" \
  timeout 60 "$P" plot "$WORK/run" --out="$WORK/plot.svg"
echo "PASS: $CASES cases: FIFOs, devices, huge lines and gzip bombs are refused, naming the file and the limit"
