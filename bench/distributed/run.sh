#!/usr/bin/env bash
# bench/distributed/run.sh - data-parallel training of a Qwen shape at 1 and N GPUs in one run:
# Genesis (`genesis bench train`, under `genesis launch` for N) and PyTorch DDP
# (torch_ddp.py) on the same model shape and recipe (bench/llm/compare_train_hf.py: bf16
# autocast, batch 8 x 512 per GPU, AdamW, clipping; mean of 10 steps after 3 warm-ups).
# Prints one JSON line per run and the table: tokens/s and scaling = tokens/s at N / at 1.
#
#   bench/distributed/run.sh <path to genesis> [N=2] [config=qwen2.5-0.5b]
#
# BATCH=16 changes the rows per GPU (default 8); REDUCE_DTYPE=bf16 all-reduces bf16 gradients in
# both (Genesis: $GENESIS_DDP_REDUCE_DTYPE; PyTorch: its bf16_compress_hook).
#
# Writes $OUT/distributed_bench_b<BATCH>_<REDUCE_DTYPE>.jsonl (the lent GPU machine) or ./ .
set -euo pipefail
G=$(realpath "$1")
N=${2:-2}
CONFIG=${3:-qwen2.5-0.5b}
HERE=$(cd "$(dirname "$0")" && pwd)
BATCH=${BATCH:-8}
REDUCE_DTYPE=${REDUCE_DTYPE:-none}
LOG=${OUT:-.}/distributed_bench_b${BATCH}_${REDUCE_DTYPE}.jsonl
: > "$LOG"
export GENESIS_DDP_REDUCE_DTYPE=$REDUCE_DTYPE
torch_extra=(--batch "$BATCH")
[ "$REDUCE_DTYPE" = none ] || torch_extra+=(--reduce-dtype "$REDUCE_DTYPE")
comm=f32
[ "$REDUCE_DTYPE" = none ] || comm=$REDUCE_DTYPE
echo "batch $BATCH x 512 per GPU, gradients all-reduced in $comm"
# NVLink multicast stays off (it can wedge shared GPUs); NCCL and torch both honour this.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi --query-gpu=name --format=csv,noheader | head -"$N"
common=(-q bench train --config "$CONFIG" --autocast bf16 --device cuda --json --batch "$BATCH")
echo "== genesis, 1 GPU"
"$G" "${common[@]}" | tee -a "$LOG"
echo "== genesis, $N GPUs (genesis launch)"
"$G" launch --nproc-per-node "$N" --master-port 0 "$G" "${common[@]}" | tee -a "$LOG"
echo "== pytorch DDP, 1 GPU"
PYTHONUNBUFFERED=1 "$G" launch --nproc-per-node 1 --master-port 0 python3 "$HERE/torch_ddp.py" --config "$CONFIG" "${torch_extra[@]}" | tee -a "$LOG"
echo "== pytorch DDP, $N GPUs"
PYTHONUNBUFFERED=1 "$G" launch --nproc-per-node "$N" --master-port 0 python3 "$HERE/torch_ddp.py" --config "$CONFIG" "${torch_extra[@]}" | tee -a "$LOG"
python3 - "$LOG" "$N" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
n = int(sys.argv[2])
def tps(fw, w):
    for r in rows:
        if r.get("framework", "genesis") == fw and r.get("world_size", 1) == w:
            return r["tokens_per_second"]
print("\n| framework | tokens/s, 1 GPU | tokens/s, %d GPUs | scaling |" % n)
print("|---|---:|---:|---:|")
for fw in ("genesis", "pytorch-ddp"):
    a, b = tps(fw, 1), tps(fw, n)
    if a and b:
        print("| %s | %.0f | %.0f | %.2fx (%.0f%% of linear) |" % (fw, a, b, b / a, 100 * b / a / n))
PY
