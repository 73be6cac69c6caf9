#!/usr/bin/env bash
# Secrets and files outside the model dir: `pstrain certs` never replaces key material unless told
# to (--overwrite); a task warns when its TLS directory holds the CA's key or a key others may
# read; an error about a data file never shows the file's content (a job spec from elsewhere may
# name any file); a plaintext ps writes checkpoints only inside its --checkpoint_root, in
# ckpt-<step> directories, whatever a peer asks.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
CASES=0
make_cluster 1 1
echo "{\"cluster\": $CLUSTER}" >"$WORK/cluster.json"

# certs twice into one directory: refused, the CA's key unchanged; --overwrite replaces it.
expect_exit 0 certs-first "wrote $WORK/tls/ca.crt" "$P" certs --out="$WORK/tls" --cluster="$WORK/cluster.json"
before=$(sha256sum "$WORK/tls/ca.key" "$WORK/tls/ps-0.key")
expect_exit 2 certs-again "$WORK/tls already holds ca.crt, ca.key, .*--overwrite" \
  "$P" certs --out="$WORK/tls" --cluster="$WORK/cluster.json"
[ "$(sha256sum "$WORK/tls/ca.key" "$WORK/tls/ps-0.key")" = "$before" ] || fail "certs replaced key material"
expect_exit 0 certs-overwrite "wrote $WORK/tls/ca.crt" \
  "$P" certs --out="$WORK/tls" --cluster="$WORK/cluster.json" --overwrite
[ "$(sha256sum "$WORK/tls/ca.key")" != "$(echo "$before" | head -1)" ] || fail "--overwrite kept the old CA key"

# A task whose TLS directory holds ca.key, and whose key others may read, says so at start-up.
chmod 644 "$WORK/tls/ps-0.key"
start ps 0 pstrain-ps --tls_dir="$WORK/tls"
wait_for_line "$WORK/ps-0.log" "mutual TLS as ps:0" 30
grep -q "WARNING: the TLS directory $WORK/tls holds ca.key" "$WORK/ps-0.log" || fail "no warning for ca.key: $(cat "$WORK/ps-0.log")"
grep -q "WARNING: the private key $WORK/tls/ps-0.key may be read by other users (mode 0644)" "$WORK/ps-0.log" ||
  fail "no warning for a world-readable key: $(cat "$WORK/ps-0.log")"
kill "$LAST_PID"
CASES=$((CASES + 2))

# A data file's content never appears in an error about it.
printf 'TOPSECRET-first,line\nTOPSECRET-second,line\n' >"$WORK/secret.txt"
printf '1,2\n1,TOPSECRET\n' >"$WORK/secret2.csv"
for f in "$WORK/secret.txt" "$WORK/secret2.csv"; do
  write_job "$WORK/leak.json" "{\"model\": {\"input_shape\": [1], \"loss\": \"sparse_categorical_crossentropy\",
    \"layers\": [{\"type\": \"dense\", \"units\": 2}]}, \"optimizer\": {\"type\": \"sgd\", \"learning_rate\": 0.01},
    \"batch_size\": 1, \"data\": {\"dataset\": \"csv\", \"train_file\": \"$f\", \"test_file\": \"$f\", \"header\": false, \"allow_test_in_train\": true},
    \"schedule\": {\"steps\": 1}}"
  expect_exit 2 "leak-$(basename "$f")" "$f:[12]: .*(is not a finite number|is not a class id)" "$P" train --job="$WORK/leak.json"
  ! grep -q TOPSECRET "$WORK/leak-$(basename "$f").log" || fail "an error shows the data file's content"
done

# A plaintext ps confined to --checkpoint_root: a chief whose model dir lies elsewhere (or climbs
# out with ..) gets its saves refused; no checkpoint is written there. A failed job stops its
# tasks, so each run gets a fresh cluster.
mkdir -p "$WORK/allowed"
confined_cluster() {
  make_cluster 1 1
  start ps 0 pstrain-ps --checkpoint_root="$WORK/allowed"
  start worker 0 pstrain-worker --threads=1
}
for dir in "$WORK/elsewhere" "$WORK/allowed/../escaped"; do
  confined_cluster
  rc=0
  timeout 120 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --steps=20 \
    --checkpoint_every_steps=10 --model_dir="$dir" --wait_timeout_secs=30 >"$WORK/chief-outside.log" 2>&1 || rc=$?
  grep -Eq "checkpoint directory .* (is outside the checkpoint root|has a \"\.\" or \"\.\.\" component)" \
    "$WORK/chief-outside.log" || fail "a save outside the root was not refused (exit $rc): $(tail -20 "$WORK/chief-outside.log")"
  ! ls -d "$dir"/ckpt-* 2>/dev/null | grep -v '\.tmp-' | grep -q . || fail "checkpoints were written in $dir"
  CASES=$((CASES + 1))
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
done
confined_cluster
expect_exit 0 chief-inside '"state": "done"' timeout 120 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job=linear --steps=20 --checkpoint_every_steps=10 --model_dir="$WORK/allowed/model" --wait_timeout_secs=30
ls "$WORK/allowed/model" | grep -q '^ckpt-20$' || fail "no checkpoint inside the root: $(ls "$WORK/allowed/model")"
echo "PASS: $CASES cases: key material kept, key warnings, no content echoed, ps saves confined"
