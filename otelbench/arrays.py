"""The numpy array types otelbench's records and metrics pass around, named once.

``F64`` is a float64 array (NaN where a value is undefined: an absent attribute, a request
without a first token), ``I64`` an int64 one (times in ns or µs, counts, indices).

Example::

    from otelbench.arrays import F64

    def ttft_ms(ttft_us: F64) -> F64:
        return ttft_us / 1000
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["F64", "I64"]

F64: TypeAlias = npt.NDArray[np.float64]
I64: TypeAlias = npt.NDArray[np.int64]
