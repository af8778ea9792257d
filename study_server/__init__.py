"""study_server: the Flask + Flask-SocketIO application (``study_server.create_app``)."""


def __getattr__(name: str):
    # Lazy, so that ``gridstudy envs list`` does not import Flask.
    if name == "create_app":
        from study_server.app import create_app

        return create_app
    raise AttributeError(f"module 'study_server' has no attribute {name!r}")
