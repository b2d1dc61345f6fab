"""``adapters.engine.gc_pause.gc_paused``: collection off inside, back as it was after."""

from __future__ import annotations

import gc

import pytest

from adapters.engine.gc_pause import gc_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_collection_is_off_inside_and_as_before_after_even_on_errors(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(KeyError), gc_paused():
            assert not gc.isenabled()
            raise KeyError("boom")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
