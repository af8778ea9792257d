"""study_server."""
