"""Context-manager mixins: ``with obj:`` gives ``obj`` and ends it on the way out.

:class:`Ends` calls ``obj._end()``, which a subclass defines (the procedure session);
:class:`Closes` calls ``obj.close()`` (the stores); :class:`Stops` calls ``obj.stop()`` (the
receiver, the live watcher, a managed server). A class that must do more on entry (start
itself, make its directory) overrides ``__enter__``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Ends:
    """``with obj:`` gives ``obj`` (``__enter__``) and ends with ``obj._end()``."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end()

    def _end(self) -> None:
        raise NotImplementedError


class Closes(Ends):
    """``with obj:`` ends with ``obj.close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        self.close()


class Stops(Ends):
    """``with obj:`` ends with ``obj.stop()``."""

    def stop(self) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        self.stop()
