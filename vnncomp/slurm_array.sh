#!/usr/bin/env bash
# Example: spread the VNN-COMP harness over a Slurm job array, then merge the shard reports.
#
#   sbatch --array=0-7 vnncomp/slurm_array.sh /path/to/vnncomp2024_benchmarks results/
#   # when all tasks are done (or: sbatch --dependency=afterok:<jobid> ... --merge):
#   scripts/vnncomp.sh --merge results/shard_*.json --json all.json --markdown all.md
#
# Task I of N checks every N-th model starting at the I-th (--shard I/N, 0-based I), so --array
# must start at 0. Use --device all on GPU partitions (add e.g. #SBATCH --gres=gpu:1).
#SBATCH --job-name=vnncomp
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=01:00:00
#SBATCH --output=vnncomp_%A_%a.log
set -euo pipefail

benchmarks="${1:?usage: slurm_array.sh BENCHMARKS_DIR OUT_DIR [extra harness options]}"
out="${2:?usage: slurm_array.sh BENCHMARKS_DIR OUT_DIR [extra harness options]}"
shift 2
repo="${VNNCOMP_REPO:-${SLURM_SUBMIT_DIR:-$(pwd)}}"
task="${SLURM_ARRAY_TASK_ID:?not running inside a Slurm job array}"
count="${SLURM_ARRAY_TASK_COUNT:?not running inside a Slurm job array}"
mkdir -p "$out"

# The harness exits 1 when a model fails; keep the shard report and let the merge decide.
"$repo/scripts/vnncomp.sh" --benchmarks "$benchmarks" --shard "$task/$count" \
  --jobs "${SLURM_CPUS_PER_TASK:-1}" --device "${VNNCOMP_DEVICE:-cpu}" \
  --json "$out/shard_$task.json" --markdown "$out/shard_$task.md" "$@" || status=$?
exit "${status:-0}"
