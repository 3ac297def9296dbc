"""The fake container: runs one spawned function as a Modal container would, then settles it.

x-tui is not installed in a Modal image, so importing it here fails, exactly as a function
pickled by reference to an x-tui module would fail in the real container.
"""

from __future__ import annotations

import builtins
import importlib
import json
import marshal
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

sys.modules["x_tui"] = None  # type: ignore[assignment]

from modal._fake import read_json, root, settle  # noqa: E402


def _target(payload: dict[str, Any]) -> Any:
    if payload["by"] == "reference":
        target: Any = importlib.import_module(payload["module"])
        for part in payload["qualname"].split("."):
            target = getattr(target, part)
        return target
    code = marshal.loads(bytes.fromhex(payload["code"]))
    namespace = {"__builtins__": builtins, "__name__": payload["module"]}
    defaults = tuple(payload["defaults"]) if payload["defaults"] is not None else None
    function = types.FunctionType(code, namespace, payload["name"], defaults)
    function.__kwdefaults__ = payload["kwdefaults"]
    return function


def main(path: str) -> None:
    """Run the call described by the payload file at ``path``."""
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        value = _target(payload)(*payload["args"], **payload["kwargs"])
        result = {"ok": True, "value": value}
    except BaseException as error:  # the container reports whatever the function raised
        traceback.print_exc()
        result = {"ok": False, "kind": "error", "error": f"{type(error).__name__}: {error}"}
    sys.stdout.flush()
    sys.stderr.flush()
    settle(payload["call_id"], result)
    app_id = payload["app_id"]
    if payload["detached"] and not os.environ.get("FAKE_MODAL_APP_LINGERS"):
        calls = [
            record.stem
            for record in (root() / "calls").glob("*.json")
            if (read_json(record) or {}).get("app_id") == app_id
        ]
        if all((root() / "calls" / f"{call}.result").exists() for call in calls):
            (root() / "apps" / f"{app_id}.stopped").touch()


if __name__ == "__main__":
    main(sys.argv[1])
