"""pkforge from Python: a client for the v1 gRPC API and a read-only reader of
the trajectory database (pandas DataFrames), with best-so-far (plateau) curves.

    import pkforge
    db = pkforge.read_db("pkforge-data/pkforge.db")      # never writes the file
    curves = pkforge.best_so_far(db.evaluations)
    pkforge.plot_best_so_far(curves)

    with pkforge.Client("127.0.0.1:50061") as c:
        job = c.submit(pkforge.job_spec(problem="allreduce", budget_s=60))
        for event in c.watch(job.id):
            print(event.seq, event.WhichOneof("payload"))
"""
from pkforge.client import Client, job_spec
from pkforge.db import SCHEMA_VERSIONS, Database, connect_ro, read_db
from pkforge.plateau import best_so_far, plateau_curves, plot_best_so_far

__all__ = [
    "Client",
    "job_spec",
    "Database",
    "SCHEMA_VERSIONS",
    "connect_ro",
    "read_db",
    "best_so_far",
    "plateau_curves",
    "plot_best_so_far",
]
__version__ = "0.1.0"
