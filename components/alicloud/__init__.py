"""Alibaba Cloud: one ``gpulease:alicloud:GpuExperiment`` per stack; a file per responsibility, as on AWS."""

from components.alicloud.experiment import AlicloudGpuExperiment, prepare

__all__ = ["AlicloudGpuExperiment", "prepare"]
