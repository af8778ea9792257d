"""game_client."""
