"""End to end on a small filesystem that fills up: the history under --db and the files under --output-dir.

The test mounts a small tmpfs (the suite runs as root in CI) and skips, saying why, where
it cannot. A file the test writes fills the disk while an agent works, then goes.
"""

import errno
import os
import sqlite3
import subprocess
import time

import pytest
from support import SERVER_CMD, McpClient

pytestmark = pytest.mark.e2e


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs the suite as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(path):
    """Take every free byte of the filesystem under path; the filler's path."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last bytes
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def captures_missed(db, ref_id):
    """Whether a call was recorded, but without a snapshot."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT snapshot_hash IS NULL FROM responses WHERE ref_id = ? AND status = 'ok'",
                            (ref_id,)).fetchone() == (1,)


def answer(client, tool, /, **arguments):
    """(is_error, payload) of one call, which must be answered, whatever the disk does."""
    import json

    result = client.call(tool, arguments)
    payload = json.loads(result.content[0].text)
    if not result.is_error and result.structured_content is not None:
        payload = result.structured_content
    return result.is_error, payload


def test_a_full_disk_never_costs_a_refid_its_promise(small_disk, pages):
    db, files = str(small_disk / "history.db"), str(small_disk / "files")
    c = McpClient("--db", db, "--output-dir", files, "--caps", "all")
    navigations = {}  # refId -> whether its answer said it was recorded
    try:
        sid = c.tool("create_session")["sessionId"]
        for n in range(3):
            nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/big?n=before{n}"))
            navigations[nav["refId"]] = True
        filler = fill(small_disk)

        saw_not_recorded = 0
        for n in range(12):
            failed, nav = answer(c, "navigate", sessionId=sid, url=pages.url(f"/big?n=full{n}&lines=800"))
            assert not failed, nav  # the browser still works
            recorded = "notRecorded" not in nav
            if not recorded:
                saw_not_recorded += 1
                assert nav["meta"]["recorded"] is False
                assert nav["notRecorded"]["errorCode"] == "DISK_FULL"
            navigations[nav["refId"]] = recorded
        assert saw_not_recorded, "a full disk was never reported"

        # Files: a screenshot still answers its image, and says its copy was not saved.
        shot = c.call("screenshot", {"sessionId": sid})
        assert not shot.is_error and any(part.type == "image" for part in shot.content)
        assert shot.structured_content["savedTo"] is None
        assert shot.structured_content["notSaved"]["errorCode"] == "DISK_FULL"
        failed, pdf = answer(c, "pdf", sessionId=sid)
        assert failed and pdf["errorCode"] == "DISK_FULL"
        failed, saved = answer(c, "save_state", sessionId=sid, name="login")
        assert failed and saved["errorCode"] == "DISK_FULL"
        assert not os.path.isdir(files) or os.listdir(files) == []  # no partial file

        os.unlink(filler)  # space returns: recording resumes by itself
        deadline = time.monotonic() + 30
        while True:
            failed, nav = answer(c, "navigate", sessionId=sid, url=pages.url(f"/big?n=after{time.monotonic()}"))
            assert not failed, nav
            navigations[nav["refId"]] = "notRecorded" not in nav
            if "notRecorded" not in nav:
                break
            assert time.monotonic() < deadline, "recording did not resume"
            time.sleep(0.5)
        for n in range(2):
            nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/big?n=later{n}"))
            assert "notRecorded" not in nav
            navigations[nav["refId"]] = True

        for ref_id, recorded in navigations.items():
            failed, content = answer(c, "get_content", ref_id=ref_id, reset_cursor=True)
            if recorded:
                # A loaded machine can time a page's capture out (2 s): that call is recorded
                # without a snapshot, which is no fault of the disk.
                assert not failed and "Big" in content["content"] or captures_missed(db, ref_id), (ref_id, content)
            else:
                assert failed and content["errorCode"] == "CONTENT_NOT_FOUND"
        faults = [e for e in c.server_log() if e.get("event") == "store_fault"]
        assert len(faults) == 1 and faults[0]["code"] == "DISK_FULL" and "free" in faults[0]
        assert any(e.get("event") == "store_recovered" for e in c.server_log())
    finally:
        c.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    again = McpClient("--db", db)  # the server starts again on the database, which reads back
    try:
        kept = [ref for ref, recorded in navigations.items() if recorded]
        assert "Big" in again.tool("get_content", ref_id=kept[-1], reset_cursor=True)["content"]
    finally:
        again.close()


def test_start_up_on_a_full_disk_runs_with_recording_paused(small_disk, pages):
    db = str(small_disk / "history.db")
    McpClient("--db", db).close()  # the database exists, with its schema
    # Another server (here: a reader) has it open, so SQLite's WAL index (-shm) exists: creating
    # one needs 32 KB, and without it the database cannot open (the next test).
    other = sqlite3.connect(db)
    other.execute("SELECT COUNT(*) FROM requests").fetchone()
    filler = fill(small_disk)
    c = McpClient("--db", db)
    try:
        sid = c.tool("create_session")["sessionId"]
        warned = [e for e in c.server_log() if e.get("event") == "store_fault"]
        assert warned and warned[0]["code"] == "DISK_FULL"  # said at start, before the first call was recorded
        failed, nav = answer(c, "navigate", sessionId=sid, url=pages.url("/big?n=start&lines=800"))
        assert not failed and nav["notRecorded"]["errorCode"] == "DISK_FULL"
        os.unlink(filler)
        deadline = time.monotonic() + 30
        while "notRecorded" in nav:
            assert time.monotonic() < deadline, "recording did not resume"
            time.sleep(0.5)
            failed, nav = answer(c, "navigate", sessionId=sid, url=pages.url(f"/big?n={time.monotonic()}"))
        assert "Big" in c.tool("get_content", ref_id=nav["refId"])["content"]
    finally:
        c.close()
        other.close()


@pytest.mark.parametrize("existing", [False, True])
def test_a_database_that_cannot_open_on_a_full_disk_refuses_to_start_saying_what_to_free(small_disk, existing):
    db = str(small_disk / "history.db")
    if existing:  # closed by its last user: no WAL index left, and none can be made
        made = sqlite3.connect(db)
        made.executescript("PRAGMA journal_mode=WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        made.close()
        assert not os.path.exists(db + "-shm")
    fill(small_disk)
    done = subprocess.run([*SERVER_CMD, "--db", db], input=b"", capture_output=True, timeout=60)
    assert done.returncode != 0
    last = done.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("mcpbrowser: error: the history database") and "KB free" in last, last
    assert "free space there, or point --db elsewhere" in last
