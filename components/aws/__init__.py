"""AWS: one ``gpulease:aws:GpuExperiment`` per stack; a file per responsibility."""

from components.aws.experiment import AwsGpuExperiment, prepare

__all__ = ["AwsGpuExperiment", "prepare"]
