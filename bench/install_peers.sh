#!/usr/bin/env bash
# Install the peer RL libraries that bench/bench_peers.py compares against, into the project's venv (or $VENV).
#
#   bash bench/install_peers.sh
#
# - Stable-Baselines3: the `[bench]` extra, with torch held at the pinned CPU build (a constraints file).
# - PufferLib (pufferlib-core 3.0.23): its wheel's `_C` kernel needs CUDA's runtime to import, so it is built
#   from its source distribution with CUDA off, against the torch already in the venv (--no-build-isolation) and
#   with --no-deps (the sdist pins torch==2.9.0: resolving that swaps the CPU torch for a multi-GB CUDA build).
#   ~3 min on 2 cores the first time; the built wheel is cached in $ZELDA_PEERS_CACHE and reinstalled from there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
CACHE="${ZELDA_PEERS_CACHE:-$HOME/.cache/zelda-rlaif/peers}"
PUFFER_VERSION=3.0.23
TORCH_PIN="torch==2.13.0"
mkdir -p "$CACHE"
CONSTRAINTS="$CACHE/constraints.txt"
echo "$TORCH_PIN" > "$CONSTRAINTS"

# The `[bench]` extra's peer (pyproject.toml), without reinstalling the project itself.
"$PY" -m pip install --quiet -c "$CONSTRAINTS" "stable-baselines3>=2.4,<3"
# PufferLib's trainer imports these; pyro-ppl depends on torch, hence the constraints.
"$PY" -m pip install --quiet -c "$CONSTRAINTS" psutil nvidia-ml-py rich rich-argparse pyro-ppl

if "$PY" -c "import pufferlib.pufferl as p; raise SystemExit(0 if p._C_AVAILABLE else 1)" 2>/dev/null; then
  echo "pufferlib-core: already installed with its C kernel"
else
  wheel="$(ls "$CACHE"/pufferlib_core-"$PUFFER_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$wheel" ]; then
    sdist="$(ls "$CACHE"/pufferlib_core-"$PUFFER_VERSION".tar.gz 2>/dev/null | head -n1 || true)"
    if [ -z "$sdist" ]; then
      # Build tools in the venv and no build isolation, for the download too: pip prepares an sdist's metadata
      # after downloading it, and in an isolated build env that installs the sdist's torch==2.9.0 (GBs of CUDA).
      "$PY" -m pip install --quiet -c "$CONSTRAINTS" setuptools wheel "setuptools_scm>=8" numpy
      PUFFERLIB_DISABLE_CUDA=1 "$PY" -m pip download --quiet --no-deps --no-build-isolation --no-binary pufferlib-core \
        -d "$CACHE" "pufferlib-core==$PUFFER_VERSION"
      sdist="$(ls "$CACHE"/pufferlib_core-"$PUFFER_VERSION".tar.gz)"
    fi
    echo "building pufferlib-core $PUFFER_VERSION for CPU from $sdist (~3 min on 2 cores)"
    PUFFERLIB_DISABLE_CUDA=1 "$PY" -m pip wheel --quiet --no-build-isolation --no-deps -w "$CACHE" "$sdist"
    wheel="$(ls "$CACHE"/pufferlib_core-"$PUFFER_VERSION"-*.whl | head -n1)"
  fi
  "$PY" -m pip install --quiet --no-deps --force-reinstall "$wheel"
fi
"$PY" - <<'PY'
import pufferlib.pufferl as p
import stable_baselines3
import torch
assert p._C_AVAILABLE, "pufferlib's C kernel did not build"
assert "+cpu" in torch.__version__ or not torch.cuda.is_available(), torch.__version__
print(f"peers ready: stable-baselines3 {stable_baselines3.__version__}, pufferlib C kernel on, torch {torch.__version__}")
PY
