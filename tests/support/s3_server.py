"""An S3 API server on loopback (moto in server mode) for the DVC remote test: fresh random
credentials in the environment of the commands that talk to it, and nowhere else."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.servers import free_port


class S3Server:
    """`moto_server` on 127.0.0.1 at a free port; `env()` holds its credentials."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.credentials = {"AWS_ACCESS_KEY_ID": "AKID" + os.urandom(8).hex().upper(),
                            "AWS_SECRET_ACCESS_KEY": os.urandom(20).hex(),
                            "AWS_DEFAULT_REGION": "us-east-1"}
        self.log = log
        self.process: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.credentials}

    def __enter__(self) -> S3Server:
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                ["moto_server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"moto_server did not start:\n{self.log.read_text()}")
            time.sleep(0.2)
        return self

    def answers(self) -> bool:
        try:
            urllib.request.urlopen(self.url, timeout=2).close()
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    def create_bucket(self, name: str) -> None:
        import boto3

        boto3.client("s3", endpoint_url=self.url, aws_access_key_id=self.credentials[
            "AWS_ACCESS_KEY_ID"], aws_secret_access_key=self.credentials[
            "AWS_SECRET_ACCESS_KEY"], region_name="us-east-1").create_bucket(Bucket=name)

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)
