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
# Every step writes <step>.txt; summary.txt says what each step returned; both come back in
# $OUT/gpu-out.tar.gz, and summary.txt beside it.
#
# usage, from a session lent the machine (see docs/benchmarks.md, "GPU"):
#   bash bench/gpu/pack.sh        # here, once: .gpu-carry/ and .gl/
#   device run: command "bash bench/gpu/run-h200.sh", carry [".gpu-carry", ".gl"], timeout_s 590
# A narrower second run: STEPS="adapter differential fedavg" WEBGPU_FEDAVG="--models cnn --whole 100
# --clients= --timeout 90" BUDGET=300 bash bench/gpu/run-h200.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
# A device run returns at most 8 files from $OUT: the steps write into a folder of their own,
# packed into $OUT/gpu-out.tar.gz at the end, beside summary.txt.
RETURN=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)
mkdir -p "$RETURN"
trap 'tar -czf "$RETURN/gpu-out.tar.gz" -C "$OUT" . && cp "$OUT/summary.txt" "$RETURN/"' EXIT
BUDGET=${BUDGET:-570}
started=$(date +%s)
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, if the budget still has it
# and STEPS (space-separated step names, all by default) names it.
step() {
  local name=$1 limit=$2
  shift 2
  if [ -n "${STEPS:-}" ] && [[ " $STEPS " != *" $name "* ]]; then
    summary "$name: not in STEPS"
    return 0
  fi
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
  return $rc
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
adapter_script='
  const { useBackend } = await import("./dist/src/index.js");
  const { webGpuAdapter } = await import("./dist/src/runtime/webgpu.js");
  await useBackend("webgpu");
  console.log(JSON.stringify(webGpuAdapter()));'
# Dawn on Vulkan first; where the driver's Vulkan ICD does not start, Dawn's OpenGL ES backend
# on the same GPU through the driver's EGL (the steps after it run on whichever started).
if ! step adapter 60 node --input-type=module -e "$adapter_script"; then
  export FEDTENSOR_WEBGPU_DAWN=backend=opengl EGL_PLATFORM=surfaceless
  egl_vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [ -f "$egl_vendor" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl_vendor
  step adapter-opengl 60 node --input-type=module -e "$adapter_script"
fi
FEDTENSOR_TEST_BACKENDS=webgpu FEDTENSOR_TEST_WEBGPU_PROGRAMS=600 \
  step differential 150 node node_modules/vitest/vitest.mjs run test/differential -t webgpu
step gemm 80 node dist/bench/gemm.js --backends onnx,webgpu --sizes 1024,2048,4096,8192 --rounds 5 --peak-tflops 67 --json "$OUT/gemm.json"
# The FedAvg cases, replaceable for a second, narrower run (as STEPS is).
read -r -a webgpu_cases <<<"${WEBGPU_FEDAVG:---models 2nn,cnn --whole 10,100 --clients 1000 --timeout 45}"
read -r -a onnx_cases <<<"${ONNX_FEDAVG:---models 2nn,cnn --whole 10,100 --clients= --timeout 25}"
step fedavg 200 node dist/bench/fedavg-scaling.js --backends webgpu "${webgpu_cases[@]}" --json "$OUT/fedavg.json"
step fedavg-onnx 100 node dist/bench/fedavg-scaling.js --backends onnx "${onnx_cases[@]}" --json "$OUT/fedavg-onnx.json"
step cuda 40 bash bench/gpu/cuda-route.sh
summary "done after $(($(date +%s) - started))s"
