#!/usr/bin/env bash
# The CUDA route, tried once on the H200 machine (bench/gpu/run-h200.sh runs it): can the onnx
# backend's CUDA execution provider start there with nothing downloaded? onnxruntime-node 1.30's
# provider library (libonnxruntime_providers_cuda.so) is not in its npm package (its install
# script fetches it from NuGet, which no machine here reaches), and it wants CUDA 12 and
# cuDNN 9, where that image has CUDA 13 and cuDNN (for CUDA 13) in Python wheels. So this
# records: the provider libraries the machine has (an onnxruntime-gpu wheel would carry one of
# the same version, 1.30), then tries the provider with the CUDA and cuDNN wheel libraries on
# the library path, copying a found provider library next to onnxruntime-node's own.
set -uo pipefail
cd "$(dirname "$0")/../.."
ort_dir=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
echo "== onnxruntime-node's libraries"
ls -l "$ort_dir"
echo "== python onnxruntime"
python3 -c 'import onnxruntime as o; print(o.__version__, o.get_available_providers())' 2>&1
echo "== provider libraries on the machine"
providers=$(find / -xdev -name 'libonnxruntime_providers_cuda.so' 2>/dev/null | head -5)
echo "${providers:-none}"
echo "== CUDA and cuDNN libraries from the Python wheels"
wheel_libs=$(python3 -c 'import glob, os, site; print(":".join(sorted({os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/lib*.so*", recursive=True)})))' 2>/dev/null)
echo "${wheel_libs:-none}" | tr ':' '\n'
for provider in $providers; do
  cp -n "$provider" "$(dirname "$provider")"/libonnxruntime_providers_shared.so "$ort_dir"/ 2>/dev/null
  break
done
echo "== FEDTENSOR_EXECUTION_PROVIDER=cuda"
LD_LIBRARY_PATH="${wheel_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FEDTENSOR_EXECUTION_PROVIDER=cuda node --input-type=module -e '
  const ft = await import("./dist/src/index.js");
  const p = ft.program({ a: ft.atServer(ft.f32([256, 256])) }, ({ a }) => ft.sum(ft.matmul(a, a)));
  try {
    const out = await p.run({ a: Array.from({ length: 256 }, () => new Array(256).fill(0.5)) }, { backend: "onnx" });
    console.log("cuda route works: sum =", (await out.data())[0], "(expected", 256 * 256 * 256 * 0.25, ")");
  } catch (error) {
    console.log("cuda route fails:", error.message);
  }'
