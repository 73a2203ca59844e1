#!/usr/bin/env bash
# Checks every prerequisite of what will run. On a pull request that is the review tree (the
# base's checkout, prepared by the base step: the pull request's own scripts never run); on a
# push, the checkout, prepared here.
set -euo pipefail
# A canary that passed with the same agent bytes, sandbox and machine (kept in the store main
# saved) is not run again.
project=$(pwd)
store=()
if [ -f "${RUNNER_TEMP:-}/pairbench-review.json" ]; then
  top=$(git rev-parse --show-toplevel)
  cd "$RUNNER_TEMP/pairbench-base/$(realpath --relative-to="$top" "$project")"
  store=(--store "$RUNNER_TEMP/pairbench-doctor-store")
  if [ -d "$project/.pairbench/cas" ]; then store+=(--read-store "$project/.pairbench"); fi
elif [ -n "${INPUT_PREPARE:-}" ]; then
  bash -e -c "$INPUT_PREPARE"
fi
pairbench doctor --config "$INPUT_CONFIG" "${store[@]}"
