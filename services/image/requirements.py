"""Image build step shared by every service's Dockerfile: split pyproject.toml's dependencies for one image.

    SKIP_DEPS="torch ray" python requirements.py

Writes ``requirements-torch.txt`` (installed from the PyTorch index of the image's TORCH_VARIANT, so a CPU
image never pulls CUDA) and ``requirements-image.txt`` (everything else) in the current directory, leaving
out the dependencies named in ``SKIP_DEPS`` that the service never imports. Reading pyproject.toml itself
means there is no second dependency list to drift.
"""

from __future__ import annotations

import os
import re
import tomllib


def main() -> None:
    skip = set(os.environ.get("SKIP_DEPS", "").split())
    with open("pyproject.toml", "rb") as handle:
        specs = tomllib.load(handle)["project"]["dependencies"]
    with open("requirements-torch.txt", "w") as torch, open("requirements-image.txt", "w") as rest:
        for spec in specs:
            match = re.match(r"[A-Za-z0-9_.-]+", spec)
            assert match is not None, spec
            name = match.group(0).lower().replace("_", "-")
            if name not in skip:
                (torch if name == "torch" else rest).write(spec + "\n")


if __name__ == "__main__":
    main()
