"""A real single-page application, for scripts/agent_bench.py's spa task: optuna-dashboard.

Nobody here wrote it: optuna-dashboard (a React application that routes with the History API
and builds its views from JSON requests) and optuna come from PyPI, installed by this module
into a virtual environment of its own, never into the project's. It is served on 127.0.0.1 by
its own `optuna-dashboard` command over a fresh copy of an SQLite storage that optuna's Python
API seeded with two studies and their trials. The task's steps are checked in that storage,
read with sqlite3 outside both MCP servers.

    site = SpaSite.build(folder)        # venv, install, seed a template storage (once)
    with site.serve() as (base, db): ...  # a fresh copy of the storage, on a free port
"""

import os
import subprocess
import sys

from admin_site import serving

# The dashboard's pages differ between releases: the task is written for these.
PACKAGES = ("optuna-dashboard>=0.21,<0.22", "optuna>=4.5,<5.1")
STUDIES = {"quadratic": 12, "learning-rate": 7}  # name: trials

SEED = '''
import sys
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
url = sys.argv[1]
quadratic = optuna.create_study(study_name="quadratic", storage=url, direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=1))
quadratic.optimize(lambda t: (t.suggest_float("x", -10, 10) - 2) ** 2 + t.suggest_int("y", 0, 5), n_trials=12)
rate = optuna.create_study(study_name="learning-rate", storage=url, direction="maximize",
                           sampler=optuna.samplers.RandomSampler(seed=2))
rate.optimize(lambda t: -abs(t.suggest_float("lr", 1e-4, 1e-1, log=True) - 0.01), n_trials=7)
'''


class SpaSite:
    def __init__(self, folder):
        self.folder = folder
        self.venv = os.path.join(folder, "venv")
        self.bin = os.path.join(self.venv, "bin")
        self.template = os.path.join(folder, "template.db")

    @classmethod
    def build(cls, folder):
        """Make the virtual environment, install the dashboard into it, seed a template storage."""
        site = cls(folder)
        if not os.path.exists(os.path.join(site.bin, "optuna-dashboard")):
            os.makedirs(folder, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", "--clear", site.venv], check=True)
            subprocess.run([os.path.join(site.bin, "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", *PACKAGES], check=True, stdout=subprocess.DEVNULL)
        if not os.path.exists(site.template):
            seeding = site.template + ".seeding"
            if os.path.exists(seeding):
                os.unlink(seeding)
            subprocess.run([os.path.join(site.bin, "python"), "-c", SEED, f"sqlite:///{seeding}"], check=True)
            os.replace(seeding, site.template)
        return site

    def serve(self):
        """A fresh copy of the seeded storage behind optuna-dashboard: yields (base URL, db path)."""
        return serving(self.folder, self.template, "/api/studies", "optuna-dashboard", 60, lambda port, db: (
            [os.path.join(self.bin, "optuna-dashboard"), f"sqlite:///{db}", "--host", "127.0.0.1", "--port",
             str(port)], None))
