"""Every family's public golden cases through the native module, checked exactly as the npm
package and the page check them: the cases to run and the checks (each case's own tolerances)
are e2e/npm-golden.mjs's (`--jobs`, `--check`), so the Python path runs the same list with the
same comparisons; only running a case is done here, through ``quantscope.observe`` and
``quantscope.quantize`` on the inputs loaded with numpy. The per-family and per-observer counts
are written to target/golden-paths/python.json for the README's parity table."""

import base64
import json
import shutil
import subprocess

import numpy as np
import pytest

import quantscope

from conftest import GOLDEN, REPO

NPM_GOLDEN = REPO / "e2e" / "npm-golden.mjs"
SUMMARY = REPO / "target" / "golden-paths" / "python.json"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "www" / "pkg" / "quantscope_bg.wasm").exists() or not GOLDEN.is_dir(),
    reason="needs node, www/pkg (scripts/build-web.sh) and the golden data",
)


def _node(*args):
    done = subprocess.run(["node", str(NPM_GOLDEN), *map(str, args)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _error(e):
    """A refusal as a report carries it (what the checks compare with the framework's)."""
    return {
        "ok": False,
        "error": {"kind": e.kind, "message": str(e), "exception": e.exception, "stage": e.stage, "param": e.param},
    }


def _json(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(type(value).__name__)


def run_case(job):
    """One case through the module: the report (or the refusal), JSON-ready."""
    arrays = [np.load(p) for p in job["inputs"]]
    try:
        if job["kind"] == "quantize":
            result = quantscope.quantize(arrays[0], job["id"], job["params"], explain=job["explain"])
            values = np.ascontiguousarray(result.pop("values"), dtype="<f4")
            result["values_f32_base64"] = base64.b64encode(values.tobytes()).decode()
            return result
        # Refused by the constructor, before any data: any tensor will do.
        data = arrays if len(arrays) > 1 else arrays[0] if arrays else np.zeros(1, np.float32)
        return quantscope.observe(data, job["id"], job["params"])
    except ValueError as e:
        return _error(e)
    except Exception as e:  # reported as the case's failure, with its message
        return {"threw": f"{type(e).__name__}: {e}"}


def test_every_golden_case_through_the_python_module(tmp_path):
    jobs = _node("--jobs", GOLDEN)
    results = {job["key"]: run_case(job) for job in jobs}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results, default=_json, allow_nan=False))
    families = _node("--check", path, GOLDEN)["families"]
    SUMMARY.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY.write_text(json.dumps(families, indent=1, sort_keys=True) + "\n")
    counts = ", ".join(f"{name} {f['passed']}/{f['checked']}" for name, f in families.items() if f["checked"])
    print(f"golden cases through the Python module: {counts}")
    assert families, "no golden family found"
    for name, f in families.items():
        assert f["checked"] > 0, f"{name}: no case checked"
        assert f["failures"] == [], f"{name}: {f['passed']}/{f['checked']}"
