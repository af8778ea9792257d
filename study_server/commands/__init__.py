"""The gridstudy sub-commands, one module per area (see study_server.cli.COMMANDS)."""
