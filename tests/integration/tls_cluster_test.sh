#!/usr/bin/env bash
# Mutual TLS end to end with the real binaries: `pstrain certs` makes the cluster's material from
# its TF_CONFIG, 2 ps + 2 workers + the chief train with --tls_dir (pulls and pushes over the tensor
# channel with TLS), every task says it runs mutual TLS; a health probe without a certificate (or
# with one of another CA) fails while one with a task's certificate is answered; and a ps started
# without TLS says it is plaintext.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
echo "{\"cluster\":$CLUSTER}" >"$WORK/tf_config.json"
"$BIN/pstrain" certs --out="$WORK/tls" --cluster="$WORK/tf_config.json" >"$WORK/certs.out" 2>&1 ||
  fail "pstrain certs failed: $(cat "$WORK/certs.out")"
for f in ca.crt ca.key chief-0.crt ps-0.crt ps-1.key worker-1.crt evaluator-0.key; do
  [ -f "$WORK/tls/$f" ] || fail "pstrain certs did not write $f"
done
[ "$(stat -c %a "$WORK/tls/ps-0.key")" = 600 ] || fail "a key is readable by others"

# The ps take the directory from the environment (as a Kubernetes Secret's mount would be named),
# the workers from the flag.
for i in 0 1; do PSTRAIN_TLS_DIR="$WORK/tls" start ps "$i" pstrain-ps; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1 --tls_dir="$WORK/tls"; done
for i in 0 1; do wait_for_line "$WORK/ps-$i.log" "mutual TLS as ps:$i" 30; done
for i in 0 1; do wait_for_line "$WORK/worker-$i.log" "mutual TLS as worker:$i" 30; done

# A probe without the cluster's certificates gets nothing; with a task's it is answered.
if "$BIN/pstrain" health "127.0.0.1:${PS_PORTS[0]}" --timeout_secs=3 >"$WORK/probe.out" 2>&1; then
  fail "a health probe without a certificate was answered"
fi
"$BIN/pstrain" certs --out="$WORK/other" --cluster="$WORK/tf_config.json" >/dev/null 2>&1
if "$BIN/pstrain" health "127.0.0.1:${PS_PORTS[0]}" --tls_dir="$WORK/other" --task=chief:0 --timeout_secs=3 \
  >"$WORK/probe.out" 2>&1; then
  fail "a health probe with another cluster's certificate was answered"
fi
"$BIN/pstrain" health "127.0.0.1:${PS_PORTS[0]}" --tls_dir="$WORK/tls" --task=worker:0 --timeout_secs=10 \
  >"$WORK/probe.out" 2>&1 || fail "the health probe with a worker's certificate failed: $(cat "$WORK/probe.out")"

MODEL="$WORK/model"
start chief 0 pstrain-chief --job=linear --steps=20 --model_dir="$MODEL" --wait_timeout_secs=60 \
  --tls_dir="$WORK/tls"
wait_pid "$LAST_PID" 240
[ "$WAIT_RC" = 0 ] || fail "the chief exited with $WAIT_RC"
grep -q "mutual TLS as chief:0" "$WORK/chief-0.log" || fail "the chief did not say it runs mutual TLS"
steps=$(json_get "$MODEL/summary.json" "d['global_step']")
[ "$steps" = 20 ] || fail "trained $steps steps, expected 20"
grep -q "tensors to the ps over the tensor channel" "$WORK/worker-0.log" || fail "worker 0 did not use the tensor channel"

# The same binaries without TLS: a warning line at start-up.
make_cluster 1 1
start ps 0 pstrain-ps
wait_for_line "$WORK/ps-0.log" "WARNING: plaintext" 30
echo "PASS: a TLS cluster from pstrain certs trained $steps steps; strangers' probes refused; plaintext warns"
