"""export_script: a session's history written out as a pytest module; the handler runs on the core pool.

It reads the history only, so a closed session exports as well as an open one; the CLI's `mcpbrowser export`
calls `export_session` on its main thread, with no browser at all."""

import os
import re
import time

from mcpbrowser import schema
from mcpbrowser.core import script_export
from mcpbrowser.errors import SessionNotFound, disk_fault, not_stored
from mcpbrowser.tools.base import CoreTool, session_schema


def export_session(config, history, session_id, owner=None, storage_state_path=None, wait_recorded=None, skip=None):
    """{path, steps, secrets, warnings, message}: the session's test, saved under config.files_dir().

    owner: the caller's client, who sees only its sessions (None: all). wait_recorded(ref_id): waits for a call
    still being recorded (the core's; the CLI has none). skip: the refId of the export call itself."""
    metadata = history.session_metadata(session_id)
    if not metadata or (owner is not None and metadata.get("owner") != owner):
        raise SessionNotFound("No session with this id is in the history.", session_id=session_id)
    calls = [c for c in history.session_calls(session_id) if c[0] != skip]
    if wait_recorded is not None and any(c[3] is None for c in calls):
        for call in calls:
            if call[3] is None:
                wait_recorded(call[0])
        calls = [c for c in history.session_calls(session_id) if c[0] != skip]
    folder = config.files_dir()
    stamp = time.strftime("%Y%m%d_%H%M%S")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for n in range(1, 1000):  # the server names it: nothing a client sends steers the path
            path = os.path.join(folder, f"test_session_{re.sub(r'[^A-Za-z0-9]', '_', session_id[:8])}_{stamp}_{n}.py")
            source, script = script_export.build(calls, session_id, metadata, config.upload_dir, storage_state_path,
                                                 filename=os.path.basename(path))
            try:
                with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as f:
                    f.write(source)
                break
            except FileExistsError:
                continue
    except OSError as exc:
        fault = disk_fault(folder + "/", exc)
        raise not_stored(fault, f"The test could not be saved in {folder}.") from None
    env = " ".join(f"{name}=..." for name in script.env_names)
    message = (f"Saved a pytest test of {script.steps} step(s). Run it with: {env + ' ' if env else ''}"
               f"python -m pytest {path} (needs playwright; {script_export.BROWSER_ENV} names a browser "
               "executable)." + (f" Set {', '.join(script.env_names)} to what it types that the history never kept "
                                 "(secrets, form values)." if script.env_names else ""))
    out = {"path": path, "steps": script.steps, "secrets": script.env_names, "message": message}
    if script.warnings:
        out["warnings"] = script.warnings
    return out


def export_script(core, args, call):
    return export_session(core.config, core.history, args["sessionId"], call.owner, args.get("storageStatePath"),
                          core.recorder.wait_recorded, skip=call.ref_id)


TOOLS = [
    CoreTool(
        name="export_script", group="export", title="Export session as a test",
        description="Write the session's successful page actions as a pytest file (Playwright sync API) that "
                    "replays them with assertions; secrets become environment variables. Open or closed sessions.",
        input_schema=session_schema({
            "storageStatePath": schema.string("A Playwright storage state file the test logs in with, where the "
                                              "session began from a saved login.", minLength=1),
        }),
        handler=export_script,
        during_cooldown=True,  # it reads the history and writes a file: no page is touched
        output_schema=schema.result({"path": {"type": "string"}, "steps": {"type": "integer"},
                                     "secrets": {"type": "array", "items": {"type": "string"}},
                                     "warnings": {"type": "array", "items": {"type": "string"}},
                                     "message": {"type": "string"}}, ("path", "steps", "secrets", "message")),
    ),
]
