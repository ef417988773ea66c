"""channel_window: channel slices read in place, everything else copied, always the same values."""

import numpy as np
import pytest

from tapeflow.kernels.rows import channel_window

_flat = np.random.default_rng(0).standard_normal((6 * 4 * 5, 9))
_grid = _flat.reshape(6, 4, 5, 9)  # a 2-D kernel output reshaped, as gradients often are


@pytest.mark.parametrize("a, in_place, first", [
    (_grid[..., 2:7], True, 2),                   # SplitLike's piece of a concat gradient
    (_grid[1:4, ..., 3:9], True, 3),              # whole images and a channel range
    (_grid, True, 0),                             # already contiguous
    (_grid[:, 1:3, :, 0:4], False, 0),            # rows not one after another
    (_grid[..., ::2], False, 0),                  # strided channels
    (np.asfortranarray(_flat)[:, 1:4], False, 0),
    (_grid[..., 2:7].transpose(1, 0, 2, 3), False, 0),
], ids=["channel_slice", "images_and_channels", "contiguous", "row_gap", "strided",
        "fortran", "transposed"])
def test_channel_window_reads_slices_in_place(a, in_place, first):
    rows, col = channel_window(a)
    assert rows.flags.c_contiguous and rows.ndim == 2
    assert (col, np.shares_memory(rows, a)) == (first, in_place)
    np.testing.assert_array_equal(rows[:, col:col + a.shape[-1]], a.reshape(-1, a.shape[-1]))
