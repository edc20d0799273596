"""Shared by the Python tests: where the repository and the reference data are, and the CLI
binary whose ``--json`` output the native module's results are compared with."""

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("QUANTSCOPE_SHARED", REPO.parent / "shared"))
#: The golden reference data, as the Rust tests find it ($QUANTSCOPE_GOLDEN, else shared/golden).
GOLDEN = Path(os.environ.get("QUANTSCOPE_GOLDEN", SHARED / "golden"))

#: The CLI binary `cargo test` leaves in target/debug (the `test` profile, optimised).
CLI = REPO / "target" / "debug" / "quantscope"


def _newest(folder: Path, suffix: str) -> float:
    return max((p.stat().st_mtime for p in folder.rglob(f"*{suffix}")), default=0.0)


def cli_run(*args, cwd=None):
    """Run the CLI (built first when missing or older than the sources, as e2e/helpers.mjs does):
    its completed process, output as text."""
    if not CLI.exists() or CLI.stat().st_mtime < _newest(REPO / "src", ".rs"):
        subprocess.run(
            ["cargo", "build", "--quiet", "--locked", "--profile", "test", "--bin", "quantscope"],
            cwd=REPO,
            check=True,
        )
    return subprocess.run([str(CLI), *map(str, args)], cwd=cwd, capture_output=True, text=True)


def cli_json(*args, cwd=None):
    """The JSON document the CLI prints for ``args`` (which should include ``--json``)."""
    done = cli_run(*args, cwd=cwd)
    assert done.returncode == 0, f"quantscope {' '.join(map(str, args))}: {done.stderr}"
    return json.loads(done.stdout)


def cli_error(*args, cwd=None):
    """The message the CLI exits with for ``args`` (its stderr without the ``quantscope: ``)."""
    done = cli_run(*args, cwd=cwd)
    assert done.returncode != 0, f"quantscope {' '.join(map(str, args))} succeeded"
    return done.stderr.strip().removeprefix("quantscope: ")


def plain(value):
    """A result with numpy arrays and scalars made lists and numbers, to compare with JSON."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value
