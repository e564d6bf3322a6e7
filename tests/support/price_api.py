"""A loopback AWS Price List Query API for the refresh tests, and the products it serves.

moto serves no Price List API, so ``PriceList`` answers ``GetProducts`` inside botocore, at ``before-send``: the
request is built, signed and sent through the real client, and the answer goes through botocore's own JSON
parser, paginator and retry handler (a ``ThrottlingException`` answer is retried by the standard retry mode,
exactly as a real one would be). It filters like the service (``TERM_MATCH`` on an attribute, ``productFamily``
or ``ServiceCode``; ``CONTAINS``), and pages by ``MaxResults`` with an opaque ``NextToken``.

Every product is shaped like the ``GetProducts`` example of the API reference
(https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html, also in
botocore's ``data/pricing/2017-10-15/examples-1.json``): ``product`` {productFamily, attributes, sku},
``serviceCode``, ``terms.OnDemand.<sku>.<offer>`` {priceDimensions.<rate> {unit, endRange, description,
appliesTo, rateCode, beginRange, pricePerUnit.USD}, sku, effectiveDate, offerTermCode, termAttributes},
``version``, ``publicationDate``; the PriceList holds each as a JSON string. Instance attributes follow the live
offer files (``instanceFamily: GPU instance``, ``gpu``, ``gpuMemory``, ``vcpu``, ``memory: "16 GiB"``,
``marketoption``, ``capacitystatus``...). The prices are test values, not AWS's.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

from tests.support.inventory import _Raw

ON_DEMAND = "JRTCKXETXF"
RATE = "6YS6EN2CT7"
PREFIX = {"us-east-1": "", "us-west-2": "USW2-", "eu-west-1": "EU-"}
LOCATION = {"us-east-1": "US East (N. Virginia)", "us-west-2": "US West (Oregon)", "eu-west-1": "Europe (Ireland)"}


def price_item(sku: str, family: str, attributes: dict[str, str], unit: str, usd: Any, *, begin: str = "0",
               end: str = "Inf", service: str = "AmazonEC2", extra_dimensions: list[tuple[str, str, Any]] = ()) -> str:
    """One PriceList entry (a JSON string), as the API reference's example shapes it."""

    def dimension(n: int, begin_: str, end_: str, usd_: Any) -> tuple[str, dict[str, Any]]:
        code = f"{sku}.{ON_DEMAND}.{RATE if n == 0 else f'{RATE[:-1]}{n}'}"
        return code, {"unit": unit, "endRange": end_, "description": f"${usd_} per {unit}", "appliesTo": [],
                      "rateCode": code, "beginRange": begin_, "pricePerUnit": {"USD": usd_}}

    dims = dict([dimension(0, begin, end, usd)] + [dimension(i + 1, *d) for i, d in enumerate(extra_dimensions)])
    return json.dumps({
        "product": {"productFamily": family, "attributes": {**attributes, "servicecode": service}, "sku": sku},
        "serviceCode": service,
        "terms": {"OnDemand": {f"{sku}.{ON_DEMAND}": {
            "priceDimensions": dims, "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
            "offerTermCode": ON_DEMAND, "termAttributes": {},
        }}},
        "version": "20261110000000",
        "publicationDate": "2026-11-10T00:00:00Z",
    })


def gpu_instance(region: str, instance_type: str, usd: Any, *, gpus: int = 1, vcpu: int = 4, memory: str = "16 GiB",
                 sku: str | None = None, **changes: str) -> str:
    attrs = {
        "instanceType": instance_type, "instanceFamily": "GPU instance", "instanceFamilyCategory": "Accelerated Computing",
        "gpu": str(gpus), "gpuMemory": "24 GB", "vcpu": str(vcpu), "memory": memory, "operatingSystem": "Linux",
        "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
        "marketoption": "OnDemand", "locationType": "AWS Region", "location": LOCATION[region], "regionCode": region,
        "usagetype": f"{PREFIX[region]}BoxUsage:{instance_type}", "operation": "RunInstances",
        **changes,
    }
    return price_item(sku or f"{region}-{instance_type}-{len(changes)}".upper(), "Compute Instance", attrs, "Hrs", usd)


def storage(region: str, family: str, unit: str, usd: Any, service: str = "AmazonEC2", **attrs: Any) -> str:
    extra = attrs.pop("extra_dimensions", ())
    attributes = {"regionCode": region, "location": LOCATION[region], "locationType": "AWS Region", **attrs}
    sku = f"{region}-{family}-{'-'.join(str(v) for v in attrs.values())}".upper().replace(" ", "")
    return price_item(sku, family, attributes, unit, usd, service=service, extra_dimensions=extra)


@dataclass
class PriceList:
    """``GetProducts`` over ``products``; the first ``throttle`` calls answer ``ThrottlingException`` (HTTP 400)."""

    products: list[str]
    throttle: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    throttled: int = 0

    def install(self, session: Any) -> None:
        session.events.register("before-send.pricing", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        body = json.loads(request.body or b"{}")
        self.calls.append(body)
        if self.throttled < self.throttle:
            self.throttled += 1
            return self._reply(request, 400, {"__type": "ThrottlingException", "Message": "Rate exceeded"})
        if request.headers.get("X-Amz-Target", b"") not in (b"AWSPriceListService.GetProducts",
                                                            "AWSPriceListService.GetProducts"):
            return self._reply(request, 400, {"__type": "InvalidParameterException", "Message": "not served"})
        matching = [p for p in self.products if self._matches(json.loads(p), body)]
        start = int(base64.b64decode(body["NextToken"]).decode()) if body.get("NextToken") else 0
        size = int(body.get("MaxResults") or 100)
        page = matching[start:start + size]
        out: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": page}
        if start + size < len(matching):
            out["NextToken"] = base64.b64encode(str(start + size).encode()).decode()
        return self._reply(request, 200, out)

    @staticmethod
    def _matches(product: dict[str, Any], body: dict[str, Any]) -> bool:
        if product["serviceCode"] != body.get("ServiceCode"):
            return False
        fields = {**product["product"]["attributes"], "productFamily": product["product"]["productFamily"]}
        for f in body.get("Filters") or []:
            value = fields.get(f["Field"])
            if f["Type"] == "TERM_MATCH" and value != f["Value"]:
                return False
            if f["Type"] == "CONTAINS" and (value is None or f["Value"] not in value):
                return False
        return True

    @staticmethod
    def _reply(request: Any, status: int, payload: dict[str, Any]) -> AWSResponse:
        headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": "test"}
        return AWSResponse(request.url, status, headers, _Raw(json.dumps(payload).encode()))


def region_products(region: str) -> list[str]:
    """A region's products: GPU types (one refused per way a price can be wrong), storage, snapshots, IPv4, S3."""
    p = PREFIX[region]
    return [
        gpu_instance(region, "g4dn.xlarge", "0.5000000000"),
        gpu_instance(region, "g5.xlarge", "1.0060000000", vcpu=4),
        gpu_instance(region, "g6.xlarge", "0.7832000000"),
        # Two SKUs that agree count once; two that disagree are skipped rather than guessed.
        gpu_instance(region, "g6.2xlarge", "0.9776000000", vcpu=8, memory="32 GiB", sku=f"{region}-G62XL-A"),
        gpu_instance(region, "g6.2xlarge", "0.9776000000", vcpu=8, memory="32 GiB", sku=f"{region}-G62XL-B"),
        gpu_instance(region, "g6.4xlarge", "1.3232000000", vcpu=16, memory="64 GiB", sku=f"{region}-G64XL-A"),
        gpu_instance(region, "g6.4xlarge", "1.4000000000", vcpu=16, memory="64 GiB", sku=f"{region}-G64XL-B"),
        # Prices the catalog must never hold.
        gpu_instance(region, "g5.2xlarge", "NaN", vcpu=8, memory="32 GiB"),
        gpu_instance(region, "g5.4xlarge", "0.0000000000", vcpu=16, memory="64 GiB"),
        gpu_instance(region, "g5.8xlarge", "-2.4480000000", vcpu=32, memory="128 GiB"),
        gpu_instance(region, "g5.12xlarge", "", gpus=4, vcpu=48, memory="192 GiB"),
        gpu_instance(region, "g5.16xlarge", "Infinity", vcpu=64, memory="256 GiB"),
        # A type the catalog does not know, in a family it knows (made up for the test).
        gpu_instance(region, "g6.64xlarge", "30.0000000000", gpus=8, vcpu=256, memory="1024 GiB"),
        # Filtered out by the query: another OS, a Capacity Block SKU, a family outside the catalog, no GPU.
        gpu_instance(region, "g5.xlarge", "1.5000000000", operatingSystem="Windows"),
        gpu_instance(region, "p5.48xlarge", "0.0000000000", gpus=8, vcpu=192, memory="2048 GiB", marketoption="CapacityBlock"),
        gpu_instance(region, "gr6.4xlarge", "1.5400000000", vcpu=16, memory="128 GiB"),
        gpu_instance(region, "m5.xlarge", "0.1920000000", instanceFamily="General purpose"),
        storage(region, "Storage", "GB-Mo", "0.0700000000", volumeApiName="gp3", usagetype=f"{p}EBS:VolumeUsage.gp3"),
        storage(region, "Storage", "GB-Mo", "0.1000000000", volumeApiName="gp2", usagetype=f"{p}EBS:VolumeUsage.gp2"),
        storage(region, "Storage", "GB-Mo", "0.1250000000", volumeApiName="io2", usagetype=f"{p}EBS:VolumeUsage.io2"),
        storage(region, "System Operation", "IOPS-Mo", "0.0050000000", volumeApiName="gp3", group="EBS IOPS",
                usagetype=f"{p}EBS:VolumeP-IOPS.gp3"),
        storage(region, "System Operation", "IOPS-Mo", "0.0650000000", volumeApiName="io2", group="EBS IOPS",
                usagetype=f"{p}EBS:VolumeP-IOPS.io2.tier1",
                extra_dimensions=[("32000", "64000", "0.0455000000"), ("64000", "Inf", "0.0319000000")]),
        storage(region, "Storage Snapshot", "GB-Mo", "0.0500000000", usagetype=f"{p}EBS:SnapshotUsage"),
        storage(region, "Storage Snapshot", "GB-Mo", "0.0125000000", usagetype=f"{p}EBS:SnapshotArchiveStorage"),
        storage(region, "", "Hrs", "0.0050000000", service="AmazonVPC", usagetype=f"{p}PublicIPv4:InUseAddress",
                group="VPCPublicIPv4Address"),
        storage(region, "", "Hrs", "0.0050000000", service="AmazonVPC", usagetype=f"{p}PublicIPv4:IdleAddress",
                group="VPCPublicIPv4Address"),
        storage(region, "Storage", "GB-Mo", "0.0230000000", service="AmazonS3", storageClass="General Purpose",
                volumeType="Standard", usagetype=f"{p}TimedStorage-ByteHrs",
                extra_dimensions=[("51200", "512000", "0.0220000000"), ("512000", "Inf", "0.0210000000")]),
    ]
