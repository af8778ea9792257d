"""The event record: what is stored of every attempt, and the store that keeps it.

Beneath every driver (the study server, the local and agent clients) and beside the
analysis, so that none of them imports another to write or read a trajectory:

* :mod:`records.schema`: every stored field, declared once (no dependencies);
* :mod:`records.models`: the database tables built from it;
* :mod:`records.rows`: every row a driver writes; :mod:`records.recorder`: one
  attempt's rows, as the drivers' engines report them;
* :mod:`records.database`, :mod:`records.store`, :mod:`records.writer`: engines, the
  store and its batching writer;
* :mod:`records.rebuild`: an attempt rebuilt from its stored events.

Importing this package imports nothing; import the module you need.
"""
