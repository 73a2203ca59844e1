#!/usr/bin/env bash
# The check's result, last (so the summary, the comment and the bundle exist whatever it is):
# pairbench check's exit code (3: a gate failed, a protocol change, a refused treatment), or the
# run's when it failed.
set -uo pipefail
case "${GATE:-}" in
  0) exit 0 ;;
  3) echo "::error::pairbench: the check failed (its first line says which gate and why: see the comment or the job summary)"; exit 3 ;;
  '') echo "::error::pairbench: the check did not report its result"; exit 1 ;;
  *) echo "::error::pairbench failed (exit $GATE; see the run's and the check's logs)"; exit "$GATE" ;;
esac
