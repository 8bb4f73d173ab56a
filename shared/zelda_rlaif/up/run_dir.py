"""A ``zelda-rlaif up`` run directory: the files ``up`` writes there, and which run it holds and where its store
is, for the commands that read a finished run (``hud --run-dir``, ``eval``, ``replay``).

The readers raise ``ValueError`` with what to do; settings validation turns it into a message naming the variable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.events import RunId
from zelda_rlaif.settings import StoreSettings, load_settings
from zelda_rlaif.storage import ObjectStore, open_store

_RUN_ID: TypeAdapter[str] = TypeAdapter(RunId)

RUN_FILE = "run.json"  # written when a run starts: names the latest run, the one --resume continues
SUMMARY_FILE = "summary.json"  # written when a run ends: the RunSummary


def write_run_file(run_dir: Path, run_id: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_FILE).write_text(json.dumps({"run_id": run_id}))


def _record(run_dir: Path) -> tuple[Path, dict[str, Any]] | None:
    """``summary.json`` (written when a run finished there), else ``run.json`` (a run that stopped before its
    summary), as read; None when there is neither."""
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir} is not a directory: give the directory `zelda-rlaif up --run-dir` used "
                         "(default runs/local)")
    for name in (SUMMARY_FILE, RUN_FILE):
        path = run_dir / name
        if path.is_file():
            try:
                found = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path} is unreadable ({exc}); pass the run id with --run-id") from exc
            return path, found if isinstance(found, dict) else {}
    return None


def run_id_of(run_dir: Path) -> str:
    record = _record(run_dir)
    if record is None:
        raise ValueError(f"{run_dir} has neither {SUMMARY_FILE} nor {RUN_FILE}, so it holds no run of "
                         "`zelda-rlaif up`; "
                         "pass the run id with --run-id")
    path, found = record
    try:
        return _RUN_ID.validate_python(found.get("run_id"))
    except ValidationError as exc:
        raise ValueError(f"{path} names no valid run id; pass it with --run-id") from exc


def store_url_of(run_dir: Path) -> str:
    """The directory's own ``store/`` when it has one (so a moved directory still works), else the store its
    summary names (``up --store-url s3://...``)."""
    local = run_dir / "store"
    if local.is_dir():
        return local.resolve().as_uri()
    record = _record(run_dir)
    named = record[1].get("store") if record else None
    if not isinstance(named, str):
        raise ValueError(f"{run_dir} has no store/ and no summary.json naming its store; pass --store-url")
    return named


def open_run(run_dir: Path, run_id: str | None = None, store_url: str | None = None) -> tuple[str, ObjectStore]:
    """The run a command on a finished run reads, and its store: the flags first, then the environment
    (``ZELDA_STORE_*``, through the store's own settings), then what ``run_dir`` records. Raises ``SettingsError``
    saying what to do."""
    try:
        run_id = run_id or run_id_of(run_dir)
        settings = load_settings(StoreSettings, **({"url": store_url} if store_url else {}))
        if "url" not in settings.model_fields_set:
            settings = settings.model_copy(update={"url": store_url_of(run_dir)})
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    return run_id, open_store(settings)
