# Every image of zelda-rlaif, one target per service, all built from the repository root:
#   docker build --target judge        -t zelda-rlaif/judge .
#   docker build --target hud          -t zelda-rlaif/hud .
#   docker build --target reward-model -t zelda-rlaif/reward-model .
#   docker build --target trainer      -t zelda-rlaif/trainer .
# The targets share the `base` stage (Python, the non-root user and the core dependencies), so a node pulls
# those layers once for all four. Each target then installs its service's extra of pyproject.toml (the only
# dependency list): the judge and HUD images carry neither torch, Ray nor PyBoy.
#
# torch: the CPU build by default. The GPU learner needs a CUDA build; PyTorch's CUDA wheels bring their own
# CUDA runtime, so the same file makes it from the slim base (pick the index that matches the nodes' driver):
#   docker build --target trainer --build-arg TORCH_VARIANT=cu128 -t zelda-rlaif/trainer:cuda .
#
# Package index settings of the build host (a mirror, a local wheel cache) go in as a secret, never into a layer:
#   docker build --secret id=pip.conf,src=$HOME/.config/pip/pip.conf --target judge .
# Offline, from a wheelhouse: an image holding the wheels at its root, mounted at /wheelhouse while pip runs, and
# a pip.conf secret with `no-index = true` and `find-links = /wheelhouse` (scripts/compose-check does this):
#   docker build --build-arg WHEELHOUSE_IMAGE=my/wheels:1 --secret id=pip.conf,src=offline.conf --target judge .
# Only features of Dockerfile 1.2 (no `# syntax=` line, which would pull a frontend image): Debian's docker.io
# 20.10 builds it as well as a current Docker.
# The ROM is never copied in: mount it and set ZELDA_TRAINER_ROM (unset plays the bundled test world).
#
# PYTHON_IMAGE: any Debian-based image with Python 3.11 and its venv module, e.g. one made with
# `mmdebstrap --include=python3,python3-venv,ca-certificates bookworm` and `docker import`.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG WHEELHOUSE_IMAGE=scratch

# ---- wheelhouse: wheels for pip's --find-links; empty unless WHEELHOUSE_IMAGE names an image --------------------
FROM ${WHEELHOUSE_IMAGE} AS wheelhouse

# ---- base: what every service image shares ------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    OMP_NUM_THREADS=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
# Everything goes into a virtualenv: the same layout whether the base's Python is python.org's (slim) or Debian's
# (which has no pip and refuses system-wide installs), and `python` is on PATH in both.
# Non-root; group 0 owns HOME so OpenShift's arbitrary UIDs (always in group 0) can write there too.
RUN python3 -m venv /opt/venv \
 && useradd --uid 10001 --gid 0 --home-dir /home/zelda --create-home --shell /usr/sbin/nologin zelda \
 && chmod g=u /home/zelda
WORKDIR /src
# Dependencies before code, so a code change reuses every dependency layer: with no package directories yet,
# installing `.` pulls the core dependencies and an empty project, removed again with its build files.
COPY pyproject.toml README.md ./
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip install . && pip uninstall --yes zelda-rlaif && rm -rf build ./*.egg-info

# ---- wheel: the project's own code, built once for every target ---------------------------------------------
FROM base AS wheel
COPY shared/ shared/
COPY services/ services/
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip wheel --no-deps --wheel-dir /wheels .

# ---- judge: `zelda-rlaif judge --kind state|puzzle|vision` (one kind per container) --------------------------
FROM base AS judge
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip install ".[judge]" && pip uninstall --yes zelda-rlaif && rm -rf build ./*.egg-info
# Installing the code proves the slim image can start its service: `--help` builds every subcommand's parser.
RUN --mount=type=bind,from=wheel,source=/wheels,target=/wheels \
    pip install --no-deps /wheels/*.whl && zelda-rlaif judge --help >/dev/null
WORKDIR /home/zelda
USER 10001:0
EXPOSE 8080
CMD ["zelda-rlaif", "judge", "--kind", "state"]

# ---- hud: `zelda-rlaif hud`, the dashboard (HTTP and websockets on 8080) ------------------------------------
FROM base AS hud
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip install ".[hud]" && pip uninstall --yes zelda-rlaif && rm -rf build ./*.egg-info
RUN --mount=type=bind,from=wheel,source=/wheels,target=/wheels \
    pip install --no-deps /wheels/*.whl && zelda-rlaif hud --help >/dev/null
ENV ZELDA_HUD_HOST=0.0.0.0 \
    ZELDA_HUD_PORT=8080
WORKDIR /home/zelda
USER 10001:0
EXPOSE 8080
CMD ["zelda-rlaif", "hud"]

# ---- reward-model: `zelda-rlaif reward-model`, the Bradley-Terry MLP (CPU torch; no Ray, PyBoy) --------------
FROM base AS reward-model
ARG TORCH_VARIANT=cpu
# torch comes from this index: its +cpu / +cuXXX build outranks PyPI's (which would pull GBs of CUDA on CPU nodes).
# Empty: torch from the configured index only (e.g. a pip.conf secret pointing at a wheel cache).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/${TORCH_VARIANT}
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip install ${TORCH_INDEX_URL:+--extra-index-url=$TORCH_INDEX_URL} ".[reward-model]" \
 && pip uninstall --yes zelda-rlaif && rm -rf build ./*.egg-info
RUN --mount=type=bind,from=wheel,source=/wheels,target=/wheels \
    pip install --no-deps /wheels/*.whl && zelda-rlaif reward-model --help >/dev/null
WORKDIR /home/zelda
USER 10001:0
CMD ["zelda-rlaif", "reward-model"]

# ---- trainer: `zelda-rlaif trainer`; on Kubernetes also the KubeRay head, workers and RayJob submitter --------
FROM base AS trainer
ARG TORCH_VARIANT=cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/${TORCH_VARIANT}
ENV RAY_USAGE_STATS_ENABLED=0
# `kuberay` is the trainer's extra plus ray[default]: the dashboard and job API a KubeRay head serves.
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf,required=false \
    --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    pip install ${TORCH_INDEX_URL:+--extra-index-url=$TORCH_INDEX_URL} ".[kuberay]" \
 && pip uninstall --yes zelda-rlaif && rm -rf build ./*.egg-info
RUN --mount=type=bind,from=wheel,source=/wheels,target=/wheels \
    pip install --no-deps /wheels/*.whl && zelda-rlaif trainer --help >/dev/null
WORKDIR /home/zelda
USER 10001:0
# Ray: GCS 6379, dashboard and job API 8265, client 10001, dashboard agent 52365.
EXPOSE 6379 8265 10001 52365
CMD ["zelda-rlaif", "trainer"]
