"""Data-pipeline ops: group-by reductions, scatter, take-along-axis, sorting and one-hot
rows (:mod:`~nodegrad.ops.pipeline.segments`); scans and masked reductions along an axis
(:mod:`~nodegrad.ops.pipeline.scans`)."""

from nodegrad.ops.pipeline.scans import cumprod, cumsum, logsumexp, masked_mean, masked_sum, ssm_scan
from nodegrad.ops.pipeline.segments import (
    one_hot,
    scatter_add,
    segment_max,
    segment_mean,
    segment_sum,
    sort,
    take_along_axis,
)

__all__ = [
    "cumprod",
    "cumsum",
    "logsumexp",
    "masked_mean",
    "masked_sum",
    "one_hot",
    "scatter_add",
    "segment_max",
    "segment_mean",
    "segment_sum",
    "sort",
    "ssm_scan",
    "take_along_axis",
]
