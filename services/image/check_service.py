"""Image build step shared by every service's Dockerfile: prove the slim image can run its service.

    python check_service.py zelda_judge judge

Imports every module of the service's package (a dependency left out of the image becomes a build failure,
not a crash in production) and runs ``zelda-rlaif <subcommand> --help`` with the same interpreter.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys


def main(package_name: str, subcommand: str) -> None:
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    subprocess.run([sys.executable, "-m", "zelda_rlaif.cli", subcommand, "--help"], check=True,
                   stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main(*sys.argv[1:3])
