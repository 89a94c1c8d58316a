"""A directory where `evaluate.apps` keeps what it has measured after every method (`checkpoint=DIR`).

The comparison of every strategy on the 17 apps takes longer than a working session, and one app with its 13
methods can take two hours. `resume=` continues from an MLflow run, but only where that store still exists. A
checkpoint directory is plain files that can be committed and continued on another machine. It holds the
settings (params.json), the rows of the finished apps (apps.csv) and the rows of the app being measured so far
(app_partial.csv). A run given the same directory again checks the settings are the same, keeps every row
there as measured, and measures only the methods still missing.

A method measured in an earlier process is not searched again. Two things follow:
- MCTS's matched budget takes beam's evaluations and its row's search seconds;
- a later method that returns the same LoopNest is measured again instead of sharing the earlier measurement.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .config import EvaluateError

PARAMS = "params.json"
WHOLE = "apps.csv"
PARTIAL = "app_partial.csv"


@dataclass
class Checkpoint:
    """The directory and the rows it held when opened: `whole` of finished apps, `partial` of at most one app."""

    path: Path
    whole: list = field(default_factory=list)
    partial: list = field(default_factory=list)

    def save(self, whole: list, partial: list) -> None:
        """Rewrites both row files (each replaced at once, so an interrupted write loses nothing)."""
        from .apps import table_csv

        _write(self.path / WHOLE, table_csv(whole))
        _write(self.path / PARTIAL, table_csv(partial))


def open_checkpoint(cfg, settings: dict[str, str], names: list[str]) -> Checkpoint:
    """The checkpoint at `cfg.checkpoint`, created with `settings` (key -> value as logged) when new. Refused in
    one line when it was measured with other settings. Rows of apps not in `names` are not kept."""
    from .apps import differing_settings, more_keys, rows_from_csv

    path = Path(cfg.checkpoint)
    if path.exists() and not path.is_dir():
        raise EvaluateError(f"checkpoint={cfg.checkpoint} is a file; give a directory (it is created if missing)")
    params = path / PARAMS
    if not params.exists():
        path.mkdir(parents=True, exist_ok=True)
        _write_settings(params, settings)
        return Checkpoint(path)
    try:
        old = json.loads(params.read_text())
    except (OSError, ValueError) as e:
        raise EvaluateError(f"checkpoint={cfg.checkpoint}: cannot read {PARAMS} ({e}); "
                            "give an empty directory to start over") from None
    differ = differing_settings(settings, old, {})  # keys added since the checkpoint began: not compared
    if differ:
        k = differ[0]
        raise EvaluateError(f"checkpoint={cfg.checkpoint}: it was measured with {k}={old[k]}, this run has "
                            f"{k}={settings[k]}; use the same settings or another directory" + more_keys(differ))
    if settings.keys() - old.keys():  # keys added since it began: its rows keep how they were measured, and
        _write_settings(params, old | settings)  # from now on the new keys are compared too

    def rows(name: str) -> list:
        f = path / name
        return [r for r in rows_from_csv(f.read_text()) if r.app in names] if f.exists() else []

    whole = rows(WHOLE)
    done = {r.app for r in whole}
    return Checkpoint(path, whole, [r for r in rows(PARTIAL) if r.app not in done])


def _write_settings(path: Path, settings: dict[str, str]) -> None:
    _write(path, json.dumps(settings, indent=1, sort_keys=True) + "\n")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
