"""Issue 36's pure parts: throttling settings, the engine check, the files folder's retention by age and quota, and a
refused download's order (its browser faked)."""

import asyncio
import os
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes import fake_core

from mcpbrowser.config import Config
from mcpbrowser.core.file_keeper import FileKeeper
from mcpbrowser.core.history import History
from mcpbrowser.core.store import Store
from mcpbrowser.errors import UnsupportedBrowser
from mcpbrowser.session import throttling
from mcpbrowser.session.downloads import Downloads

pytestmark = pytest.mark.unit


def test_a_preset_fills_the_figures_and_own_figures_make_it_custom():
    slow = throttling.settings({"network": "Slow 3G", "cpuRate": 4})
    assert slow == {"cpuRate": 4, "network": "Slow 3G", "latencyMs": 2000, "downloadKbps": 400, "uploadKbps": 400}
    assert throttling.conditions(slow) == {"offline": False, "latency": 2000, "downloadThroughput": 50_000,
                                           "uploadThroughput": 50_000}
    custom = throttling.settings({"latencyMs": 50}, slow)
    assert custom["network"] == "custom" and custom["latencyMs"] == 50 and custom["downloadKbps"] == 400
    assert throttling.settings({"network": "offline"}, custom) == {"cpuRate": 4, "network": "offline"}
    assert throttling.conditions({"network": "offline"})["offline"] is True
    assert throttling.settings({"network": "none", "cpuRate": 1}, custom) == {}
    assert throttling.conditions({}) == {"offline": False, "latency": 0, "downloadThroughput": -1,
                                         "uploadThroughput": -1}


def test_other_engines_answer_unsupported_browser():
    with fake_core() as core:
        sid = core.create_session().id
        state = core.registry.worker(sid).submit(lambda state: state).result(5)
        with pytest.raises(UnsupportedBrowser) as caught:
            core.registry.worker(sid).submit(throttling.change, {"cpuRate": 4}).result(5)
        assert caught.value.code == "UNSUPPORTED_BROWSER" and state.throttle == {}


def test_files_past_the_retention_days_go_and_their_rows_say_so(tmp_path):
    config = Config(db=":memory:", output_dir=str(tmp_path), retention_days=1, files_max_mb=0)
    history = History(Store(":memory:"))
    executor = ThreadPoolExecutor(1)
    try:
        keeper = FileKeeper(config, history, executor, lambda: {"open-session"})
        old, kept, fresh = (str(tmp_path / name) for name in ("old.png", "kept.pdf", "fresh.png"))
        for path in (old, kept, fresh):
            with open(path, "wb") as f:
                f.write(b"x")
        for path in (old, kept):
            os.utime(path, (time.time() - 3 * 86_400,) * 2)
        history.request("ref-old", None, "screenshot", {})
        for path in (old, kept, fresh):
            history.store.write("INSERT INTO files (path, ref_id, created_at) VALUES (?, 'ref-old', 0)", (path,))
        keeper.remember("open-session", "pdf", {"path": kept})  # an open session's latest answer names it: a sweep
        executor.submit(lambda: None).result()  # ...which ran on the pool before this
        assert keeper.sweep() == []
        assert sorted(os.listdir(tmp_path)) == ["fresh.png", "kept.pdf"]
        (row,) = history.removed_files("ref-old")
        assert row["path"] == old and row["reason"] == "retention_days" and row["removedAt"] > 0
    finally:
        executor.shutdown()
        history.store.close()


def test_the_files_quota_keeps_the_file_an_open_sessions_latest_answer_named(tmp_path):
    # The agent may be about to read the file its last answer named: over the quota, the oldest files go
    # but that one. Only while it is the session's latest answer's, and only while the session is open.
    config = Config(db=":memory:", output_dir=str(tmp_path), retention_days=0, files_max_mb=1)
    history = History(Store(":memory:"))
    executor = ThreadPoolExecutor(1)
    open_ids = {"s1"}
    try:
        keeper = FileKeeper(config, history, executor, lambda: set(open_ids))
        history.request("ref-1", None, "pdf", {})

        def saved(name, age_s):
            path = str(tmp_path / name)
            (tmp_path / name).write_bytes(b"s" * 400_000)
            os.utime(path, (time.time() - age_s,) * 2)
            history.store.write("INSERT INTO files (path, ref_id, created_at) VALUES (?, 'ref-1', 0)", (path,))
            return path

        def swept():
            executor.submit(lambda: None).result()  # the sweep remember() queued ran on the pool before this
            return sorted(os.listdir(tmp_path))

        named, middle, newest = saved("a.pdf", 300), saved("b.pdf", 200), saved("c.pdf", 100)
        keeper.remember("s1", "pdf", {"path": named})  # 1.2 MB over 1 MB: a sweep, the oldest kept
        assert swept() == ["a.pdf", "c.pdf"]
        keeper.remember("s1", "downloads", {"downloads": [{"path": newest}]})  # a listing names no file to read
        keeper.remember("s1", "screenshot", {"savedTo": newest})  # the session's latest answer names another
        swept()  # the sweep that answer queued, over before the next file (else the test races it)
        saved("d.pdf", 50)
        keeper.sweep_soon()
        assert swept() == ["c.pdf", "d.pdf"]  # the first is no longer kept
        open_ids.clear()  # the session closed: its latest file is kept no longer
        saved("e.pdf", 10)
        keeper.sweep_soon()
        assert swept() == ["d.pdf", "e.pdf"]
        assert sorted(r["path"] for r in history.removed_files("ref-1")) == [named, middle, newest]
    finally:
        executor.shutdown()
        history.store.close()


def test_at_start_the_partial_files_of_gone_writers_go_and_a_live_ones_stay(tmp_path):
    import subprocess
    import sys

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(ended.stdout)
    config = Config(db=":memory:", output_dir=str(tmp_path))
    history = History(Store(":memory:"))
    try:
        keeper = FileKeeper(config, history, None, lambda: set())  # type: ignore[arg-type]  # no sweep is queued
        names = [f"20260101-000000-0123abcd-1.pdf.{dead}.part", f"20260101-000000-0123abcd-2.pdf.{os.getpid()}.part",
                 "20260101-000000-0123abcd-3.pdf"]
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        assert keeper.remove_leftovers() == [str(tmp_path / names[0])]
        assert sorted(os.listdir(tmp_path)) == names[1:]
    finally:
        history.store.close()


def _dead_pid():
    import subprocess
    import sys

    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_files_the_server_did_not_save_are_neither_counted_nor_removed(tmp_path):
    # Issue 48: --output-dir may be a folder of the user's; only the files the history says the
    # server saved are its own. The user's are older than all of the server's and past retention.
    config = Config(db=":memory:", output_dir=str(tmp_path), retention_days=1, files_max_mb=1)
    history = History(Store(":memory:"))
    try:
        keeper = FileKeeper(config, history, None, lambda: set())  # type: ignore[arg-type]  # no sweep is queued
        dead = _dead_pid()
        users = {"notes.txt": 6_000, "photo.jpg": 3_000_000, f"backup.{dead}.part": 10,
                 f"20260101-000000-deadbeef-1.pdf.{dead}.PART": 10}
        for name, size in users.items():
            (tmp_path / name).write_bytes(b"u" * size)
            os.utime(tmp_path / name, (time.time() - 400 * 86_400,) * 2)
        history.request("ref-1", None, "pdf", {})
        ours = []  # (name, size, age in days): one past retention, then three over the quota's 1 MB
        for n, (size, days) in enumerate(((1_000, 3), (400_000, 0.5), (400_000, 0.4), (400_000, 0.3)), 1):
            name = f"20260101-000000-deadbeef-{n}.pdf"
            (tmp_path / name).write_bytes(b"s" * size)
            os.utime(tmp_path / name, (time.time() - days * 86_400,) * 2)
            history.store.write("INSERT INTO files (path, ref_id, created_at) VALUES (?, 'ref-1', 0)",
                                (str(tmp_path / name),))
            ours.append(name)
        leftover = f"20260101-000000-deadbeef-9.pdf.{dead}.part"  # what a killed server left
        (tmp_path / leftover).write_bytes(b"%PDF half")
        assert keeper.remove_leftovers() == [str(tmp_path / leftover)]
        assert keeper.warn_foreign() == len(users)  # at start: the folder holds files the server did not save
        removed = keeper.sweep()
        # The server's oldest went (one by age, one by the quota: 3 MB of the user's count for nothing).
        assert sorted(removed) == [str(tmp_path / ours[0]), str(tmp_path / ours[1])]
        assert sorted(os.listdir(tmp_path)) == sorted([*users, *ours[2:]])
        assert {r["reason"] for r in history.removed_files("ref-1")} == {"retention_days", "files_max_mb"}
    finally:
        history.store.close()


def test_a_download_refused_as_it_streams_says_so_only_once_our_partial_file_is_gone(tmp_path):
    """The cancel _police sends ends the download's save a moment later, and the save's end removes our partial file:
    an entry that said "refused" before that (as it did) named a download whose file an agent, or a test listing the
    folder, still found. The browser's side is faked (its save held open 0.3 s after the cancel): thread logic only."""
    cancelled, source = threading.Event(), tmp_path / "browser" / "f.bin"
    source.parent.mkdir()
    (tmp_path / "browser" / "f.bin.crdownload").write_bytes(b"x" * (2 * 1024 * 1024))  # past the 1 MB limit

    async def cancel():
        cancelled.set()

    def save_as(part):
        open(part, "wb").write(b"x" * 1024)
        cancelled.wait(5)
        time.sleep(0.3)  # the browser's "canceled" comes back later than the cancel's answer
        raise RuntimeError("canceled")

    download = types.SimpleNamespace(
        url="http://127.0.0.1/f.bin", suggested_filename="f.bin", save_as=save_as,
        cancel=lambda: None, delete=lambda: None, page=types.SimpleNamespace(_loop=asyncio.new_event_loop()),
        _impl_obj=types.SimpleNamespace(cancel=cancel, _artifact=types.SimpleNamespace(
            _initializer={"absolutePath": str(source)})))
    folder = tmp_path / "files"
    downloads = Downloads("s1", str(folder), 1, refused=lambda url: False, request_for=lambda url: None,
                          submit=lambda fn: None, secrets=lambda: ())
    saving = threading.Thread(target=downloads.on_download, args=(download,))
    saving.start()
    while not (folder.exists() and os.listdir(folder)):
        time.sleep(0.005)
    asyncio.run(downloads._police())
    assert cancelled.is_set()  # the attempt happened: the limit was passed and the cancel sent
    seen = set()
    while saving.is_alive():
        entry = dict(downloads.entries[0])
        seen.add(entry["status"])
        if entry["status"] == "refused":
            assert os.listdir(folder) == [], (entry, os.listdir(folder))
        time.sleep(0.005)
    saving.join()
    download.page._loop.run_until_complete(downloads._watch)  # its watch, never run here, ends with nothing flying
    download.page._loop.close()
    assert "downloading" in seen
    assert downloads.entries[0]["status"] == "refused" and "max-download-mb 1" in downloads.entries[0]["error"]
    assert os.listdir(folder) == []
