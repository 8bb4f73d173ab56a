# Sourced by scripts/up and scripts/test: create .venv once and install the project into it.
# PyTorch is pinned to 2.13.0 (the CPU build that lies on our machines); any other spec pulls GBs of CUDA.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ZELDA_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# `all`: everything `zelda-rlaif up` runs in one process (the bare install is what every service image shares).
"$VENV/bin/python" -m pip install --quiet -e "$ROOT${ZELDA_EXTRAS:-[all]}"
export PATH="$VENV/bin:$PATH"
# Two cores: torch's default thread pool makes small-MLP work many times slower across processes.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"
