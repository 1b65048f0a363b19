#!/bin/bash
# Submits the audit's job array and its merge, which waits for every task of the array.
set -euo pipefail
cd "$(dirname "$0")"
array=$(sbatch --parsable audit-array.sbatch)
sbatch --dependency=afterok:"$array" merge.sbatch
