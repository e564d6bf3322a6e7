"""A small OSS object server on 127.0.0.1 for ``gpulease push`` / ``pull`` on Alibaba Cloud: path-style requests as
the OSS SDK v2 sends them with ``use_path_style`` (HeadObject, PutObject, GetObject with Range, ListObjectsV2, and
the multipart calls InitiateMultipartUpload, UploadPart, ListParts, CompleteMultipartUpload, Abort), XML bodies as
the OSS API reference gives them. Signatures are not checked (the SDK signs; the Alibaba stub checks that part).

``cut_part`` drops the connection on an UploadPart of that number (every attempt) until cleared: a push cut in
the middle; ``calls`` records every (operation, part number) so that a test can tell what was sent again."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.sax.saxutils import escape

from tests.support.trickle import send_slowly

STAMP = "2026-11-30T12:00:00.000Z"
META = "x-oss-meta-"


@dataclass
class OssObjects:
    buckets: dict[str, dict[str, tuple[bytes, dict[str, str]]]] = field(default_factory=dict)
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, int | None]] = field(default_factory=list)
    cut_part: int | None = None
    truncated_without_token: bool = False  # answer one key, IsTruncated true and no NextContinuationToken
    trickle_seconds: float = 0.0
    """When above 0: an object's body (a GetObject answer) is sent a byte every 50 ms for at most this long."""
    trickle_until: float | None = None
    endpoint: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data).hexdigest().upper()}"'  # an ETag, as OSS computes it (MD5)


def _handler(store: OssObjects) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                  head: bool = False) -> None:
            self.send_response(status)
            self.send_header("x-oss-request-id", uuid.uuid4().hex)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)) if not head else (headers or {}).get("_len", "0"))
            self.end_headers()
            if head:
                return
            if store.trickle_seconds and self.command == "GET" \
                    and (headers or {}).get("Content-Type") == "application/octet-stream" \
                    and time.monotonic() < (store.trickle_until or float("inf")):
                # One budget for the server, across the SDK's retries: after it, bodies are sent whole, so a pull
                # that is not cut off by its own deadline ends (and its test fails) instead of hanging.
                store.trickle_until = store.trickle_until or time.monotonic() + store.trickle_seconds
                send_slowly(self.wfile, body, store.trickle_until)
                self.close_connection = True
                return
            self.wfile.write(body)

        def _xml(self, status: int, text: str) -> None:
            self._send(status, ('<?xml version="1.0" encoding="UTF-8"?>\n' + text).encode(),
                       {"Content-Type": "application/xml"})

        def _error(self, status: int, code: str, head: bool = False) -> None:
            if head:
                self._send(status, head=True)
            else:
                self._xml(status, f"<Error><Code>{code}</Code><Message>{code}</Message><RequestId>x</RequestId></Error>")

        def _parse(self) -> tuple[str, str, dict[str, str], bytes]:
            url = urlsplit(self.path)
            bucket, _, key = unquote(url.path).lstrip("/").partition("/")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            return bucket, key, dict(parse_qsl(url.query, keep_blank_values=True)), body

        def do_HEAD(self) -> None:
            bucket, key, _, _ = self._parse()
            with store.lock:
                store.calls.append(("HeadObject", None))
                found = store.buckets.get(bucket, {}).get(key)
            if found is None:
                self._error(404, "NoSuchKey", head=True)
                return
            data, meta = found
            self._send(200, head=True, headers={"ETag": _etag(data), "Last-Modified": "Mon, 30 Nov 2026 12:00:00 GMT",
                                                "_len": str(len(data)), **{META + k: v for k, v in meta.items()}})

        def do_GET(self) -> None:
            bucket, key, query, _ = self._parse()
            if bucket not in store.buckets:
                self._error(404, "NoSuchBucket")
                return
            if not key and query.get("list-type") == "2":
                self._list(bucket, query.get("prefix", ""))
            elif "uploadId" in query:
                self._list_parts(query["uploadId"])
            else:
                self._get(bucket, key)

        def _list(self, bucket: str, prefix: str) -> None:
            with store.lock:
                store.calls.append(("ListObjectsV2", None))
                keys = sorted(k for k in store.buckets[bucket] if k.startswith(prefix))
                truncated = store.truncated_without_token and len(keys) > 1
                keys = keys[:1] if truncated else keys
                rows = "".join(f"<Contents><Key>{escape(k)}</Key><LastModified>{STAMP}</LastModified><ETag>"
                               f"{escape(_etag(store.buckets[bucket][k][0]))}</ETag><Size>{len(store.buckets[bucket][k][0])}"
                               "</Size><StorageClass>Standard</StorageClass></Contents>" for k in keys)
            self._xml(200, f"<ListBucketResult><Name>{bucket}</Name><Prefix>{escape(prefix)}</Prefix><MaxKeys>100"
                           f"</MaxKeys><KeyCount>{len(keys)}</KeyCount><IsTruncated>{str(truncated).lower()}</IsTruncated>{rows}"
                           "</ListBucketResult>")

        def _get(self, bucket: str, key: str) -> None:
            with store.lock:
                store.calls.append(("GetObject", None))
                found = store.buckets[bucket].get(key)
            if found is None:
                self._error(404, "NoSuchKey")
                return
            data, _ = found
            rng = self.headers.get("Range")
            headers = {"ETag": _etag(data), "Last-Modified": "Mon, 30 Nov 2026 12:00:00 GMT",
                       "Content-Type": "application/octet-stream"}
            if rng and rng.startswith("bytes="):
                first, _, last = rng[6:].partition("-")
                start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                self._send(206, data[start:end + 1], headers)
            else:
                self._send(200, data, headers)

        def _list_parts(self, upload_id: str) -> None:
            with store.lock:
                store.calls.append(("ListParts", None))
                upload = store.uploads.get(upload_id)
                if upload is None:
                    self._error(404, "NoSuchUpload")
                    return
                parts = "".join(f"<Part><PartNumber>{n}</PartNumber><LastModified>{STAMP}</LastModified><ETag>"
                                f"{escape(_etag(d))}</ETag><Size>{len(d)}</Size></Part>"
                                for n, d in sorted(upload["parts"].items()))
            self._xml(200, f"<ListPartsResult><Bucket>{upload['bucket']}</Bucket><Key>{escape(upload['key'])}</Key>"
                           f"<UploadId>{upload_id}</UploadId><MaxParts>1000</MaxParts><IsTruncated>false"
                           f"</IsTruncated>{parts}</ListPartsResult>")

        def do_PUT(self) -> None:
            bucket, key, query, body = self._parse()
            if bucket not in store.buckets:
                self._error(404, "NoSuchBucket")
                return
            if "uploadId" in query:
                number = int(query["partNumber"])
                with store.lock:
                    store.calls.append(("UploadPart", number))
                    if store.cut_part == number:
                        self.close_connection = True
                        self.connection.close()
                        return
                    store.uploads[query["uploadId"]]["parts"][number] = body
                self._send(200, headers={"ETag": _etag(body)})
                return
            meta = {k[len(META):].lower(): v for k, v in self.headers.items() if k.lower().startswith(META)}
            with store.lock:
                store.calls.append(("PutObject", None))
                store.buckets[bucket][key] = (body, meta)
            self._send(200, headers={"ETag": _etag(body)})

        def do_POST(self) -> None:
            bucket, key, query, _ = self._parse()
            if "uploads" in query:
                upload_id = uuid.uuid4().hex.upper()
                meta = {k[len(META):].lower(): v for k, v in self.headers.items() if k.lower().startswith(META)}
                with store.lock:
                    store.calls.append(("InitiateMultipartUpload", None))
                    store.uploads[upload_id] = {"bucket": bucket, "key": key, "parts": {}, "meta": meta}
                self._xml(200, f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{escape(key)}</Key>"
                               f"<UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>")
                return
            with store.lock:
                store.calls.append(("CompleteMultipartUpload", None))
                upload = store.uploads.pop(query["uploadId"])
                data = b"".join(d for _, d in sorted(upload["parts"].items()))
                store.buckets[bucket][key] = (data, upload["meta"])
            self._xml(200, f"<CompleteMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{escape(key)}</Key>"
                           f"<ETag>{escape(_etag(data))}</ETag></CompleteMultipartUploadResult>")

        def do_DELETE(self) -> None:
            _, _, query, _ = self._parse()
            with store.lock:
                store.calls.append(("AbortMultipartUpload", None))
                store.uploads.pop(query.get("uploadId", ""), None)
            self._send(204)

    return Handler


@contextmanager
def oss_objects_server() -> Iterator[OssObjects]:
    store = OssObjects()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(store))
    server.daemon_threads = True
    # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    host, port = server.server_address[:2]
    store.endpoint = f"http://{host}:{port}"
    try:
        yield store
    finally:
        server.shutdown()
        server.server_close()
