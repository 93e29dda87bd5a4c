"""Predicted against measured on object storage: the object-store model calibrated from an object-read
run (records.jsonl) predicts each cell of an object-chunking run (configurations not used to calibrate).
Usage: python bench/object_predict_check.py OBJECT_READ/records.jsonl OBJECT_CHUNKING/records.jsonl [STACK...]
with the stacks measured concurrency per latency in /tmp/h25me/conc.json (bench.object_read.concurrency)."""
import json, math, os, sys
from statistics import median
from climio.bench.object_read.summary import summarise
from climio.bench.object_chunking.run import sample_slabs
from climio.model import object_store as om
ro=[json.loads(l) for l in open(sys.argv[1])]
oc=[json.loads(l) for l in open(sys.argv[2])]
cells=summarise(ro)["cells"]
CONC=json.load(open(os.environ.get("CONCURRENCY_JSON", "conc.json")))
errs=[]
from collections import defaultdict
by=defaultdict(list)
for r in oc:
    if r["status"]!="ok": continue
    p=r["params"]; by[(p["latency_ms"],p["stack"],p["chunks"],p["shards"],p["compression"],p["read"],p["shape"],p["samples"])].append(r["metrics"]["wall_s"])
sel=sys.argv[3:] or None
for (lat,stack,chunks,shards,comp,read,shape,samples),walls in sorted(by.items()):
    if sel and stack not in sel: continue
    rates=om.rates_from_cells(cells,lat,"x",CONC[str(int(lat))])
    shape=json.loads(shape); ch=json.loads(chunks); sh=None if shards=="none" else json.loads(shards)
    slabs=sample_slabs(shape,read,samples)
    tasks=[om.read_tasks(shape,ch,sh,s,c,4) for s,c in slabs]
    st = stack if stack!="zarr-kerchunk" else "zarr-fsspec"
    pr=om.predict_read(tasks,rates,st)
    m=median(walls); e=om.error_ratio(pr["time_s"],m); errs.append(e)
    print(f"{lat:4g} {stack:13s} {chunks:16s} {shards:14s} {comp:6s} {read:4s} pred {pr['time_s']:.3f} meas {m:.3f} gets {pr['gets']} err {e:.2f}")
print("n",len(errs),"median",median(errs),"p90",sorted(errs)[int(0.9*len(errs))])
