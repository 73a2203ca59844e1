#!/usr/bin/env bash
# Prepares the head checkout (the prepare input) and checks every prerequisite of the config.
set -euo pipefail
if [ -n "${INPUT_PREPARE:-}" ]; then bash -e -c "$INPUT_PREPARE"; fi
pairbench doctor --config "$INPUT_CONFIG"
