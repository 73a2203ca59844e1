#!/usr/bin/env bash
# The check's result: run --fail-on's exit code (pairbench run --help: 3 a verdict in fail-on).
set -uo pipefail
case "${GATE:-}" in
  0) exit 0 ;;
  3) echo "::error::pairbench: a comparison's verdict is in fail-on, or the run analysed none (see the summary)"; exit 3 ;;
  '') echo "::error::pairbench: the run did not report its gate"; exit 1 ;;
  *) echo "::error::pairbench run failed (exit $GATE; see its step's log)"; exit "$GATE" ;;
esac
