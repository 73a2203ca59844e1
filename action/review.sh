#!/usr/bin/env bash
# On a pull request: the base's checkout becomes the review tree (pairbench review): the base's
# protocol with the pull request's treatment. What else the pull request changed in what is
# frozen is in the review, and fails the check. Nothing of the pull request runs: its config is
# only read.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${INPUT_CONFIG:?}"
top=$(git rev-parse --show-toplevel)
rel=$(realpath --relative-to="$top" "$(pwd)")
rm -f "$RUNNER_TEMP/pairbench-review.json"
if [ "$(cat "$RUNNER_TEMP/pairbench-base-status")" = no-config ]; then exit 0; fi
pairbench review "$RUNNER_TEMP/pairbench-base/$rel/$INPUT_CONFIG" "$INPUT_CONFIG" --out "$RUNNER_TEMP/pairbench-review.json"
