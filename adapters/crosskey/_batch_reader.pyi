from collections.abc import Sequence
from typing import Any

def read_columns(events: Sequence[Any], field: str
                 ) -> tuple[list[Any], bytearray, bytearray, bytearray] | None: ...
