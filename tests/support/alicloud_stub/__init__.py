"""A loopback stand-in for the Alibaba Cloud APIs the kit calls (ECS, VPC, STS RPC actions; OSS bucket listing).

    stub = AlicloudStub({"access-key-id": "secret"}).start()
    account = Account()
    install(stub, account)              # DescribeInstances, DeleteInstances, ... answered from ``account``
    stub.register(ECS_VERSION, "DescribePrice", handler)   # add an action: handler(RpcRequest) -> dict
    stub.faults.add("DeleteDisk", 2, "Throttling.User", 400)
    ...                                 # point the SDKs at stub.endpoint
    stub.stop()
"""

from tests.support.alicloud_stub.cloud import Account, Resource, install
from tests.support.alicloud_stub.server import (
    ECS_VERSION,
    STS_VERSION,
    VPC_VERSION,
    AlicloudStub,
    ApiError,
    Faults,
    RpcRequest,
    acs3_signature,
)

__all__ = [
    "ECS_VERSION",
    "STS_VERSION",
    "VPC_VERSION",
    "Account",
    "AlicloudStub",
    "ApiError",
    "Faults",
    "Resource",
    "RpcRequest",
    "acs3_signature",
    "install",
]
