#!/usr/bin/env bash
# The local demo. Builds pstrain and prints the plan of the cnn job on 2 ps tasks.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/build.sh
build/bin/pstrain plan --job=cnn --num_ps=2
