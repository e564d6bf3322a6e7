"""A stand-in for Alibaba Cloud's ECS endpoint on 127.0.0.1: every request's signature is recomputed with Alibaba
Cloud's own Python SDK signer (aliyun-python-sdk-core) and refused when it differs; answers per action.

``DescribeInstances`` answers like the real one for the instances in ``instances`` (id -> {"Tags": {key: value},
"AutoReleaseTime": text}), and, like the real one for a caller whose RAM policy does not cover an instance, with an
empty list for an id not in ``visible`` (when set). ``also_list`` adds instances to every answer, whatever was
asked (an answer a client must not take for its own instance's). ``hits`` counts every request, signed or not."""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aliyunsdkcore.auth.algorithm import sha_hmac1
from aliyunsdkcore.auth.composer import rpc_signature_composer

from tests.support.instance import ALI_CREDENTIALS

_compose = getattr(rpc_signature_composer, "__compose_string_to_sign")  # the SDK's own canonical string


def sdk_signature(params: dict[str, str], secret: str) -> str:
    """What aliyun-python-sdk-core computes for the same query (HMAC-SHA1, key = secret + "&")."""
    return sha_hmac1.get_sign_string(_compose("GET", params), secret + "&")


@dataclass
class EcsApi:
    """The ECS endpoint: verifies every request's signature, answers per action."""

    answers: dict[str, int] = field(
        default_factory=lambda: {"DeleteInstance": 200, "StopInstance": 200, "DescribeInstances": 200}
    )
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    visible: set[str] | None = None
    also_list: list[str] = field(default_factory=list)
    calls: list[dict[str, str]] = field(default_factory=list)
    bad_signatures: int = 0
    hits: int = 0

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.hits += 1
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query, keep_blank_values=True))
                signature = query.pop("Signature", "")
                if signature != sdk_signature(query, ALI_CREDENTIALS["AccessKeySecret"]):
                    outer.bad_signatures += 1
                    return self._answer(400, {"Code": "SignatureDoesNotMatch"})
                outer.calls.append(query)
                action = query.get("Action", "")
                status = outer.answers.get(action, 400)
                if status != 200:
                    return self._answer(status, {"Code": "Forbidden.RAM", "Message": "not allowed"})
                if action == "DescribeInstances":
                    return self._answer(200, outer.describe(query))
                return self._answer(200, {"RequestId": "R-1"})

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def describe(self, query: dict[str, str]) -> dict[str, Any]:
        """The DescribeInstances answer (Instances.Instance[], Tags.Tag[] of TagKey/TagValue)."""
        ids = json.loads(query.get("InstanceIds", "[]"))
        rows = []
        for iid in [*self.also_list, *ids]:
            found = self.instances.get(iid)
            if found is None or (self.visible is not None and iid not in self.visible):
                continue
            tags = [{"TagKey": k, "TagValue": v} for k, v in found.get("Tags", {}).items()]
            rows.append({"InstanceId": iid, "RegionId": query.get("RegionId"), "Status": "Running",
                         "AutoReleaseTime": found.get("AutoReleaseTime", ""), "Tags": {"Tag": tags}})
        return {"RequestId": "R-2", "TotalCount": len(rows), "Instances": {"Instance": rows}}

    def actions(self) -> list[str]:
        return [c["Action"] for c in self.calls]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
