"""Bounding-box ops of ``tf.image``: draw_bounding_boxes, combined_non_max_suppression,
sample_distorted_bounding_box (and its stateless form), following TensorFlow's kernels:
box corners at coordinate * (size - 1) truncated to pixels and outlines one pixel wide;
per-class greedy NMS whose survivors are merged by score; random crops by TF's rejection
loop over aspect ratio and area (the draws are NumPy's, not TF's bits)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.image.nms import _iou_matrix, _select

# TF's colors when none are given: yellow, blue, red, lime, purple, olive, maroon, navy, aqua,
# fuchsia (RGBA)
_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                            [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                            [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


@op("DrawBoundingBoxesV2", shape=lambda images, boxes, colors: images)
def _draw(images, boxes, colors):
    out = images.copy()
    batch, height, width, depth = images.shape
    table = colors if colors.size else _DEFAULT_COLORS
    if depth == 1 and not colors.size:
        table = np.ones((1, 4), np.float32)
    for b in range(batch):
        for k, box in enumerate(boxes[b].astype(np.float32)):
            color = table[k % len(table)][:depth].astype(images.dtype)
            top, left = int(box[0] * (height - 1)), int(box[1] * (width - 1))
            bottom, right = int(box[2] * (height - 1)), int(box[3] * (width - 1))
            if top > bottom or left > right:
                continue
            if top >= height or bottom < 0 or left >= width or right < 0:
                continue
            r0, r1 = max(top, 0), min(bottom, height - 1)
            c0, c1 = max(left, 0), min(right, width - 1)
            if top >= 0:
                out[b, top, c0:c1 + 1] = color
            if bottom < height:
                out[b, bottom, c0:c1 + 1] = color
            if left >= 0:
                out[b, r0:r1 + 1, left] = color
            if right < width:
                out[b, r0:r1 + 1, right] = color
    return out


@export("image.draw_bounding_boxes")
def draw_bounding_boxes(images: Any, boxes: Any, colors: Any, name: str | None = None) -> Any:
    """Outline each box ([y_min, x_min, y_max, x_max] in [0, 1]) on its image of a float
    [batch, height, width, depth] batch, in colors[box index % len(colors)] (RGBA rows)."""
    x = convert_to_tensor(images)
    b = convert_to_tensor(boxes, _dtypes.float32)
    c = convert_to_tensor(np.zeros((0, 4), np.float32) if colors is None else colors,
                          _dtypes.float32)
    return apply(_draw, x, b, c)


def _combined_rule(boxes, scores, *, per_class, total, iou, score_threshold, pad, clip):
    n = None if pad else total
    batch = boxes[0][0] if boxes[0] else None
    return [((batch, n, 4), _dtypes.float32), ((batch, n), _dtypes.float32),
            ((batch, n), _dtypes.float32), ((batch,), _dtypes.int32)]


@op("CombinedNonMaxSuppression", multi_output=True, shape=_combined_rule)
def _combined(boxes, scores, *, per_class, total, iou, score_threshold, pad, clip):
    batch, _, q, _ = boxes.shape
    classes = scores.shape[2]
    size = min(per_class * classes, total) if pad else total
    out_boxes = np.zeros((batch, size, 4), np.float32)
    out_scores = np.zeros((batch, size), np.float32)
    out_classes = np.zeros((batch, size), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found = []
        for c in range(classes):
            class_boxes = boxes[b, :, c if q > 1 else 0]
            picked, kept = _select(_iou_matrix(class_boxes), scores[b, :, c], per_class, iou,
                                   score_threshold, 0.0)
            found += [(s, c, class_boxes[i]) for i, s in zip(picked, kept)]
        found.sort(key=lambda t: -t[0])
        found = found[:size]
        for k, (s, c, box) in enumerate(found):
            out_boxes[b, k] = np.clip(box, 0.0, 1.0) if clip else box
            out_scores[b, k], out_classes[b, k] = s, c
        valid[b] = len(found)
    return out_boxes, out_scores, out_classes, valid


@export("image.combined_non_max_suppression")
def combined_non_max_suppression(boxes: Any, scores: Any, max_output_size_per_class: int,
                                 max_total_size: int, iou_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: str | None = None) -> tuple:
    """Greedy NMS per class over [batch, boxes, q, 4] boxes and [batch, boxes, classes]
    scores, the survivors merged by score: (nmsed_boxes, nmsed_scores, nmsed_classes,
    valid_detections), zero-padded to max_total_size (with pad_per_class, to
    min(max_output_size_per_class * classes, max_total_size))."""
    b = convert_to_tensor(boxes, _dtypes.float32)
    s = convert_to_tensor(scores, _dtypes.float32)
    return tuple(apply(_combined, b, s, per_class=int(max_output_size_per_class),
                       total=int(max_total_size), iou=float(iou_threshold),
                       score_threshold=float(score_threshold), pad=bool(pad_per_class),
                       clip=bool(clip_boxes)))


def _random_crop(gen: np.random.Generator, height: int, width: int, aspect: float,
                 min_area: float, max_area: float) -> tuple | None:
    """TF's GenerateRandomCrop: a height drawn between the sizes the area range allows."""
    h = int(np.rint(np.sqrt(min_area / aspect)))
    max_h = int(np.rint(np.sqrt(max_area / aspect)))
    if np.rint(max_h * aspect) > width:
        max_h = int((width + 0.5 - 1e-7) / aspect)
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(gen.integers(0, max_h - h + 1))
    w = int(np.rint(h * aspect))
    area = float(w * h)
    if area < min_area:
        h += 1
        w = int(np.rint(h * aspect))
        area = float(w * h)
    if area > max_area:
        h -= 1
        w = int(np.rint(h * aspect))
        area = float(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(gen.integers(0, height - h)) if h < height else 0
    x = int(gen.integers(0, width - w)) if w < width else 0
    return y, x, h, w


def _covers(crop: tuple, boxes: np.ndarray, height: int, width: int, minimum: float) -> bool:
    y, x, h, w = crop
    for ymin, xmin, ymax, xmax in boxes:
        by0, bx0, by1, bx1 = ymin * height, xmin * width, ymax * height, xmax * width
        area = (by1 - by0) * (bx1 - bx0)
        if area <= 0:
            continue
        inter = max(0.0, min(by1, y + h) - max(by0, y)) * max(0.0, min(bx1, x + w) - max(bx0, x))
        if inter / area >= minimum:
            return True
    return False


def _sample_rule(size, boxes, *args, **attrs):
    return [((3,), size[1]), ((3,), size[1]), ((1, 1, 4), _dtypes.float32)]


def _crop(size: np.ndarray, boxes: np.ndarray, gen: np.random.Generator, min_covered: float,
          aspect_range: tuple, area_range: tuple, attempts: int, use_image: bool) -> tuple:
    height, width, _ = (int(v) for v in size)
    boxes = boxes.reshape(-1, 4).astype(np.float64)
    if not len(boxes):
        if not use_image:
            raise ValueError("sample_distorted_bounding_box: no bounding boxes given; set "
                             "use_image_if_no_bounding_boxes=True to use the whole image")
        boxes = np.array([[0.0, 0.0, 1.0, 1.0]])
    crop = (0, 0, height, width)
    for _ in range(attempts):
        aspect = gen.uniform(*aspect_range)
        found = _random_crop(gen, height, width, aspect, area_range[0] * height * width,
                             area_range[1] * height * width)
        if found is not None and _covers(found, boxes, height, width, min_covered):
            crop = found
            break
    y, x, h, w = crop
    bbox = np.array([[[y / height, x / width, (y + h) / height, (x + w) / width]]], np.float32)
    return (np.array([y, x, 0], size.dtype), np.array([h, w, -1], size.dtype), bbox)


@op("SampleDistortedBoundingBoxV2", multi_output=True, random=True, shape=_sample_rule)
def _sample_distorted(size, boxes, *, gen, min_covered, aspect_range, area_range, attempts,
                      use_image):
    return _crop(size, boxes, gen, min_covered, aspect_range, area_range, attempts, use_image)


@op("StatelessSampleDistortedBoundingBox", multi_output=True, shape=_sample_rule)
def _stateless_sample(size, boxes, seed, *, min_covered, aspect_range, area_range, attempts,
                      use_image):
    from tapeflow.ops.stateless_random import numpy_generator

    return _crop(size, boxes, numpy_generator(seed), min_covered, aspect_range, area_range,
                 attempts, use_image)


def _sample_args(min_object_covered: Any, aspect_ratio_range: Any, area_range: Any,
                 max_attempts: Any, use_image_if_no_bounding_boxes: Any) -> dict:
    return dict(min_covered=float(np.asarray(min_object_covered)),
                aspect_range=tuple(float(v) for v in aspect_ratio_range),
                area_range=tuple(float(v) for v in area_range),
                attempts=int(max_attempts or 100),
                use_image=bool(use_image_if_no_bounding_boxes))


@export("image.sample_distorted_bounding_box")
def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: int = 0,
                                  min_object_covered: float = 0.1,
                                  aspect_ratio_range: Any = (0.75, 1.33),
                                  area_range: Any = (0.05, 1), max_attempts: int | None = None,
                                  use_image_if_no_bounding_boxes: Any = None,
                                  name: str | None = None) -> tuple:
    """(begin, size, bboxes) of a random crop covering at least min_object_covered of some
    bounding box, with its aspect ratio and area fraction in the given ranges (the whole
    image when max_attempts tries fail): feed begin and size to tf.slice."""
    from tapeflow.ops.random_ops import make_generator

    size = convert_to_tensor(image_size)
    boxes = convert_to_tensor(bounding_boxes, _dtypes.float32)
    args = _sample_args(min_object_covered, aspect_ratio_range, area_range, max_attempts,
                        use_image_if_no_bounding_boxes)
    return tuple(apply(_sample_distorted, size, boxes, gen=make_generator(seed or None),
                       **args))


@export("image.stateless_sample_distorted_bounding_box")
def stateless_sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: Any,
                                            min_object_covered: float = 0.1,
                                            aspect_ratio_range: Any = (0.75, 1.33),
                                            area_range: Any = (0.05, 1),
                                            max_attempts: int = 100,
                                            use_image_if_no_bounding_boxes: bool = False,
                                            name: str | None = None) -> tuple:
    """sample_distorted_bounding_box as a function of a [2] seed (the same seed, the same
    crop; not TF's bits)."""
    size = convert_to_tensor(image_size)
    boxes = convert_to_tensor(bounding_boxes, _dtypes.float32)
    args = _sample_args(min_object_covered, aspect_ratio_range, area_range, max_attempts,
                        use_image_if_no_bounding_boxes)
    return tuple(apply(_stateless_sample, size, boxes,
                       convert_to_tensor(seed, _dtypes.int64), **args))
