"""consent."""
