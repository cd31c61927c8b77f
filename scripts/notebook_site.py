"""A real notebook IDE, for scripts/agent_bench.py's notebook task: JupyterLab with a Python kernel.

Nobody here wrote it: JupyterLab and ipykernel come from PyPI, installed by this module into a
virtual environment of its own, never into the project's. It is served on 127.0.0.1 by its own
`jupyter lab` command, without a token (loopback only), over a fresh folder holding one text file,
with its settings, workspaces and runtime files kept in that folder too (nothing of the user's
Jupyter set-up is read or written). Its background never stops: the kernel's status and messages
over a WebSocket, the sessions' and kernels' polls, the activity monitor's timers: the kind of page
where a settle that waits out what the action did not start costs every key and click. The task's
steps are checked in that folder (the notebook file JupyterLab writes, read outside both servers).

    site = NotebookSite.build(folder)        # venv, install (once)
    with site.serve() as (base, root): ...   # a fresh folder behind JupyterLab, on a free port
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

# JupyterLab's pages differ between releases: the task is written for these.
PACKAGES = ("jupyterlab>=4.4,<4.6", "ipykernel>=6.29,<8")
README = "notes.txt"  # the file the task opens
README_TEXT = "Remember: the seed is 1234 and the answer is forty-two.\n"


class NotebookSite:
    def __init__(self, folder):
        self.folder = folder
        self.venv = os.path.join(folder, "venv")
        self.bin = os.path.join(self.venv, "bin")

    @classmethod
    def build(cls, folder):
        """Make the virtual environment and install JupyterLab and a Python kernel into it."""
        site = cls(folder)
        if not os.path.exists(os.path.join(site.bin, "jupyter-lab")):
            os.makedirs(folder, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", "--clear", site.venv], check=True)
            subprocess.run([os.path.join(site.bin, "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", *PACKAGES], check=True, stdout=subprocess.DEVNULL)
        return site

    @contextlib.contextmanager
    def serve(self):
        """A fresh folder (one text file) behind JupyterLab: yields (base URL, the folder it serves)."""
        run = os.path.join(self.folder, f"run-{time.monotonic_ns()}")
        root = os.path.join(run, "work")
        os.makedirs(root)
        with open(os.path.join(root, README), "w") as f:
            f.write(README_TEXT)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "JUPYTER_CONFIG_DIR": os.path.join(run, "config"),
               "JUPYTER_RUNTIME_DIR": os.path.join(run, "runtime"), "IPYTHONDIR": os.path.join(run, "ipython"),
               "JUPYTERLAB_SETTINGS_DIR": os.path.join(run, "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": os.path.join(run, "workspaces")}
        proc = subprocess.Popen(
            [os.path.join(self.bin, "jupyter-lab"), "--no-browser", "--allow-root", "--ip", "127.0.0.1",
             "--port", str(port), f"--ServerApp.root_dir={root}", "--IdentityProvider.token=",
             "--ServerApp.password=", "--ServerApp.disable_check_xsrf=False",
             # No news and no update check from the Internet (there is none here), no extension manager.
             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             "--LabApp.extension_manager=readonly"],
            env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    urllib.request.urlopen(base + "/api/status", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("JupyterLab did not answer within 90 s") from None
                    time.sleep(0.3)
            yield base, root
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            shutil.rmtree(run, ignore_errors=True)
