"""climio's tracer, the Python side: read a trace directory written by libclimio-trace.so
(format: csrc/trace/FORMAT.md), analyse it across layers, and explain what it shows.

    reader.read_trace(dir) -> Trace            events with strings resolved, aux joined, per-process info
    run.run_trace(command, out, ...) -> int     `climio trace run`: preload the tracer, run, write meta.json
    analysis.analyse(trace) -> Analysis         layers/functions, call-path flow, per-rank, per-file, netCDF chunks
    Analysis.facts(), CountersAnalysis.facts()  the one Facts type (event_facts, counters_facts) that
                                                climio.rules judges: named thresholds, cited evidence
    report.render(dir, fmt, out)                `climio trace report`: text, JSON or HTML
    trying.try_fixes(dir, ...) -> summary       `climio trace try`: the advice's fixes applied to the job
                                                (preload redirect, injected caches, inject/ sitecustomize),
                                                measured cold against the baseline, ranked by measured gain
    inject/                                     modules run inside the job's own Python (sitecustomize)
"""
