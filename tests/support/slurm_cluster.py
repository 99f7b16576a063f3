"""A real single-node SLURM cluster on 127.0.0.1 from Debian's packages, for the slow tier.

`SlurmCluster(folder)` writes its configuration into `folder` and starts, in order, munged
(its own key and socket), a MariaDB server (its own data folder, loopback TCP), slurmdbd
(accounting: the slurm executor plugin reads job states with `sacct`), slurmctld and one
slurmd with this machine's CPUs and memory (`slurmd -C`). Every daemon runs in the
foreground as a child process; `stop()` ends them in reverse order, whatever happened. The
SLURM client commands find the cluster through `SLURM_CONF` (`env()`), the job steps through
Debian's default path, linked to it while the cluster runs (`link_default_config`). Runs as
root; every key, socket, port and folder is its own, on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.support.servers import free_port

DAEMONS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")
"""Debian's programs the cluster runs (packages munge, mariadb-server, slurmdbd, slurmctld,
slurmd; `.ci/run` installs them)."""
CLUSTER = "toolcalib"
ACCOUNT = "toolcalib"
DB_USER = "slurm"
DB_NAME = "slurm_acct_db"
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")


def missing() -> list[str]:
    """The daemons and client commands not on this machine (empty: the cluster can start)."""
    needed = (*DAEMONS, "mariadb-install-db", "mungekey", "sacctmgr", "sbatch", "sacct")
    paths = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"
    return [name for name in needed if shutil.which(name, path=paths) is None]


def wait_for(check, what: str, log: Path, timeout: float = 60.0) -> None:
    """Poll `check()` until it is true; else fail naming `what` with the end of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s; {log}:\n{tail}")


class SlurmCluster:
    """One controller and one compute node on this machine, with accounting."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen] = []
        self.hostname = socket.gethostname()
        self.ports = {name: free_port() for name in ("mariadb", "dbd", "ctld", "slurmd")}
        self.db_password = os.urandom(12).hex()
        self.linked = False

    def path(self, name: str) -> Path:
        return self.folder / name

    def env(self) -> dict[str, str]:
        """The environment of a SLURM client (and of Snakemake submitting through one)."""
        paths = f"{os.environ['PATH']}:/usr/sbin:/sbin"
        return {**os.environ, "SLURM_CONF": str(self.path("slurm.conf")), "PATH": paths}

    def run(self, *args: str) -> str:
        done = subprocess.run(args, env=self.env(), capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")
        return done.stdout

    def spawn(self, name: str, *args: str) -> None:
        with self.path(f"{name}.out").open("w") as log:
            self.processes.append(subprocess.Popen(
                args, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))

    def start(self) -> SlurmCluster:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for sub in ("state", "spool", "mysql"):
                self.path(sub).mkdir(exist_ok=True)
            self.start_munge()
            self.start_mariadb()
            self.write_configs()
            self.link_default_config()
            self.spawn("slurmdbd", "slurmdbd", "-D")
            wait_for(self.dbd_answers, "slurmdbd", self.path("slurmdbd.log"))
            self.run("sacctmgr", "-i", "add", "cluster", CLUSTER)
            self.run("sacctmgr", "-i", "add", "account", ACCOUNT, f"cluster={CLUSTER}")
            self.run("sacctmgr", "-i", "add", "user", "root", f"account={ACCOUNT}",
                     f"cluster={CLUSTER}")
            self.spawn("slurmctld", "slurmctld", "-D")
            self.spawn("slurmd", "slurmd", "-D")
            wait_for(self.node_idle, "the slurmd node", self.path("slurmd.log"))
        except BaseException:
            self.stop()
            raise
        return self

    def start_munge(self) -> None:
        key = self.path("munge.key")
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
        self.spawn("munged", "munged", "--foreground", "--force", f"--key-file={key}",
                   f"--socket={self.path('munge.socket')}",
                   f"--pid-file={self.path('munged.pid')}",
                   f"--log-file={self.path('munged.log')}",
                   f"--seed-file={self.path('munged.seed')}")
        wait_for(self.path("munge.socket").exists, "munged", self.path("munged.log"))

    def start_mariadb(self) -> None:
        data = self.path("mysql")
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=socket", "--skip-test-db"],
                       check=True, capture_output=True)
        sock = self.path("mysql.sock")
        self.spawn("mariadbd", "mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
                   f"--socket={sock}", f"--port={self.ports['mariadb']}",
                   "--bind-address=127.0.0.1", "--skip-name-resolve",
                   f"--pid-file={self.path('mariadb.pid')}",
                   f"--log-error={self.path('mariadb.log')}",
                   "--innodb-buffer-pool-size=64M", "--innodb-lock-wait-timeout=900")

        def answers() -> bool:
            ping = subprocess.run(["mariadb-admin", f"--socket={sock}", "ping"],
                                  capture_output=True)
            return ping.returncode == 0

        wait_for(answers, "mariadbd", self.path("mariadb.log"))
        user = f"'{DB_USER}'@'127.0.0.1'"
        sql = (f"CREATE USER {user} IDENTIFIED BY '{self.db_password}';"
               f" GRANT ALL ON {DB_NAME}.* TO {user};")
        subprocess.run(["mariadb", f"--socket={sock}", "-e", sql], check=True)

    def write_configs(self) -> None:
        munge = f"socket={self.path('munge.socket')}"
        dbd = {
            "AuthType": "auth/munge", "AuthInfo": munge, "DbdAddr": "127.0.0.1",
            "DbdHost": self.hostname, "DbdPort": self.ports["dbd"], "SlurmUser": "root",
            "LogFile": self.path("slurmdbd.log"), "PidFile": self.path("slurmdbd.pid"),
            "StorageType": "accounting_storage/mysql", "StorageHost": "127.0.0.1",
            "StoragePort": self.ports["mariadb"], "StorageUser": DB_USER,
            "StoragePass": self.db_password, "StorageLoc": DB_NAME,
        }
        dbd_conf = self.path("slurmdbd.conf")
        dbd_conf.write_text(render(dbd))
        dbd_conf.chmod(0o600)  # slurmdbd refuses a readable file holding the DB password
        node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[0]
        ctld = {
            "ClusterName": CLUSTER, "SlurmctldHost": f"{self.hostname}(127.0.0.1)",
            "SlurmUser": "root", "AuthType": "auth/munge", "AuthInfo": munge,
            "SlurmctldPort": self.ports["ctld"], "SlurmdPort": self.ports["slurmd"],
            "StateSaveLocation": self.path("state"), "SlurmdSpoolDir": self.path("spool"),
            "SlurmctldPidFile": self.path("slurmctld.pid"),
            "SlurmdPidFile": self.path("slurmd.pid"),
            "SlurmctldLogFile": self.path("slurmctld.log"),
            "SlurmdLogFile": self.path("slurmd.log"),
            "ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none",
            "SelectType": "select/cons_tres", "SelectTypeParameters": "CR_Core_Memory",
            "JobAcctGatherType": "jobacct_gather/linux", "MpiDefault": "none",
            "ReturnToService": 2, "AccountingStorageType": "accounting_storage/slurmdbd",
            "AccountingStorageHost": "127.0.0.1", "AccountingStoragePort": self.ports["dbd"],
            "AccountingStoragePass": self.path("munge.socket"),  # munged for slurmdbd too
            "AccountingStorageEnforce": "associations",
        }
        self.path("slurm.conf").write_text(
            render(ctld) + f"{node} NodeAddr=127.0.0.1\n"
            "PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")

    def link_default_config(self) -> None:
        """Link Debian's default config path to this cluster's: the jobstep plugin runs each
        job's `srun` with every `SLURM_*` variable but the job's identity removed, SLURM_CONF
        too, so inside a job SLURM finds its config where a real node keeps it."""
        if DEFAULT_CONF.is_symlink():
            DEFAULT_CONF.unlink()  # left by a test cluster that was killed
        if DEFAULT_CONF.exists():
            raise RuntimeError(f"{DEFAULT_CONF} exists: this machine has a SLURM config of "
                               "its own; the test cluster would replace it")
        DEFAULT_CONF.parent.mkdir(parents=True, exist_ok=True)
        DEFAULT_CONF.symlink_to(self.path("slurm.conf"))
        self.linked = True

    def dbd_answers(self) -> bool:
        return subprocess.run(["sacctmgr", "-n", "list", "cluster"], env=self.env(),
                              capture_output=True).returncode == 0

    def node_idle(self) -> bool:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env(),
                               capture_output=True, text=True)
        return state.returncode == 0 and state.stdout.strip() == "idle"

    def stop(self) -> None:
        """End every daemon started, newest first (SIGTERM, then SIGKILL after 20 s)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes.clear()
        if self.linked:
            DEFAULT_CONF.unlink(missing_ok=True)
            self.linked = False


def render(settings: dict[str, object]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())
