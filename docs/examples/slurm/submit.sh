#!/bin/bash
# Submit one experiment as a job array of N shards plus the merge job that waits for all of them:
#   EXP=configs/paper/bc-melee.toml OUT=runs/bc-melee N=16 docs/examples/slurm/submit.sh
# Run it again after a failure: every task resumes its shard, and a new merge job waits for the new array.
set -euo pipefail

N=${N:-16}
here=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable --array="1-$N" --export=ALL "$here/shards.sbatch")
array=${array%%;*}  # --parsable prints "jobid" or "jobid;cluster"
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --export="ALL,N=$N" \
    "$here/merge.sbatch")
echo "shards: job $array (array 1-$N); merge: job ${merge%%;*}, after every shard succeeded"
