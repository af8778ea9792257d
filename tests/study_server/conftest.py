"""What every test of the server gets."""

from __future__ import annotations

import pytest

from tests.study_server import people


@pytest.fixture(autouse=True)
def no_player_outlives_its_test():
    """Close the players a test left open (one whose server was killed goes on
    reconnecting otherwise, for the rest of the run)."""
    yield
    while people.LIVE:
        people.LIVE[-1].close()
