"""Benchmark: the gpulease reaper against Cloud Custodian on the same fleet, on moto's HTTP server.

For each tool a fresh fleet (2,000 instances, 1,000 volumes, 200 Elastic IPs by default) is built on the server,
the tool sweeps it once as a separate process, and the bench records:

- API calls: counted by the server for both tools (every HTTP request, by action), and for gpulease also by
  botocore's ``before-call`` hook inside its process (the two must agree);
- the minimum number of calls that fleet needs (see ``minimum_calls``), measured in the same run;
- wall time of the process, interpreter start and imports included, for both tools;
- what was removed, checked against what should have been (and that nothing else was touched).

Run it with ``bench/reap_bench.sh`` (creates ``bench/.venv`` with Cloud Custodian, then runs this file with the
project's venv). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REGION = "us-east-1"
ZONE = "us-east-1a"
IMAGE = "ami-12c6146b"
BENCH_VENV = ROOT / "bench" / ".venv"


# --- the server, counting every request by action ------------------------------------------------------------


def _action(environ: dict[str, Any]) -> str:
    """The API action of one request: EC2/STS put it in the form body or the query string, JSON APIs in a header."""
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return target.rsplit(".", 1)[-1]
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    if "Action" in query:
        return query["Action"][0]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
    if "Action" in form:
        return form["Action"][0]
    return f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}"


@dataclass
class RequestCounter:
    counts: Counter = field(default_factory=Counter)
    seconds: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    enabled: bool = False

    def clear(self) -> None:
        self.counts.clear()
        self.seconds.clear()

    def wrap(self, app: Any) -> Any:
        def counted(environ: dict[str, Any], start_response: Any) -> Any:
            action = _action(environ)
            # Each request has its own thread: its CPU time is the server's work for it, waits excluded.
            started = time.thread_time()
            body = app(environ, start_response)
            if self.enabled and not environ.get("PATH_INFO", "").startswith("/moto-api"):
                with self.lock:
                    self.counts[action] += 1
                    self.seconds[action] += time.thread_time() - started
            return body

        return counted


def start_server(counter: RequestCounter) -> tuple[Any, str]:
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"  # moto's ~1,300 image snapshots would dominate the timing
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    class CountingServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = counter.wrap(DomainDispatcherApplication(create_backend_app))
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = CountingServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


# --- the fleet -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetShape:
    instances: int = 2000
    volumes: int = 1000
    addresses: int = 200

    # Shares of each population; the rest of each is live (not yet expired) and managed.
    expired_share: float = 0.5
    unmanaged_share: float = 0.1
    retained_share: float = 0.2
    associated_share: float = 0.25


@dataclass
class Fleet:
    remove: set[str] = field(default_factory=set)
    keep: set[str] = field(default_factory=set)
    terminate: int = 0
    delete_volumes: int = 0
    release: int = 0
    build_seconds: float = 0.0
    managed: Counter = field(default_factory=Counter)
    # DescribeTags rows the sweep reads (managed-by, expires-at, retain on instances and volumes, managed or not)
    # and the candidates it then describes by id.
    tag_rows: int = 0
    candidates: Counter = field(default_factory=Counter)


def build_fleet(url: str, shape: FleetShape, workers: int = 8) -> Fleet:
    import boto3

    from gpulease.core.vocabulary import (
        MANAGED_BY_VALUE,
        TAG_EXPIRES_AT,
        TAG_MANAGED_BY,
        TAG_OWNER,
        TAG_RETAIN,
        rfc3339,
    )

    started = time.perf_counter()
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=url)
    now = datetime.now(UTC)
    past, future = rfc3339(now - timedelta(days=2)), rfc3339(now + timedelta(days=2))

    def tags(managed: bool, expires: str, retain: str | None = None) -> list[dict[str, str]]:
        out = {TAG_OWNER: "bench", TAG_EXPIRES_AT: expires}
        if managed:
            out[TAG_MANAGED_BY] = MANAGED_BY_VALUE
        if retain is not None:
            out[TAG_RETAIN] = retain
        return [{"Key": k, "Value": v} for k, v in out.items()]

    fleet = Fleet()

    # Instances: launched 500 at a time.
    n_unmanaged = int(shape.instances * shape.unmanaged_share)
    n_expired = int(shape.instances * shape.expired_share)
    n_live = shape.instances - n_unmanaged - n_expired
    groups = [(n_expired, True, past, True), (n_live, True, future, False), (n_unmanaged, False, past, False)]
    live_ids: list[str] = []
    for count, managed, expires, goes in groups:
        while count > 0:
            batch = min(count, 500)
            answer = ec2.run_instances(
                ImageId=IMAGE,
                MinCount=batch,
                MaxCount=batch,
                InstanceType="g5.xlarge",
                Placement={"AvailabilityZone": ZONE},
                TagSpecifications=[{"ResourceType": "instance", "Tags": tags(managed, expires)}],
            )
            ids = [i["InstanceId"] for i in answer["Instances"]]
            (fleet.remove if goes else fleet.keep).update(ids)
            if managed and not goes:
                live_ids.extend(ids)
            count -= batch
    fleet.terminate = n_expired
    fleet.managed["instance"] = n_expired + n_live
    fleet.candidates["instance"] = n_expired
    fleet.tag_rows += shape.instances + fleet.managed["instance"]  # expires-at on all, managed-by on managed

    # Volumes: expired + retain=false (deleted), expired + retain=true, live, unmanaged.
    v_unmanaged = int(shape.volumes * shape.unmanaged_share)
    v_retained = int(shape.volumes * shape.retained_share)
    v_expired = int(shape.volumes * shape.expired_share)
    v_live = shape.volumes - v_unmanaged - v_retained - v_expired
    volume_jobs = (
        [(True, past, "false", True)] * v_expired
        + [(True, past, "true", False)] * v_retained
        + [(True, future, "false", False)] * v_live
        + [(False, past, "false", False)] * v_unmanaged
    )

    def make_volume(job: tuple[bool, str, str, bool]) -> tuple[str, bool]:
        managed, expires, retain, goes = job
        vol = ec2.create_volume(
            AvailabilityZone=ZONE,
            Size=8,
            VolumeType="gp3",
            TagSpecifications=[{"ResourceType": "volume", "Tags": tags(managed, expires, retain)}],
        )
        return vol["VolumeId"], goes

    # Addresses: expired + unassociated (released), associated with a live instance, live, unmanaged.
    a_unmanaged = int(shape.addresses * shape.unmanaged_share)
    a_associated = int(shape.addresses * shape.associated_share)
    a_expired = int(shape.addresses * shape.expired_share)
    a_live = shape.addresses - a_unmanaged - a_associated - a_expired
    address_jobs = (
        [(True, past, None, True)] * a_expired
        + [(True, past, live_ids[i], False) for i in range(a_associated)]
        + [(True, future, None, False)] * a_live
        + [(False, past, None, False)] * a_unmanaged
    )

    def make_address(job: tuple[bool, str, str | None, bool]) -> tuple[str, bool]:
        managed, expires, holder, goes = job
        alloc = ec2.allocate_address(
            Domain="vpc", TagSpecifications=[{"ResourceType": "elastic-ip", "Tags": tags(managed, expires)}]
        )
        if holder:
            ec2.associate_address(AllocationId=alloc["AllocationId"], InstanceId=holder)
        return alloc["AllocationId"], goes

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for rid, goes in [*pool.map(make_volume, volume_jobs), *pool.map(make_address, address_jobs)]:
            (fleet.remove if goes else fleet.keep).add(rid)
    fleet.delete_volumes = v_expired
    fleet.release = a_expired
    fleet.managed["volume"] = shape.volumes - v_unmanaged
    fleet.candidates["volume"] = v_expired  # managed, expired, retain=false
    fleet.tag_rows += 2 * shape.volumes + fleet.managed["volume"]  # expires-at and retain on all
    fleet.managed["address"] = shape.addresses - a_unmanaged
    fleet.build_seconds = time.perf_counter() - started
    return fleet


def fleet_state(url: str) -> dict[str, str]:
    import boto3

    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=url)
    out: dict[str, str] = {}
    root_disks: set[str] = set()
    for page in ec2.get_paginator("describe_instances").paginate():
        for reservation in page["Reservations"]:
            for inst in reservation["Instances"]:
                out[inst["InstanceId"]] = inst["State"]["Name"]
                root_disks.update(
                    m["Ebs"]["VolumeId"]
                    for m in inst.get("BlockDeviceMappings", [])
                    if m.get("DeviceName") == inst.get("RootDeviceName")
                )
    for page in ec2.get_paginator("describe_volumes").paginate():
        for vol in page["Volumes"]:
            # Root disks go with their instance (DeleteOnTermination): EC2's doing, not the sweep's.
            if vol["VolumeId"] not in root_disks:
                out[vol["VolumeId"]] = vol["State"]
    for addr in ec2.describe_addresses()["Addresses"]:
        out[addr["AllocationId"]] = "associated" if addr.get("AssociationId") else "allocated"
    return out


def removed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    gone = {"shutting-down", "terminated", "gone"}
    return {rid for rid, was in before.items() if was not in gone and after.get(rid, "gone") in gone}


# --- the floor -----------------------------------------------------------------------------------------------

# The API's largest page per listing call and its largest batch per action call. moto ignores MaxResults on these
# listings and answers in one page, so on moto every listing needs exactly one call.
AWS_PAGE = {"DescribeInstances": 1000, "DescribeSpotInstanceRequests": 1000, "DescribeVolumes": 500,
            "DescribeSnapshots": 1000}
AWS_BATCH = {"TerminateInstances": 1000, "CancelSpotInstanceRequests": 1000}


def minimum_calls(fleet: Fleet, *, moto_pages: bool = True) -> dict[str, int]:
    """The fewest calls a sweep with gpulease's scope can make on this fleet.

    min = 1 (GetCallerIdentity, the account check)
        + Σ over listings  max(1, ⌈managed_n / page⌉)   (DescribeInstances, -SpotInstanceRequests, -Volumes,
                                                           -Snapshots; DescribeAddresses has no paging: 1)
        + ⌈T / 1000⌉ TerminateInstances + ⌈C / 1000⌉ CancelSpotInstanceRequests
        + E ReleaseAddress + D DeleteVolume + S DeleteSnapshot   (one resource per call in the EC2 API)

    With ``moto_pages`` every listing is one page (moto's behaviour); otherwise AWS's page sizes apply."""

    def pages(op: str, n: int) -> int:
        return 1 if moto_pages else max(1, math.ceil(n / AWS_PAGE[op]))

    floor = {
        "GetCallerIdentity": 1,
        "DescribeInstances": pages("DescribeInstances", fleet.managed["instance"]),
        "DescribeSpotInstanceRequests": pages("DescribeSpotInstanceRequests", 0),
        "DescribeVolumes": pages("DescribeVolumes", fleet.managed["volume"]),
        "DescribeAddresses": 1,
        "DescribeSnapshots": pages("DescribeSnapshots", 0),
        "TerminateInstances": math.ceil(fleet.terminate / AWS_BATCH["TerminateInstances"]),
        "ReleaseAddress": fleet.release,
        "DeleteVolume": fleet.delete_volumes,
    }
    return {k: v for k, v in floor.items() if v}


def two_step_calls(fleet: Fleet, *, moto_pages: bool = True) -> dict[str, int]:
    """The fewest calls of gpulease's own call pattern on this fleet: instances and volumes through their deciding
    tags, then the candidates described by id (see ``gpulease/inventory/lookup.py``).

    calls = 1 (GetCallerIdentity) + ⌈tag rows / 1000⌉ DescribeTags
          + ⌈candidate instances / 1000⌉ DescribeInstances + ⌈candidate volumes / 500⌉ DescribeVolumes
          + DescribeSpotInstanceRequests, DescribeSnapshots (paged on managed ones), DescribeAddresses (1)
          + the same action calls as ``minimum_calls``"""
    floor = minimum_calls(fleet, moto_pages=moto_pages)
    floor["DescribeTags"] = 1 if moto_pages else max(1, math.ceil(fleet.tag_rows / 1000))
    floor["DescribeInstances"] = math.ceil(fleet.candidates["instance"] / 1000)
    floor["DescribeVolumes"] = math.ceil(fleet.candidates["volume"] / 500)
    return {k: v for k, v in floor.items() if v}


# --- the tools -----------------------------------------------------------------------------------------------


def tool_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION=REGION,
        AWS_ENDPOINT_URL=url,  # botocore (both tools) sends every service there
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONPATH=str(ROOT),
    )
    return env


def run_gpulease(url: str, workdir: Path, workers: int) -> tuple[float, dict[str, int], dict[str, Any]]:
    counts_file = workdir / "gpulease-calls.json"
    report_file = workdir / "gpulease-report.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", "--counts", str(counts_file), "--",
           "reap", "--region", REGION, "--execute", "--json", "--workers", str(workers),
           # moto answers a 2,000-instance describe in seconds of CPU; leave a loaded machine room.
           "--read-timeout", "120"]
    started = time.perf_counter()
    with report_file.open("w") as out:
        proc = subprocess.run(cmd, env=tool_env(url), stdout=out, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"gpulease reap exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, json.loads(counts_file.read_text()), json.loads(report_file.read_text())


C7N_POLICIES = """\
policies:
  - name: gpulease-expired-instances
    resource: aws.ec2{instance_query}
    filters:
      - "tag:{managed}": gpulease
      - State.Name: running
      - type: value
        key: "tag:{expires}"
        value_type: expiration
        op: less-than
        value: 0
    actions:
      - terminate
  - name: gpulease-unattached-expired-volumes
    resource: aws.ebs{volume_query}
    filters:
      - "tag:{managed}": gpulease
      - "tag:{retain}": "false"
      - Attachments: empty
      - type: value
        key: "tag:{expires}"
        value_type: expiration
        op: less-than
        value: 0
    actions:
      - delete
  - name: gpulease-unassociated-expired-addresses
    resource: aws.network-addr
    filters:
      - "tag:{managed}": gpulease
      - AssociationId: absent
      - type: value
        key: "tag:{expires}"
        value_type: expiration
        op: less-than
        value: 0
    actions:
      - release
"""


# The same policies with the managed-by tag also asked of the server (c7n's ``query``; c7n has no query for
# Elastic IPs). c7n's documented form filters client-side, which is what its users usually run.
C7N_SERVER_QUERY = {
    "instance_query": "\n    query:\n      - tag-key: {managed}",
    "volume_query": "\n    query:\n      - tag-key: {managed}",
}


def run_custodian(url: str, workdir: Path, *, server_query: bool = False) -> float:
    from gpulease.core.vocabulary import TAG_EXPIRES_AT, TAG_MANAGED_BY, TAG_RETAIN

    custodian = BENCH_VENV / "bin" / "custodian"
    if not custodian.exists():
        raise SystemExit(f"{custodian} is missing: run bench/reap_bench.sh (it installs bench/requirements.txt)")
    policy = workdir / "c7n-policies.yml"
    queries = {k: v.format(managed=TAG_MANAGED_BY) for k, v in C7N_SERVER_QUERY.items()} if server_query else {
        k: "" for k in C7N_SERVER_QUERY
    }
    text = C7N_POLICIES.format(managed=TAG_MANAGED_BY, expires=TAG_EXPIRES_AT, retain=TAG_RETAIN, **queries)
    policy.write_text(text)
    env = tool_env(url)
    env.pop("PYTHONPATH")
    cmd = [str(custodian), "run", "--cache-period", "0", "-s", str(workdir / "c7n-out"), "--region", REGION,
           str(policy)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"custodian exited {proc.returncode}: {proc.stderr[-3000:]}")
    return wall


def child(argv: list[str]) -> int:
    """Run ``gpulease`` in this process with a ``before-call`` counter on its botocore session."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", required=True)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from gpulease.cli import main, reap

    counts: Counter = Counter()
    lock = threading.Lock()
    build = reap.clients_from_args

    def counted_clients(ns: argparse.Namespace) -> Any:
        clients = build(ns)

        def on_call(model: Any, **_: Any) -> None:
            with lock:
                counts[model.name] += 1

        clients.session.events.register("before-call", on_call)
        return clients

    reap.clients_from_args = counted_clients
    rest = args.rest[1:] if args.rest and args.rest[0] == "--" else args.rest
    code = main(rest)
    Path(args.counts).write_text(json.dumps(dict(counts)))
    return code


# --- the run -------------------------------------------------------------------------------------------------


@dataclass
class Result:
    tool: str
    wall: float
    cpu: float
    server_calls: Counter
    server_seconds: Counter
    client_calls: dict[str, int] | None
    removed_ok: bool
    extra_removed: int
    missed: int


CUSTODIAN_QUERY = "custodian (server-side query)"


def reset(url: str) -> None:
    request = urllib.request.Request(f"{url}/moto-api/reset", method="POST", data=b"")
    urllib.request.urlopen(request, timeout=60).close()


def one_run(tool: str, url: str, counter: RequestCounter, shape: FleetShape, workdir: Path, workers: int,
            ) -> tuple[Result, Fleet]:
    reset(url)
    fleet = build_fleet(url, shape)
    before = fleet_state(url)
    counter.clear()
    counter.enabled = True
    client_calls = None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if tool == "gpulease":
        wall, client_calls, report = run_gpulease(url, workdir, workers)
        if report["counts"].get("failed"):
            raise SystemExit(f"gpulease reported failures: {report['counts']}")
    else:
        wall = run_custodian(url, workdir, server_query=tool == CUSTODIAN_QUERY)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    counter.enabled = False
    server_calls = Counter(counter.counts)
    server_seconds = Counter(counter.seconds)
    gone = removed(before, fleet_state(url))
    result = Result(
        tool=tool,
        wall=wall,
        cpu=(after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime),
        server_calls=server_calls,
        server_seconds=server_seconds,
        client_calls=client_calls,
        removed_ok=gone == fleet.remove,
        extra_removed=len(gone - fleet.remove),
        missed=len(fleet.remove - gone),
    )
    return result, fleet


def table(results: list[Result], floor: dict[str, int], fleet: Fleet) -> str:
    floor_total = sum(floor.values())
    lines = [
        "| tool | API calls (server count) | minimum | calls / minimum | wall time (s) | server CPU (s) "
        "| tool CPU (s) | removed as expected |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        total = sum(r.server_calls.values())
        ok = "yes" if r.removed_ok else f"no ({r.missed} missed, {r.extra_removed} extra)"
        lines.append(
            f"| {r.tool} | {total} | {floor_total} | {total / floor_total:.3f} | {r.wall:.2f} "
            f"| {sum(r.server_seconds.values()):.2f} | {r.cpu:.2f} | {ok} |"
        )
    lines.append("")
    lines.append("| action: calls (server CPU) | minimum | " + " | ".join(r.tool for r in results) + " |")
    lines.append("|---|---:|" + "---:|" * len(results))
    actions = sorted(set(floor) | {a for r in results for a in r.server_calls})
    for action in actions:
        cells = " | ".join(
            f"{r.server_calls.get(action, 0)} ({r.server_seconds.get(action, 0.0):.1f}s)" for r in results
        )
        lines.append(f"| {action} | {floor.get(action, 0)} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "child":
        return child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--volumes", type=int, default=1000)
    parser.add_argument("--addresses", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool (the table shows the median wall time)")
    parser.add_argument("--workers", type=int, default=8, help="gpulease reap --workers")
    parser.add_argument("--skip-custodian", action="store_true")
    parser.add_argument("--no-query-variant", action="store_true", help="skip Cloud Custodian with server-side query")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)

    shape = FleetShape(instances=args.instances, volumes=args.volumes, addresses=args.addresses)
    # Only the local server is ever talked to, with dummy credentials.
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        del os.environ[key]
    os.environ.update({k: v for k, v in tool_env("").items() if k.startswith("AWS_") and k != "AWS_ENDPOINT_URL"})
    counter = RequestCounter()
    server, url = start_server(counter)
    tools = ["gpulease"]
    if not args.skip_custodian:
        tools += ["custodian"] + ([] if args.no_query_variant else [CUSTODIAN_QUERY])
    runs: dict[str, list[Result]] = {t: [] for t in tools}
    fleet = Fleet()
    build_times: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="reap-bench-") as tmp:
            for n in range(args.repeat):
                for tool in tools:
                    result, fleet = one_run(tool, url, counter, shape, Path(tmp), args.workers)
                    build_times.append(fleet.build_seconds)
                    runs[tool].append(result)
                    print(f"run {n + 1} {tool}: {sum(result.server_calls.values())} calls, {result.wall:.2f}s "
                          f"(fleet built in {fleet.build_seconds:.1f}s)", file=sys.stderr)
    finally:
        server.stop()

    results = [sorted(rs, key=lambda r: r.wall)[len(rs) // 2] for rs in runs.values()]
    floor = minimum_calls(fleet)
    print(f"fleet: {shape.instances} instances, {shape.volumes} volumes, {shape.addresses} Elastic IPs; "
          f"to remove: {fleet.terminate} instances, {fleet.delete_volumes} volumes, {fleet.release} addresses; "
          f"built in {min(build_times):.1f}-{max(build_times):.1f}s")
    print(f"minimum (moto pages) = {sum(floor.values())}; with AWS page sizes = "
          f"{sum(minimum_calls(fleet, moto_pages=False).values())}")
    print(f"gpulease's two-step pattern (tags, then candidates by id) needs at least "
          f"{sum(two_step_calls(fleet).values())} on moto, {sum(two_step_calls(fleet, moto_pages=False).values())} "
          f"with AWS page sizes ({fleet.tag_rows} tag rows, {fleet.candidates['instance']} candidate instances, "
          f"{fleet.candidates['volume']} candidate volumes)")
    print()
    print(table(results, floor, fleet))
    gpulease_result = results[0]
    hook_total = sum((gpulease_result.client_calls or {}).values())
    print()
    print(f"gpulease calls counted by botocore's before-call hook: {hook_total} "
          f"(server saw {sum(gpulease_result.server_calls.values())})")
    if args.json:
        args.json.write_text(json.dumps({
            "floor": floor,
            "results": [{"tool": r.tool, "wall": r.wall, "cpu": r.cpu, "serverCalls": dict(r.server_calls),
                         "serverSeconds": dict(r.server_seconds),
                         "clientCalls": r.client_calls, "removedOk": r.removed_ok} for r in results],
        }, indent=2))
    ok = all(r.removed_ok for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
