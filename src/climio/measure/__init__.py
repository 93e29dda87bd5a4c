"""Measuring: the repetition loop (series), the generic worker, child processes (procs), MPI
launches and the environment of a rank (mpi), N tasks at once (tasks: spawned processes or MPI
ranks), the Dask cluster (dask), the native programs' command lines (probes), progress lines and
bars (progress). The core's: it names no study."""
