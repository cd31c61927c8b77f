"""The container's entry point (scripts/container_entrypoint.sh) run here by sh, its paths moved into a
temporary folder: what it tells a person whose token file the container's user cannot read.

test_container.py runs the same script in the image; it needs a built image, this does not."""

import os
import re
import shutil
import stat
import subprocess
import tempfile

import pytest

pytestmark = pytest.mark.unit

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                      "container_entrypoint.sh")
NOBODY = 65534
# Ways to make a file readable by every user: modes with the "other" read bit, or chmod's symbolic forms.
WORLD_READABLE = re.compile(r"chmod\s+(0?[0-7][0-7][4-7]\b|[ugo]*a\+r|o\+r|\+r)")


def run_with_unreadable_secret():
    """The script's stderr and status when /run/secrets/mcpbrowser_tokens exists but its user cannot read it."""
    folder = tempfile.mkdtemp(prefix="mcpbrowser-entrypoint-")
    try:
        os.chmod(folder, 0o755)
        data, secret = os.path.join(folder, "data"), os.path.join(folder, "tokens")
        os.mkdir(data)
        os.chmod(data, 0o777)
        with open(secret, "w") as f:
            f.write("alice " + "k" * 24 + "\n")
        with open(SCRIPT) as f:
            text = f.read()
        assert "/run/secrets/mcpbrowser_tokens" in text and "[ ! -w /data ]" in text
        script = os.path.join(folder, "entrypoint.sh")
        with open(script, "w") as f:
            f.write(text.replace("/run/secrets/mcpbrowser_tokens", secret).replace("/data", data))
        command = ["sh", script]
        if os.getuid() == 0:  # root reads any file: run it as nobody, for whom the file (0600, root's) is closed
            os.chmod(secret, stat.S_IRUSR | stat.S_IWUSR)
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
        else:
            os.chmod(secret, 0)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCPBROWSER_HTTP_TOKEN")}
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env, cwd=folder)
        return done.returncode, done.stderr
    finally:
        shutil.rmtree(folder)


def test_an_unreadable_token_file_is_named_with_a_private_way_to_let_the_container_in():
    # It advised `chmod 0444` on the host's file: every user of the host could then read every token.
    status, said = run_with_unreadable_secret()
    assert status == 2 and "tokens is not readable by uid" in said, said  # the check ran and refused
    assert not WORLD_READABLE.search(said), said
    assert "--group-add" in said and "chmod 0640" in said, said     # a group only the container's user is in
    assert re.search(r"--secret mcpbrowser_tokens,uid=\d+,mode=0400", said), said  # or a secret for that user
    assert "every user of the host" in said, said                    # and why not a file everyone can read
