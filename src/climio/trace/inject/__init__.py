"""Code injected into a traced Python job through the `sitecustomize` of this directory, which
`climio trace run` puts first on the job's PYTHONPATH; each feature is enabled by its own variable
(CLIMIO_TRACE_OBJECTS: climio.trace.inject.objects)."""
