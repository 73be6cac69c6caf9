#!/usr/bin/env bash
# Checks that object files compiled for a CPU level above baseline (pstrain_isa_sources) define no
# global or weak symbol outside their own pstrain::isa_<level> namespace. Such a symbol (an inline
# function or template instance from a shared header, say) could be picked by the linker for
# baseline code, which would then crash on a CPU without that level.
# Usage: isa_symbols_test.sh OBJECT...
set -euo pipefail
[ $# -gt 0 ] || { echo "FAIL: no object files given" >&2; exit 1; }
bad=0
for obj in "$@"; do
  own=$(nm -C --defined-only "$obj" | grep -c ' pstrain::isa_' || true)
  # Global (upper-case type) and weak/unique (W, V, u) symbols outside the pstrain::isa_* namespaces.
  leaks=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[A-Zuvw]$/' | grep -v ' pstrain::isa_[a-z0-9]*::' || true)
  if [ -n "$leaks" ]; then
    echo "FAIL: $obj defines symbols outside its CPU level's namespace:" >&2
    echo "$leaks" | head -n 20 >&2
    bad=1
  elif [ "$own" -eq 0 ]; then
    echo "FAIL: $obj defines nothing in a pstrain::isa_* namespace (is it an ISA object?)" >&2
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "PASS: $# objects keep their code in their CPU level's namespace"
exit "$bad"
