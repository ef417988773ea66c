"""Non-maximum suppression (`tf.image.non_max_suppression` and its variants), TensorFlow's
greedy algorithm: candidates taken by score (lower index first on ties), each compared with
the boxes selected since it was last checked; an overlap above the threshold suppresses it, and
with `soft_nms_sigma` > 0 each overlap first decays its score by exp(-0.5 iou^2 / sigma), a
decayed candidate going back into the queue. One primitive op, so it traces."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op


def _iou_matrix(boxes: np.ndarray) -> np.ndarray:
    y1, x1, y2, x2 = (boxes[:, k].astype(np.float64) for k in range(4))
    ymin, ymax = np.minimum(y1, y2), np.maximum(y1, y2)
    xmin, xmax = np.minimum(x1, x2), np.maximum(x1, x2)
    area = (ymax - ymin) * (xmax - xmin)
    ih = np.clip(np.minimum(ymax[:, None], ymax[None]) - np.maximum(ymin[:, None], ymin[None]),
                 0, None)
    iw = np.clip(np.minimum(xmax[:, None], xmax[None]) - np.maximum(xmin[:, None], xmin[None]),
                 0, None)
    inter = ih * iw
    union = area[:, None] + area[None] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where((area[:, None] <= 0) | (area[None] <= 0), 0.0, inter / union)
    return iou


def _select(similarity: np.ndarray, scores: np.ndarray, max_out: int, threshold: float,
            score_threshold: float, sigma: float) -> tuple:
    scale = -0.5 / sigma if sigma > 0 else 0.0
    heap = [(-float(s), i, 0) for i, s in enumerate(scores.tolist()) if s > score_threshold]
    heapq.heapify(heap)
    selected: list = []
    selected_scores: list = []
    while len(selected) < max_out and heap:
        neg, index, begin = heapq.heappop(heap)
        score = original = -neg
        suppressed = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = similarity[index, selected[j]]
            score *= np.exp(scale * sim * sim) if sim <= threshold else 0.0
            if sim > threshold:
                suppressed = True
                break
            if score <= score_threshold:
                break
        if suppressed:
            continue
        if score == original:
            selected.append(index)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(heap, (-score, index, len(selected)))
    return selected, selected_scores


@op("NonMaxSuppressionV5", multi_output=True,
    shape=lambda boxes, scores, *, max_out, threshold, score_threshold, sigma, overlaps, pad: [
        ((max_out if pad else None,), _dtypes.int32), ((max_out if pad else None,), scores[1]),
        ((), _dtypes.int32)])
def _nms(boxes, scores, *, max_out, threshold, score_threshold, sigma, overlaps, pad):
    similarity = boxes.astype(np.float64) if overlaps else _iou_matrix(boxes)
    selected, kept = _select(similarity, scores, max_out, threshold, score_threshold, sigma)
    count = len(selected)
    if pad:
        selected = selected + [0] * (max_out - count)
        kept = kept + [0.0] * (max_out - count)
    return (np.asarray(selected, np.int32), np.asarray(kept, scores.dtype),
            np.asarray(count, np.int32))


def _number(x: Any) -> float:
    return float(np.asarray(x.numpy() if hasattr(x, "numpy") else x))


def _run(boxes: Any, scores: Any, max_output_size: Any, threshold: Any, score_threshold: Any,
         sigma: Any = 0.0, overlaps: bool = False, pad: bool = False) -> tuple:
    s = convert_to_tensor(scores)
    b = convert_to_tensor(boxes, s.dtype)
    return apply(_nms, b, s, max_out=int(_number(max_output_size)),
                 threshold=_number(threshold), score_threshold=_number(score_threshold),
                 sigma=_number(sigma), overlaps=overlaps, pad=pad)


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any,
                        iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                        name: str | None = None) -> Any:
    """Indices (int32) of the boxes [y1, x1, y2, x2] kept, best first."""
    return _run(boxes, scores, max_output_size, iou_threshold, score_threshold)[0]


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any,
                                    iou_threshold: Any = 0.5,
                                    score_threshold: Any = float("-inf"),
                                    soft_nms_sigma: Any = 0.0, name: str | None = None) -> tuple:
    """(indices, their scores); soft_nms_sigma > 0 decays overlapping scores (Soft-NMS)."""
    selected, kept, _ = _run(boxes, scores, max_output_size, iou_threshold, score_threshold,
                             soft_nms_sigma)
    return selected, kept


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any,
                               iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                               pad_to_max_output_size: bool = False, name: str | None = None,
                               sorted_input: bool = False, canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> tuple:
    """(indices, number valid); zero-padded to max_output_size when asked."""
    selected, _, count = _run(boxes, scores, max_output_size, iou_threshold, score_threshold,
                              pad=bool(pad_to_max_output_size))
    return selected, count


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any,
                                 overlap_threshold: Any = 0.5,
                                 score_threshold: Any = float("-inf"),
                                 name: str | None = None) -> Any:
    """NMS over a given [n, n] overlap matrix instead of boxes."""
    return _run(overlaps, scores, max_output_size, overlap_threshold, score_threshold,
                overlaps=True)[0]
