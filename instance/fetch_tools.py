#!/usr/bin/env python3
"""gpulease-fetch-tools: install the instance-side tools from the stack's bucket (standard library only).

User-data is small (AWS 16 KB, Alibaba Cloud 32 KB) and the tools do not fit there with room to spare, so
user-data carries this loader and the settings, and the tools travel as one object (a JSON bundle of files) in
the stack's bootstrap bucket. Run before each service starts (``ExecStartPre``); it does nothing when the
installed tools already match:

1. read ``tools`` from the settings: bucket, key, region and the bundle's SHA-256;
2. fetch the instance role's temporary credentials from the metadata service, a token first (the kit sets
   ``http_tokens = required`` on both clouds);
3. GET the object with a signed request carrying the session token: AWS Signature Version 4
   (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html), OSS V4 signature
   (https://www.alibabacloud.com/help/en/oss/developer-reference/recommend-to-use-signature-version-4), both
   over https to the region's endpoint (OSS: the internal one);
4. refuse it unless its SHA-256 is the one in the settings, then write each file atomically.

Retries until ``--wait`` seconds have passed; exits 1 (and says why) when the tools could not be installed.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SETTINGS_PATH = "/etc/gpulease/settings.json"
INSTALL_DIR = "/opt/gpulease"
METADATA = {"aws": "http://169.254.169.254", "alicloud": "http://100.100.100.200"}
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def say(message: str) -> None:
    print(f"gpulease-fetch-tools: {message}", file=sys.stderr, flush=True)


def _open(req: urllib.request.Request, timeout: float = 10) -> bytes:
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read(32 * 1024 * 1024)


def role_credentials(cloud: str, base: str) -> dict[str, str]:
    """The role's temporary credentials, read through a metadata token (never a tokenless GET)."""
    prefix = "X-aws-ec2-metadata-token" if cloud == "aws" else "X-aliyun-ecs-metadata-token"
    token = _open(urllib.request.Request(
        base + "/latest/api/token", method="PUT", headers={prefix + "-ttl-seconds": "300"}
    )).decode().strip()
    headers = {prefix: token}
    path = base + ("/latest/meta-data/iam/security-credentials/" if cloud == "aws" else "/latest/meta-data/ram/security-credentials/")
    role = _open(urllib.request.Request(path, headers=headers)).decode().split()[0].strip("/")
    data = json.loads(_open(urllib.request.Request(path + urllib.parse.quote(role, safe=""), headers=headers)))
    return {"id": data["AccessKeyId"], "secret": data.get("SecretAccessKey") or data["AccessKeySecret"],
            "token": data.get("Token") or data["SecurityToken"]}


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed_get(bucket: str, key: str, region: str, creds: dict[str, str], endpoint: str | None = None,
               now: datetime.datetime | None = None) -> urllib.request.Request:
    """A SigV4-signed GET of s3://bucket/key (virtual-hosted; path style on an explicit endpoint)."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 - Python 3.10
    amz_date, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    quoted = urllib.parse.quote(key, safe="/~")
    if endpoint:
        parts = urllib.parse.urlsplit(endpoint)
        host, path, url = parts.netloc, f"/{bucket}/{quoted}", f"{endpoint.rstrip('/')}/{bucket}/{quoted}"
    else:
        host = f"{bucket}.s3.{region}.amazonaws.com"
        path, url = f"/{quoted}", f"https://{host}/{quoted}"
    headers = {"host": host, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": amz_date,
               "x-amz-security-token": creds["token"]}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(["GET", path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, EMPTY_SHA256])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signing = _hmac(_hmac(_hmac(_hmac(("AWS4" + creds["secret"]).encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds['id']}/{scope}, SignedHeaders={signed}, "
                                f"Signature={signature}")
    del headers["host"]  # urllib sends it from the URL
    return urllib.request.Request(url, headers=headers)


def signed_get_oss(bucket: str, key: str, region: str, creds: dict[str, str], endpoint: str | None = None,
                   now: datetime.datetime | None = None) -> urllib.request.Request:
    """An OSS V4-signed GET of oss://bucket/key on the region's internal endpoint (path style on an explicit one).

    Canonical request: verb, /bucket/key, query, the x-oss-* headers (sorted, "name:value\\n" each), additional
    headers (none), the payload hash; signing key: HMAC-SHA256 chain from "aliyun_v4" + secret over the date,
    the region, "oss" and "aliyun_v4_request"."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 - Python 3.10
    oss_date, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    quoted = urllib.parse.quote(key, safe="/~")
    if endpoint:
        url = f"{endpoint.rstrip('/')}/{bucket}/{quoted}"
    else:
        url = f"https://{bucket}.oss-{region}-internal.aliyuncs.com/{quoted}"
    headers = {"x-oss-content-sha256": "UNSIGNED-PAYLOAD", "x-oss-date": oss_date, "x-oss-security-token": creds["token"]}
    canonical = "\n".join(["GET", f"/{bucket}/{quoted}", "", "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                           "", "UNSIGNED-PAYLOAD"])
    scope = f"{day}/{region}/oss/aliyun_v4_request"
    to_sign = "\n".join(["OSS4-HMAC-SHA256", oss_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signing = _hmac(_hmac(_hmac(_hmac(("aliyun_v4" + creds["secret"]).encode(), day), region), "oss"), "aliyun_v4_request")
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = f"OSS4-HMAC-SHA256 Credential={creds['id']}/{scope}, Signature={signature}"
    return urllib.request.Request(url, headers=headers)


def install(bundle: bytes, target: str) -> list[str]:
    files = json.loads(bundle.decode("utf-8"))["files"]
    os.makedirs(target, exist_ok=True)
    for name, text in sorted(files.items()):
        if "/" in name or name.startswith("."):
            raise ValueError(f"refusing the file name {name!r}")
        tmp = os.path.join(target, f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, os.path.join(target, name))
    return sorted(files)


def fetch(settings: dict, target: str) -> str:
    tools = settings["tools"]
    stamp = os.path.join(target, ".tools-sha256")
    try:
        with open(stamp, encoding="utf-8") as fh:
            if fh.read().strip() == tools["sha256"]:
                return "already installed"
    except OSError:
        pass
    cloud = settings.get("cloud", "aws")
    creds = role_credentials(cloud, (settings.get("metadata_url") or METADATA[cloud]).rstrip("/"))
    sign = signed_get if cloud == "aws" else signed_get_oss
    body = _open(sign(tools["bucket"], tools["key"], tools["region"], creds, tools.get("endpoint")), timeout=60)
    digest = hashlib.sha256(body).hexdigest()
    if digest != tools["sha256"]:
        raise ValueError(f"{tools['bucket']}/{tools['key']} has SHA-256 {digest}, expected {tools['sha256']}")
    names = install(body, target)
    with open(stamp + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(digest + "\n")
    os.replace(stamp + ".tmp", stamp)
    return f"installed {', '.join(names)} ({digest[:12]})"


def _unique(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key is written twice: {sorted(k for k in keys if keys.count(k) > 1)[0]!r}")
    return dict(pairs)


def read_settings(path: str) -> dict:
    """The settings, read as strictly as the tools read them: a regular file, bounded, UTF-8, unique keys."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        raw = fh.read(256 * 1024 + 1)
    if len(raw) > 256 * 1024:
        raise ValueError("larger than 256 KiB")
    settings = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    if not isinstance(settings, dict) or not isinstance((settings.get("tools") or {}).get("sha256"), str):
        raise ValueError("no tools.sha256: these settings are not for this loader")
    return settings


def main(argv: list[str]) -> int:
    wait = float(argv[argv.index("--wait") + 1]) if "--wait" in argv else 60.0
    target = os.environ.get("GPULEASE_INSTALL_DIR", INSTALL_DIR)
    path = os.environ.get("GPULEASE_SETTINGS", SETTINGS_PATH)
    try:
        settings = read_settings(path)
    except (OSError, ValueError, AttributeError) as exc:
        say(f"cannot read settings: {path}: {exc}")
        return 2
    end, pause = time.monotonic() + wait, 2.0
    while True:
        try:
            say(fetch(settings, target))
            return 0
        except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
            if time.monotonic() + pause > end:
                say(f"could not install the tools: {exc}")
                return 1
            say(f"retrying in {pause:.0f} s: {exc}")
            time.sleep(pause)
            pause = min(30.0, pause * 2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
