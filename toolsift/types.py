"""Type aliases shared across toolsift."""

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

Vector: TypeAlias = npt.NDArray[np.float32]
"""One embedding, shape (dim,)."""

Matrix: TypeAlias = npt.NDArray[np.float32]
"""Row-stacked embeddings, shape (n, dim)."""

IdArray: TypeAlias = npt.NDArray[np.int64]
"""Positions of tools in a catalog."""

JSONSchema: TypeAlias = dict[str, Any]
"""A JSON-schema object describing a tool's parameters."""
