#!/usr/bin/env bash
# Packs built kernel directories (git-ignored: perf/probe*/kernels, a hunt's DIR) into .device/built.tar.xz, so a
# device call carries them inside .device. The carry limit (64 MiB) counts the working tree and .device's ~39 MB
# bundle, which leaves room for two probes' kernel directories as they are; xz packs their CUDA and Python
# about 30× (session 55: four probes' 15 MB into 0.16 MB). On the device, before the probe's call script:
#     tar -xJf .device/built.tar.xz        # from the repository root: each directory lands at its path there
# (tar drops an absolute path's leading /, so /tmp/hunt lands as tmp/hunt under the root).
# Usage: bash scripts/pack_built.sh PATH [PATH ...]   (paths relative to the repository root)
set -eu
if [[ $# -eq 0 ]]; then
    echo "usage: bash scripts/pack_built.sh PATH [PATH ...]" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
mkdir -p .device
tar -cJf .device/built.tar.xz "$@"
echo "$(du -h .device/built.tar.xz | cut -f1) in .device/built.tar.xz: carry [\".device\"], then tar -xJf .device/built.tar.xz"
