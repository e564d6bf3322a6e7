"""Benchmark: `gpulease ls` and `gpulease reap` (dry run) over 1 region and over many, on moto's HTTP server.

An operator lists or sweeps every region the organisation uses; the wait should grow with the slowest region,
not with the number of regions. The bench builds the same small managed fleet in each region (instances,
volumes, Elastic IPs, a bucket), then lists (and sweeps, dry run) one region and then all of them, alternately,
``--repeats`` times, each run with fresh clients as a new ``gpulease`` process would have. It records:

- wall time of the listing (best run), for 1 region and for N;
- API calls, counted by the server by action, against the fewest calls that scope needs (``minimum_calls``).

The server answers each request after ``--latency`` seconds (default 0.08 s): a real EC2 endpoint answers a
Describe call in tens to hundreds of milliseconds, mostly waiting, and moto on loopback answers in a few;
without that wait the bench would measure moto's own CPU time rather than how gpulease waits for a cloud. The
server (moto, its HTTP front end and the replay below) runs in a process of its own, as a cloud's endpoints run on
machines of their own: in the listing's process its request handling would take the interpreter's lock from the
listing's threads, and the time measured would grow with the server's work for each region.

**Targets: N-region wall time <= 1.5x the 1-region time, and calls <= 1.05x the minimum, for both commands.**
Exits 1 when one is missed. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import resource
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from reap_bench import RequestCounter, _action, start_server  # noqa: E402

REGIONS = ["us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2", "eu-central-1",
           "ap-northeast-1", "ap-southeast-1", "ap-southeast-2", "ca-central-1", "sa-east-1"]
WALL_TARGET = 1.5
CALL_TARGET = 1.05

# One listing of a region with gpulease's scope (`ls`): the six EC2 listings and the tagging API for buckets,
# one page each at this fleet's size.
LS_CALLS_PER_REGION = {"DescribeInstances": 1, "DescribeSpotInstanceRequests": 1, "DescribeVolumes": 1,
                       "DescribeAddresses": 1, "DescribeSnapshots": 1, "DescribeImages": 1, "GetResources": 1}
# One dry-run sweep of a region (`reap`): spot requests, addresses, snapshots and images listed in full, the
# deciding tags of instances and volumes read at once, the candidates among them described by id. This fleet's
# instances are past their deadline (described); its volumes carry no retain=false tag, so the tags alone keep
# them and none is described.
REAP_CALLS_PER_REGION = {"DescribeSpotInstanceRequests": 1, "DescribeAddresses": 1, "DescribeSnapshots": 1,
                         "DescribeImages": 1, "DescribeTags": 1, "DescribeInstances": 1}


class ReplayingCounter(RequestCounter):
    """Counts requests like ``RequestCounter``; once ``replay`` is set, answers each request it has seen before
    from a recording of moto's answer, after a fixed wait (the cloud's latency), without moto's own work.

    A real endpoint's work happens on the cloud's machines, one endpoint per region; moto does all of it in this
    process, and on two cores its CPU time per request would otherwise be counted against the listing that waits
    for it. Replaying keeps the answers byte-identical and the latency real (a sleep), so the bench measures how
    gpulease waits for and reads the answers, which is what the region count changes."""

    latency: float = 0.0
    replay: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.recorded: dict[tuple[str, str, bytes], tuple[str, list[tuple[str, str]], bytes]] = {}

    @staticmethod
    def _key(environ: dict[str, Any]) -> tuple[str, str, bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        # The region is in the signature's credential scope: Credential=KEY/DATE/REGION/SERVICE/aws4_request.
        scope = environ.get("HTTP_AUTHORIZATION", "").split("Credential=", 1)[-1].split(",", 1)[0].split("/")
        region = scope[2] if len(scope) > 2 else ""
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        return (region, f"{target} {environ.get('PATH_INFO')}?{environ.get('QUERY_STRING', '')}", body)

    def wrap(self, app: Any) -> Any:
        counted = super().wrap(app)

        def replaying(environ: dict[str, Any], start_response: Any) -> Any:
            if environ.get("PATH_INFO", "").startswith("/moto-api"):
                return counted(environ, start_response)
            key = self._key(environ)
            if self.replay and key in self.recorded:
                time.sleep(self.latency)
                status, headers, body = self.recorded[key]
                if self.enabled:
                    with self.lock:
                        self.counts[_action(environ)] += 1
                start_response(status, headers)
                return [body]
            captured: dict[str, Any] = {}

            def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                captured.update(status=status, headers=list(headers))
                return start_response(status, headers, exc_info)

            time.sleep(self.latency)
            body = b"".join(counted(environ, capture))
            if captured.get("status", "").startswith("200"):
                self.recorded[key] = (captured["status"], captured["headers"], body)
            return [body]

        return replaying


def build_fleet(url: str, regions: list[str], instances: int, volumes: int, addresses: int) -> None:
    import boto3

    from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_EXPIRES_AT, TAG_MANAGED_BY, TAG_OWNER, rfc3339

    expired = rfc3339(datetime.now(UTC) - timedelta(days=2))
    tags = [{"Key": TAG_MANAGED_BY, "Value": MANAGED_BY_VALUE}, {"Key": TAG_OWNER, "Value": "bench"},
            {"Key": TAG_EXPIRES_AT, "Value": expired}]

    def one(region: str) -> None:
        ec2 = boto3.client("ec2", region_name=region, endpoint_url=url)
        zone = ec2.describe_availability_zones()["AvailabilityZones"][0]["ZoneName"]
        image = ec2.describe_images()["Images"]
        ami = image[0]["ImageId"] if image else "ami-12c6146b"
        ec2.run_instances(ImageId=ami, MinCount=instances, MaxCount=instances, InstanceType="g5.xlarge",
                          Placement={"AvailabilityZone": zone},
                          TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
        for _ in range(volumes):
            ec2.create_volume(AvailabilityZone=zone, Size=100, VolumeType="gp3",
                              TagSpecifications=[{"ResourceType": "volume", "Tags": tags}])
        for _ in range(addresses):
            ec2.allocate_address(Domain="vpc", TagSpecifications=[{"ResourceType": "elastic-ip", "Tags": tags}])
        s3 = boto3.client("s3", region_name=region, endpoint_url=url)
        bucket = f"gpl-bench-{region}"
        config = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=bucket, **config)
        s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tags})

    threads = [threading.Thread(target=one, args=(r,)) for r in regions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_ls(url: str, regions: list[str]) -> None:
    """What ``gpulease ls`` does for the regions, with its clients as the command line builds them
    (``options.clients_from_args``: fresh, with their models frozen)."""
    from gpulease.inventory.aws import AwsClients
    from gpulease.inventory.collect import collect

    inventories = collect(AwsClients(endpoint_url=url, freeze_models=True), regions)
    errors = [e for inv in inventories for e in inv.errors]
    if errors:
        raise SystemExit(f"listing failed: {errors}")


def run_reap(url: str, regions: list[str]) -> None:
    from gpulease.inventory.aws import AwsClients
    from gpulease.inventory.decide import ReapSettings
    from gpulease.inventory.reaper import sweep

    report = sweep(AwsClients(endpoint_url=url, freeze_models=True), regions, ReapSettings(now=datetime.now(UTC), execute=False))
    if report.errors:
        raise SystemExit(f"sweep failed: {report.errors}")


def minimum_calls(command: str, regions: int) -> int:
    per_region = LS_CALLS_PER_REGION if command == "ls" else REAP_CALLS_PER_REGION
    account_check = 1 if command == "reap" else 0  # GetCallerIdentity, once per sweep
    return account_check + regions * sum(per_region.values())


class Server:
    """The moto server with its ``ReplayingCounter``, in a child process; driven by one command a line on its stdin
    (``on``, ``off``, ``clear``, ``replay <latency>``, ``count``), each answered by one JSON line."""

    def __init__(self) -> None:
        self.child = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self.url = self.ask("url")

    def ask(self, command: str) -> Any:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(command + "\n")
        self.child.stdin.flush()
        return json.loads(self.child.stdout.readline())

    def stop(self) -> None:
        if self.child.stdin:
            self.child.stdin.close()
        self.child.wait(30)


def serve() -> int:
    """The child's side of ``Server``."""
    counter = ReplayingCounter()
    server, url = start_server(counter)
    try:
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            answer: Any = None
            if command == "url":
                answer = url
            elif command == "on":
                counter.enabled = True
            elif command == "off":
                counter.enabled = False
            elif command == "clear":
                counter.clear()
            elif command == "replay":
                counter.latency, counter.replay = float(arg), True
            elif command == "count":
                answer = sum(counter.counts.values())
            print(json.dumps(answer), flush=True)
    finally:
        server.stop()
    return 0


def measure(command: str, server: Server, regions: list[str]) -> tuple[float, int, float]:
    """Wall time, server-counted calls and the listing process's CPU seconds (every thread) of one listing (or
    dry-run sweep) of ``regions``."""
    runner = run_ls if command == "ls" else run_reap
    # The heap as a new `gpulease` process has it when the command starts: what the imports built frozen
    # (gpulease.cli.main.imports_frozen), the previous run's clients given back and collected.
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    server.ask("clear")
    server.ask("on")
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    runner(server.url, regions)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    server.ask("off")
    return took, server.ask("count"), after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regions", type=int, default=10, help="the many-region case (default 10)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.08, help="seconds the server waits per request")
    parser.add_argument("--instances", type=int, default=20, help="managed instances per region")
    parser.add_argument("--volumes", type=int, default=10, help="managed volumes per region")
    parser.add_argument("--addresses", type=int, default=2, help="managed Elastic IPs per region")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 2 <= args.regions <= len(REGIONS):
        parser.error(f"--regions must be between 2 and {len(REGIONS)}")

    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(key, None)
    if args.serve:
        return serve()
    server = Server()
    load = os.getloadavg()[0]
    try:
        url = server.url
        regions = REGIONS[: args.regions]
        build_fleet(url, regions, args.instances, args.volumes, args.addresses)
        # Warm-up, which also records every answer: both commands over every region, then replayed.
        run_ls(url, regions)
        run_reap(url, regions)
        server.ask(f"replay {args.latency}")
        rows = []
        failed = False
        for command in ("ls", "reap"):
            one = many = None
            # Alternate the two sizes so that drift on a shared machine touches both.
            results: dict[int, list[tuple[float, int, float]]] = {1: [], args.regions: []}
            for _ in range(args.repeats):
                for n in (1, args.regions):
                    results[n].append(measure(command, server, regions[:n]))
            one = min(r[0] for r in results[1]), results[1][-1][1], min(r[2] for r in results[1])
            many = (min(r[0] for r in results[args.regions]), results[args.regions][-1][1],
                    min(r[2] for r in results[args.regions]))
            ratio = many[0] / one[0]
            floor_one, floor_many = minimum_calls(command, 1), minimum_calls(command, args.regions)
            call_ratio = max(one[1] / floor_one, many[1] / floor_many)
            ok = ratio <= WALL_TARGET and call_ratio <= CALL_TARGET
            failed |= not ok
            rows.append((command, one, many, ratio, floor_one, floor_many, call_ratio, ok))
    finally:
        server.stop()

    print(f"latency {args.latency:.3f} s per request; {args.instances} instances, {args.volumes} volumes, "
          f"{args.addresses} addresses and a bucket per region; best of {args.repeats}; load average "
          f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"| command | 1 region (s) | {args.regions} regions (s) | ratio (target <= {WALL_TARGET}x) "
          f"| calls 1 / min | calls {args.regions} / min | calls / min (target <= {CALL_TARGET}x) "
          f"| CPU s, 1 / {args.regions} regions |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for command, one, many, ratio, f1, fn, cr, _ok in rows:
        print(f"| {command} | {one[0]:.3f} | {many[0]:.3f} | {ratio:.2f}x {'met' if ratio <= WALL_TARGET else 'MISSED'} "
              f"| {one[1]} / {f1} | {many[1]} / {fn} | {cr:.3f}x {'met' if cr <= CALL_TARGET else 'MISSED'} "
              f"| {one[2]:.2f} / {many[2]:.2f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
