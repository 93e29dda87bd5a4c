"""Measuring: the repetition loop (series), the generic worker, child processes (procs), MPI
launches and the environment of a rank (mpi), progress lines and bars (progress)."""
