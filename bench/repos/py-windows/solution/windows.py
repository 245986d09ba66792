"""Sliding windows over a sequence."""


def windows(items, k):
    """Return every run of k consecutive items of items, in order, each as a list.

    windows([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]; a k longer than items gives [].
    A k below 1 raises ValueError.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    return [list(items[i:i + k]) for i in range(len(items) - k + 1)]
