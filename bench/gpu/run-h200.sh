#!/usr/bin/env bash
# The GPU check of the webgpu backend, in one run on the H200 device machine (no Node, no
# network there): bring what bench/gpu/pack.sh packed, then, each step with its own time limit
# and the whole within the 10-minute limit of one device command:
#   1. environment: nvidia-smi, the Vulkan loader and ICD, Node
#   2. the adapter Dawn finds (FT301 saying what is missing if none)
#   3. the differential tests on webgpu (FEDTENSOR_TEST_BACKENDS=webgpu: an adapter that does
#      not start fails them rather than skipping)
#   4. GEMM throughput, onnx on the 16 CPU cores against webgpu, and the fraction of the
#      H200's float32 peak (67 TFLOP/s by NVIDIA's datasheet; WebGPU has no tensor cores)
#   5. a FedAvg round of the 2NN and of the CNN at 10, 100 and 1,000 clients on webgpu, and on
#      onnx (CPU) at 10 and 100 as the baseline
#   6. the CUDA route: whether onnxruntime-node's CUDA execution provider can start there
# Every step writes $OUT/<step>.txt; $OUT/summary.txt says what each step returned.
#
# usage, from a session lent the machine (see docs/benchmarks.md, "GPU"):
#   bash bench/gpu/pack.sh        # here, once: .gpu-carry/ and .gl/
#   device run: command "bash bench/gpu/run-h200.sh", carry [".gpu-carry", ".gl"], timeout_s 590
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
BUDGET=${BUDGET:-570}
started=$(date +%s)
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, if the budget still has it.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - ($(date +%s) - started)))
  if [ "$left" -lt 15 ]; then
    summary "$name: skipped, ${left}s of the budget left"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  summary "$name: exit $rc after $(($(date +%s) - t0))s (limit ${limit}s)"
}

# Bring Node, the packages and the Vulkan loader.
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/ft-node
xz -dc .gpu-carry/node.xz >/tmp/ft-node/node && chmod +x /tmp/ft-node/node
export PATH=/tmp/ft-node:$PATH
# node_modules and dist are ignored, so they do not travel: the packed ones are unpacked. (Run
# where they exist, as to check this script on a CPU machine, it uses those.)
[ -d node_modules ] || tar -xJf .gpu-carry/packages.tar.xz
# The driver's ICD, where the loader does not find one of its own.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1 && [ -f "$nvidia_icd" ]; then
  export VK_DRIVER_FILES=$nvidia_icd
fi
summary "unpacked after $(($(date +%s) - started))s; VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"

step environment 30 bash -c 'nvidia-smi; node --version; ldconfig -p | grep -i vulkan; ls -l /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1; cat "'"$nvidia_icd"'" 2>&1'
step adapter 60 node --input-type=module -e '
  const { useBackend } = await import("./dist/src/index.js");
  const { webGpuAdapter } = await import("./dist/src/runtime/webgpu.js");
  await useBackend("webgpu");
  console.log(JSON.stringify(webGpuAdapter()));'
FEDTENSOR_TEST_BACKENDS=webgpu FEDTENSOR_TEST_WEBGPU_PROGRAMS=600 \
  step differential 150 node node_modules/vitest/vitest.mjs run test/differential -t webgpu
step gemm 80 node dist/bench/gemm.js --backends onnx,webgpu --sizes 1024,2048,4096,8192 --rounds 5 --peak-tflops 67 --json "$OUT/gemm.json"
step fedavg 200 node dist/bench/fedavg-scaling.js --backends webgpu --models 2nn,cnn --whole 10,100 --clients 1000 --timeout 45 --json "$OUT/fedavg.json"
step fedavg-onnx 70 node dist/bench/fedavg-scaling.js --backends onnx --models 2nn,cnn --whole 10,100 --clients "" --timeout 25 --json "$OUT/fedavg-onnx.json"
step cuda 40 bash bench/gpu/cuda-route.sh
summary "done after $(($(date +%s) - started))s"
