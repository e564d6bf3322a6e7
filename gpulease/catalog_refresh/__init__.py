"""``gpulease catalog refresh``: current prices from the clouds' price APIs, written as a dated catalog override.

- ``fetched``: what a refresh found (prices by type and region, spot prices by zone, storage and address prices,
  new instance types of known families) and the one gate every number passes (finite, positive, USD).
- ``aws``: the AWS Price List Query API (``GetProducts``) and EC2 ``DescribeSpotPriceHistory``.
- ``alicloud``: ECS ``DescribePrice``, ``DescribeSpotPriceHistory`` and ``DescribeInstanceTypes``.
- ``changes``: what changed against the catalog in use (type, region, old -> new, %).
- ``writer``: the override file, in the existing override format, checked by loading it before it replaces
  anything.
- ``run``: both clouds, one rich progress bar, the change report.

The shipped catalog stays the offline default: a refresh only writes an override file that the catalog loader
reads on top of it (``GPULEASE_CATALOG_OVERRIDES`` or ``--catalog``). docs/prices.md has the details and sources.
"""
