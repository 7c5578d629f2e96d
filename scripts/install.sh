#!/usr/bin/env bash
# Sets up .venv with everything the factory and its tests need. The README's first command
# and .ci/run both call this, so a user's machine and CI get the same binaries.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
pip=".venv/bin/pip"
$pip install -q --upgrade "pip==26.0"
# torch first, pinned: the CPU build on this machine's disk (an unpinned torch pulls CUDA wheels)
$pip install -q "torch==2.13.0"

# llama.cpp for a portable x86-64 target (AVX2/FMA/F16C, no AVX-512, no AMX). Built for
# the build machine's own CPU (GGML_NATIVE, the default) on a CPU that reports AMX, ggml's
# AMX kernels segfault at the first prompt. pip keys the wheels it builds by source, not
# by build flags, so a natively built wheel in a warm cache would come back even with
# --no-binary; the portable build therefore gets a wheel cache of its own, named after
# its flags.
LLAMA_CPP="llama-cpp-python[server]==0.3.36"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
key=$(printf '%s %s' "$LLAMA_CPP" "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-16)
cache="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}/portable-llama-$key"
CMAKE_ARGS="$LLAMA_CMAKE_ARGS" $pip install -q --cache-dir "$cache" \
    --no-binary llama-cpp-python "$LLAMA_CPP"

$pip install -q -e ".[all]"
# refuse an environment whose llama.cpp was built for one CPU (see factory/llm/cpu_build.py)
.venv/bin/python -m factory.llm.cpu_build --require-portable
