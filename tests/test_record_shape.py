"""Quick runs of the studies that measure with N tasks (parallel-read's MPI tasks and Dask path, the
calibration's parallel scaling, the STSA on its Dask cluster, the predictor's runner: one task, two
spawned tasks, two c-netcdf probes) through measure.tasks / measure.dask give records with the keys
and value types they had before the N-task loop was written once (issue 23 part 2).

EXPECTED was written from records of the code before that change (quick runs of `climio bench
parallel-read`, `calibrate` and `stsa`, and runner.measure): per group, the params, metrics and
cache keys with their JSON types (number: int or float; list[T]: every element of type T; {}: an
empty object; a dotted key is a nested one). Every record also has study, rep, status, time,
platform_id and schema. A key added, dropped or retyped fails here with its name.

The serial studies (read-stack, chunking) and parallel-write are checked the same way against
records their quick runs made before issue 23 (commit eddab52, with the native programs of that
tree), one group per shape of record: read-stack per native stack and per kind of Python stack
(binary file, netCDF-4), chunking per stack and contiguous or chunked layout, parallel-write per
mode, backend family (PnetCDF's records name their own counters) and serial or parallel strategy.
The one change: the native programs' records (C probes, climio-pario) carry "schema" now, as the
Python ones did (issue 23 part 5). metrics.syscalls.sizes is a map (request size -> count).
"""

from types import SimpleNamespace

import pytest

from climio.bench import base, registry
from climio.data import write_4d
from climio.measure.tasks import measure

MAPS = {"metrics.syscalls.sizes"}   # objects whose keys are values (a request size), not names
TOP = {"study": "str", "rep": "number", "status": "str", "time": "str", "platform_id": "str", "schema": "number"}

EXPECTED = {
    "calibrate/parallel/cpu": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str verified_by:str",
        "metrics": "bytes:number ops:number rate_MBps:number storage_needed_bytes:number storage_read_bytes:number "
                  "task_wall_s:list[number] wall_s:number",
        "params": "cores:number kind:str tasks:number what:str",
    },
    "calibrate/parallel/io": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number ops:number rate_MBps:number storage_needed_bytes:number storage_read_bytes:number "
                  "task_wall_s:list[number] wall_s:number",
        "params": "cores:number kind:str tasks:number what:str",
    },
    "parallel-read/dask": {
        "cache": "effective:str method:str per_rank:list[str] requested:str resident_fraction:list[number] "
                  "resident_fraction_max:number state:str storage_share:number",
        "metrics": "bytes:number epoch_end_us:number epoch_start_us:number imbalance:number mismatches:number "
                  "per_rank.bytes:list[number] per_rank.checksum:list[str] per_rank.host:list[number] "
                  "per_rank.rate_MBps:list[number] per_rank.total:list[number] rate_MBps:number "
                  "rate_job_MBps:number rate_mean_task_MBps:number rate_slowest_task_MBps:number "
                  "storage_needed_bytes:number storage_read_bytes:number task_max_s:number task_mean_s:number "
                  "verified:bool wall_s:number",
        "params": "access:str buffer_bytes:number collective:bool dtype:str elements:number experiment:str "
                  "file_bytes:number file_set:str files:number hints:{} hints_requested:{} hosts:list[str] "
                  "launcher:str library:str mpi_io:str nodes:number pattern:str ranks:number scheduler:str "
                  "stack:str tasks:number tasks_per_node:number workers:number",
    },
    "parallel-read/tasks": {
        "cache": "effective:str method:str per_rank:list[str] requested:str resident_fraction:list[number] "
                  "resident_fraction_max:number state:str storage_share:number",
        "metrics": "bytes:number epoch_end_us:number epoch_start_us:number imbalance:number mismatches:number "
                  "per_rank.bytes:list[number] per_rank.checksum:list[str] per_rank.close:list[number] "
                  "per_rank.host:list[number] per_rank.open:list[number] per_rank.ops:list[number] "
                  "per_rank.rate_MBps:list[number] per_rank.read:list[number] per_rank.total:list[number] "
                  "rate_MBps:number rate_mean_task_MBps:number rate_slowest_task_MBps:number "
                  "storage_needed_bytes:number storage_read_bytes:number task_max_s:number task_mean_s:number "
                  "verified:bool wall_s:number",
        "params": "access:str buffer_bytes:number buffer_requested:number collective:bool dtype:str elements:number "
                  "experiment:str file_bytes:number file_set:str files:number hints:{} hints_requested:{} "
                  "hosts:list[str] launcher:str library:str mpi_io:str nodes:number pattern:str ranks:number "
                  "stack:str tasks_per_node:number",
    },
    "predict/c-netcdf/2": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number task_wall_s:list[number] wall_s:number",
        "params": "chunk_cache:null file:str read:str reads:number stack:str tasks:number variable:str",
    },
    "predict/netcdf4-python/1": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number open_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number sys_s:number user_s:number wall_s:number",
        "params": "chunk_cache:null file:str read:str reads:number stack:str tasks:number variable:str",
    },
    "predict/netcdf4-python/2": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number job_wall_s:number ops:number rate_MBps:number "
                  "storage_needed_bytes:number storage_read_bytes:number sys_s:number task_wall_s:list[number] "
                  "user_s:number wall_s:number",
        "params": "chunk_cache:null file:str read:str reads:number stack:str tasks:number variable:str",
    },
    "stsa/io": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cluster_start_s:number cpu_s:number ops:number rate_MBps:number "
                  "storage_needed_bytes:number storage_read_bytes:number task_compute_cpu_s:list[number] "
                  "task_compute_wall_s:list[number] task_cpu_s:list[number] task_end_s:list[number] "
                  "task_read_cpu_s:list[number] task_read_wall_s:list[number] task_start_s:list[number] "
                  "task_wall_s:list[number] task_worker:list[str] wall_s:number",
        # a contiguous layout: no chunk cache (a chunked one's is {nbytes, nslots, w0, source})
        "params": "chunk_cache:null chunk_label:str chunks:str compression:str dtype:str file_bytes:number "
                  "layout:str method:str mode:str n_tasks:number piece_bytes:number preset:str read_plan:str "
                  "shape:list[number] source:str stack:str task_chunk_cache_bytes:list[null] where:str workers:number",
    },
    "chunking/c-netcdf/chunked": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number chunks_touched_per_slice:number "
                  "compression_ratio:number cpu_s:number file_bytes:number max_chunks_touched:number open_s:number "
                  "ops:number rate_MBps:number sampled:bool slices_read:number storage_needed_bytes:number "
                  "storage_read_bytes:number stored_bytes:number sys_s:number user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "chunking/c-netcdf/contiguous": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number compression_ratio:number cpu_s:number file_bytes:number "
                  "open_s:number ops:number rate_MBps:number sampled:bool slices_read:number "
                  "storage_needed_bytes:number storage_read_bytes:number stored_bytes:number sys_s:number "
                  "user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "chunking/h5py/chunked": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number chunks_touched_per_slice:number "
                  "compression_ratio:number cpu_s:number file_bytes:number max_chunks_touched:number open_s:number "
                  "ops:number rate_MBps:number sampled:bool slices_read:number storage_needed_bytes:number "
                  "storage_read_bytes:number stored_bytes:number sys_s:number user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "chunking/h5py/contiguous": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number compression_ratio:number cpu_s:number file_bytes:number "
                  "open_s:number ops:number rate_MBps:number sampled:bool slices_read:number "
                  "storage_needed_bytes:number storage_read_bytes:number stored_bytes:number sys_s:number "
                  "user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "chunking/netcdf4-python/chunked": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number chunks_touched_per_slice:number "
                  "compression_ratio:number cpu_s:number file_bytes:number max_chunks_touched:number open_s:number "
                  "ops:number rate_MBps:number sampled:bool slices_read:number storage_needed_bytes:number "
                  "storage_read_bytes:number stored_bytes:number sys_s:number user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "chunking/netcdf4-python/contiguous": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number bytes_decoded_per_byte:number compression_ratio:number cpu_s:number file_bytes:number "
                  "open_s:number ops:number rate_MBps:number sampled:bool slices_read:number "
                  "storage_needed_bytes:number storage_read_bytes:number stored_bytes:number sys_s:number "
                  "user_s:number wall_s:number",
        "params": "cache_setting:str chunk_cache.nelems:number chunk_cache.preemption:number chunk_cache.size:number "
                  "chunk_label:str chunking:str compression:str deflate:number dtype:str file:str layer:str "
                  "library:str preset:str read_count:list[number] read_shape:str sample:str shuffle:number "
                  "slices_total:number source:str var_shape:list[number] variable:str",
    },
    "parallel-write/benchio/mpi/parallel": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.open:list[number] per_rank.total:list[number] per_rank.write:list[number] "
                  "phases.close.max:number phases.close.mean:number phases.close.min:number phases.define.max:number "
                  "phases.define.mean:number phases.define.min:number phases.open.max:number phases.open.mean:number "
                  "phases.open.min:number phases.write.max:number phases.write.mean:number phases.write.min:number "
                  "rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number rate_MBps:number "
                  "rate_mean_task_MBps:number verified:bool wall_s:number",
        "params": "backend:str collective:bool decomposition:list[number] dtype:str files:number fsync:bool "
                  "global:list[number] halo:number hints:{} hints_requested:{} launcher:str library:str "
                  "local:list[number] mode:str mpi_io:str mpi_library:str nodes:number ranks:number scaling:str "
                  "strategy:str stripe.applied:bool stripe.reason:str stripe.requested.count:null "
                  "stripe.requested.size:null writers:number",
    },
    "parallel-write/benchio/mpi/serial": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.gather:list[number] per_rank.open:list[number] per_rank.total:list[number] "
                  "per_rank.write:list[number] phases.close.max:number phases.close.mean:number "
                  "phases.close.min:number phases.define.max:number phases.define.mean:number phases.define.min:number "
                  "phases.gather.max:number phases.gather.mean:number phases.gather.min:number phases.open.max:number "
                  "phases.open.mean:number phases.open.min:number phases.write.max:number phases.write.mean:number "
                  "phases.write.min:number rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number "
                  "rate_MBps:number rate_mean_task_MBps:number verified:bool wall_s:number",
        "params": "backend:str collective:bool decomposition:list[number] dtype:str files:number fsync:bool "
                  "global:list[number] halo:number hints:{} hints_requested:{} launcher:str library:str "
                  "local:list[number] mode:str mpi_io:str mpi_library:str nodes:number ranks:number scaling:str "
                  "strategy:str stripe.applied:bool stripe.reason:str stripe.requested.count:null "
                  "stripe.requested.size:null writers:number",
    },
    "parallel-write/benchio/pnetcdf/parallel": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.open:list[number] per_rank.total:list[number] per_rank.write:list[number] "
                  "phases.close.max:number phases.close.mean:number phases.close.min:number phases.define.max:number "
                  "phases.define.mean:number phases.define.min:number phases.open.max:number phases.open.mean:number "
                  "phases.open.min:number phases.write.max:number phases.write.mean:number phases.write.min:number "
                  "rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number rate_MBps:number "
                  "rate_mean_task_MBps:number verified:bool wall_s:number",
        "params": "backend:str collective:bool decomposition:list[number] dtype:str files:number fsync:bool "
                  "global:list[number] halo:number hints.nc_header_align_size:str hints.nc_header_read_chunk_size:str "
                  "hints.nc_ibuf_size:str hints.nc_in_place_swap:str hints.nc_num_subfiles:str "
                  "hints.nc_record_align_size:str hints.nc_var_align_size:str hints.pnetcdf_subfiling:str "
                  "hints_requested:{} launcher:str library:str local:list[number] mode:str mpi_io:str mpi_library:str "
                  "nodes:number ranks:number scaling:str strategy:str stripe.applied:bool stripe.reason:str "
                  "stripe.requested.count:null stripe.requested.size:null writers:number",
    },
    "parallel-write/benchio/pnetcdf/serial": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.gather:list[number] per_rank.open:list[number] per_rank.total:list[number] "
                  "per_rank.write:list[number] phases.close.max:number phases.close.mean:number "
                  "phases.close.min:number phases.define.max:number phases.define.mean:number phases.define.min:number "
                  "phases.gather.max:number phases.gather.mean:number phases.gather.min:number phases.open.max:number "
                  "phases.open.mean:number phases.open.min:number phases.write.max:number phases.write.mean:number "
                  "phases.write.min:number rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number "
                  "rate_MBps:number rate_mean_task_MBps:number verified:bool wall_s:number",
        "params": "backend:str collective:bool decomposition:list[number] dtype:str files:number fsync:bool "
                  "global:list[number] halo:number hints.nc_header_align_size:str hints.nc_header_read_chunk_size:str "
                  "hints.nc_ibuf_size:str hints.nc_in_place_swap:str hints.nc_num_subfiles:str "
                  "hints.nc_record_align_size:str hints.nc_var_align_size:str hints.pnetcdf_subfiling:str "
                  "hints_requested:{} launcher:str library:str local:list[number] mode:str mpi_io:str mpi_library:str "
                  "nodes:number ranks:number scaling:str strategy:str stripe.applied:bool stripe.reason:str "
                  "stripe.requested.count:null stripe.requested.size:null writers:number",
    },
    "parallel-write/model/mpi/parallel": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number fields:str file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.open:list[number] per_rank.total:list[number] per_rank.write:list[number] "
                  "phases.close.max:number phases.close.mean:number phases.close.min:number phases.define.max:number "
                  "phases.define.mean:number phases.define.min:number phases.open.max:number phases.open.mean:number "
                  "phases.open.min:number phases.write.max:number phases.write.mean:number phases.write.min:number "
                  "rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number rate_MBps:number "
                  "rate_mean_task_MBps:number records_written:number select:null small_bytes:number verified:bool "
                  "wall_s:number",
        "params": "backend:str chunking:str collective:bool decomposition:list[number] files:number fill:str "
                  "fsync:bool grid:list[number] hints:{} hints_requested:{} io_layout:list[number] launcher:str "
                  "library:str mode:str mpi_io:str mpi_library:str nodes:number nt:number ranks:number "
                  "select_threshold:number small_access:str strategy:str stripe.applied:bool stripe.reason:str "
                  "stripe.requested.count:null stripe.requested.size:null variables.2d:number variables.3d:number "
                  "variables.restart:number variables.small:number writers:number",
    },
    "parallel-write/model/mpi/serial": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number fields:str file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.gather:list[number] per_rank.open:list[number] per_rank.total:list[number] "
                  "per_rank.write:list[number] phases.close.max:number phases.close.mean:number "
                  "phases.close.min:number phases.define.max:number phases.define.mean:number phases.define.min:number "
                  "phases.gather.max:number phases.gather.mean:number phases.gather.min:number phases.open.max:number "
                  "phases.open.mean:number phases.open.min:number phases.write.max:number phases.write.mean:number "
                  "phases.write.min:number rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number "
                  "rate_MBps:number rate_mean_task_MBps:number records_written:number select:null small_bytes:number "
                  "verified:bool wall_s:number",
        "params": "backend:str chunking:str collective:bool decomposition:list[number] files:number fill:str "
                  "fsync:bool grid:list[number] hints:{} hints_requested:{} io_layout:list[number] launcher:str "
                  "library:str mode:str mpi_io:str mpi_library:str nodes:number nt:number ranks:number "
                  "select_threshold:number small_access:str strategy:str stripe.applied:bool stripe.reason:str "
                  "stripe.requested.count:null stripe.requested.size:null variables.2d:number variables.3d:number "
                  "variables.restart:number variables.small:number writers:number",
    },
    "parallel-write/model/pnetcdf/parallel": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number fields:str file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.open:list[number] per_rank.total:list[number] per_rank.write:list[number] "
                  "phases.close.max:number phases.close.mean:number phases.close.min:number phases.define.max:number "
                  "phases.define.mean:number phases.define.min:number phases.open.max:number phases.open.mean:number "
                  "phases.open.min:number phases.write.max:number phases.write.mean:number phases.write.min:number "
                  "rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number rate_MBps:number "
                  "rate_mean_task_MBps:number records_written:number select:null small_bytes:number verified:bool "
                  "wall_s:number",
        "params": "backend:str chunking:str collective:bool decomposition:list[number] files:number fill:str "
                  "fsync:bool grid:list[number] hints.nc_header_align_size:str hints.nc_header_read_chunk_size:str "
                  "hints.nc_ibuf_size:str hints.nc_in_place_swap:str hints.nc_num_subfiles:str "
                  "hints.nc_record_align_size:str hints.nc_var_align_size:str hints.pnetcdf_subfiling:str "
                  "hints_requested:{} io_layout:list[number] launcher:str library:str mode:str mpi_io:str "
                  "mpi_library:str nodes:number nt:number ranks:number select_threshold:number small_access:str "
                  "strategy:str stripe.applied:bool stripe.reason:str stripe.requested.count:null "
                  "stripe.requested.size:null variables.2d:number variables.3d:number variables.restart:number "
                  "variables.small:number writers:number",
    },
    "parallel-write/model/pnetcdf/serial": {
        "cache": "evicted_between_reps:bool method:str requested:str state:str",
        "metrics": "bytes:number epoch_end:number epoch_start:number fields:str file_bytes:number imbalance:number "
                  "mismatches:number per_rank.close:list[number] per_rank.define:list[number] "
                  "per_rank.gather:list[number] per_rank.open:list[number] per_rank.total:list[number] "
                  "per_rank.write:list[number] phases.close.max:number phases.close.mean:number "
                  "phases.close.min:number phases.define.max:number phases.define.mean:number phases.define.min:number "
                  "phases.gather.max:number phases.gather.mean:number phases.gather.min:number phases.open.max:number "
                  "phases.open.mean:number phases.open.min:number phases.write.max:number phases.write.mean:number "
                  "phases.write.min:number rank_total_s.max:number rank_total_s.mean:number rank_total_s.min:number "
                  "rate_MBps:number rate_mean_task_MBps:number records_written:number select:null small_bytes:number "
                  "verified:bool wall_s:number",
        "params": "backend:str chunking:str collective:bool decomposition:list[number] files:number fill:str "
                  "fsync:bool grid:list[number] hints.nc_header_align_size:str hints.nc_header_read_chunk_size:str "
                  "hints.nc_ibuf_size:str hints.nc_in_place_swap:str hints.nc_num_subfiles:str "
                  "hints.nc_record_align_size:str hints.nc_var_align_size:str hints.pnetcdf_subfiling:str "
                  "hints_requested:{} io_layout:list[number] launcher:str library:str mode:str mpi_io:str "
                  "mpi_library:str nodes:number nt:number ranks:number select_threshold:number small_access:str "
                  "strategy:str stripe.applied:bool stripe.reason:str stripe.requested.count:null "
                  "stripe.requested.size:null variables.2d:number variables.3d:number variables.restart:number "
                  "variables.small:number writers:number",
    },
    "read-stack/c-netcdf": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number open_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number sys_s:number syscalls.bytes_per_request:number "
                  "syscalls.calls_per_request:number syscalls.max_call_bytes:number syscalls.read_bytes:number "
                  "syscalls.read_calls:number syscalls.requests:number syscalls.sizes:map[number] syscalls.tool:str "
                  "user_s:number wall_s:number",
        "params": "api:str buffer_bytes:number file:str file_bytes:number layer:str library:str max_ops:number "
                  "odirect:bool pattern:str planned_bytes:number planned_ops:number random_count:number seed:number "
                  "variable:str",
    },
    "read-stack/c-posix": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number open_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number sys_s:number syscalls.bytes_per_request:number "
                  "syscalls.calls_per_request:number syscalls.max_call_bytes:number syscalls.read_bytes:number "
                  "syscalls.read_calls:number syscalls.requests:number syscalls.sizes:map[number] syscalls.tool:str "
                  "user_s:number wall_s:number",
        "params": "api:str buffer_bytes:number file:str file_bytes:number layer:str max_ops:number odirect:bool "
                  "pattern:str planned_bytes:number planned_ops:number random_count:number seed:number",
    },
    "read-stack/python-bin": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number open_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number sys_s:number syscalls.bytes_per_request:number "
                  "syscalls.calls_per_request:number syscalls.max_call_bytes:number syscalls.read_bytes:number "
                  "syscalls.read_calls:number syscalls.requests:number syscalls.sizes:map[number] syscalls.tool:str "
                  "user_s:number wall_s:number",
        "params": "api:str buffer_bytes:number file:str file_bytes:number layer:str library:str max_ops:number "
                  "odirect:bool pattern:str planned_bytes:number planned_ops:number random_count:number seed:number",
    },
    "read-stack/python-nc": {
        "cache": "effective:str method:str requested:str resident_fraction:number state:str storage_share:number "
                  "verified_by:str",
        "metrics": "bytes:number cpu_s:number open_s:number ops:number rate_MBps:number storage_needed_bytes:number "
                  "storage_read_bytes:number sys_s:number syscalls.bytes_per_request:number "
                  "syscalls.calls_per_request:number syscalls.max_call_bytes:number syscalls.read_bytes:number "
                  "syscalls.read_calls:number syscalls.requests:number syscalls.sizes:map[number] syscalls.tool:str "
                  "user_s:number wall_s:number",
        "params": "api:str buffer_bytes:number file:str file_bytes:number layer:str library:str max_ops:number "
                  "odirect:bool pattern:str planned_bytes:number planned_ops:number random_count:number seed:number "
                  "variable:str",
    },
}


def _type(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    if isinstance(v, dict) and not v:
        return "{}"
    if isinstance(v, list):
        return "list[" + "|".join(sorted({_type(x) for x in v})) + "]"
    return type(v).__name__


def keys_and_types(rec) -> dict:
    """{dotted key: JSON type} of a record (nested objects flattened, as EXPECTED writes them)."""
    out = {}

    def walk(d, pre):
        for k, v in d.items():
            if pre + k in MAPS:
                out[pre + k] = "map[" + "|".join(sorted({_type(x) for x in v.values()})) + "]"
            elif isinstance(v, dict) and v:
                walk(v, f"{pre}{k}.")
            else:
                out[pre + k] = _type(v)
    walk(rec, "")
    return out


def expected(group) -> dict:
    out = dict(TOP)
    for section, text in EXPECTED[group].items():
        for item in text.split():
            key, _, typ = item.rpartition(":")
            out[f"{section}.{key}"] = typ
    return out


def assert_shape(group, rec):
    got, want = keys_and_types(rec), expected(group)
    assert got == want, (group, {"missing": sorted(set(want) - set(got)), "added": sorted(set(got) - set(want)),
                                 "retyped": {k: (want[k], got[k]) for k in set(got) & set(want) if got[k] != want[k]}})


def ctx_collecting(tmp_path):
    recs = []
    run = SimpleNamespace(writer=SimpleNamespace(write=recs.append), platform_id="p")
    return base.RunContext(run=run, data_dir=str(tmp_path), progress=False), recs


def test_parallel_read_mpi_tasks_and_dask(tmp_path):
    from climio.bench.parallel_read.run import run_grid
    grid = registry.get("parallel-read").grid("quick", experiments="tasks,dask", stacks="netcdf4-python",
                                          file_sets="shared", ranks="2", size="64KiB", buffers="16KiB", reps=1)
    ctx, recs = ctx_collecting(tmp_path)
    assert run_grid(ctx, grid) == 2
    for r in recs:
        assert r["status"] == "ok" and r["metrics"]["verified"] and r["metrics"]["bytes"] == 64 << 10
        assert_shape(f"parallel-read/{r['params']['experiment']}", r)
    assert sorted(r["params"]["experiment"] for r in recs) == ["dask", "tasks"]


def test_calibrate_parallel_scaling(tmp_path):
    from climio.bench.calibrate import run as cal
    files = {"raw": str(tmp_path / "raw.bin"),
             "decode-deflate1": cal._nc(str(tmp_path / "decode.nc"), cal.DECODE_SHAPE, cal.DECODE_CHUNKS, "deflate1")}
    cal._write_raw(files["raw"], 4 << 20)
    recs = []
    cal.parallel(files, "deflate1", [2], 1, recs.append, "p")
    assert [r["params"]["what"] for r in recs] == ["io", "cpu"]
    for r in recs:
        assert r["params"]["tasks"] == 2 and len(r["metrics"]["task_wall_s"]) == 2
        assert_shape(f"calibrate/parallel/{r['params']['what']}", r)


def test_stsa_on_the_dask_cluster(tmp_path):
    from climio.bench.stsa.run import run_study
    grid = registry.get("stsa").grid("quick", shape="48,1,4,64", layouts="contiguous", workers="1", modes="io", reps=1,
                                 tasks=2)
    ctx, recs = ctx_collecting(tmp_path)
    assert run_study(ctx.run, grid, tmp_path, progress=False) == 1
    assert recs[0]["params"]["n_tasks"] == 2 and recs[0]["params"]["where"].startswith("LocalCluster, 1 worker")
    assert_shape("stsa/io", recs[0])


@pytest.fixture(scope="module")
def small_nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("shape") / "ta.nc"
    write_4d(str(path), [8, 2, 16, 32], chunks=[8, 1, 4, 32])
    return str(path)


@pytest.mark.parametrize("stack, tasks", [("netcdf4-python", 1), ("netcdf4-python", 2), ("c-netcdf", 2)])
def test_predict_runner(small_nc, stack, tasks):
    reads = [((0, z, y, 0), (8, 1, 1, 32)) for z in range(2) for y in range(16)]
    (r,) = measure(small_nc, "ta", reads, stack, tasks=tasks, reps=1, needed_bytes=8 * 2 * 16 * 32 * 8,
                   params={"read": "xt"})
    assert r["metrics"]["bytes"] == 8 * 2 * 16 * 32 * 8 and r["params"]["tasks"] == tasks
    assert_shape(f"predict/{stack}/{tasks}", r)


def shape_group(r) -> str:
    """The EXPECTED group of a read-stack, chunking or parallel-write record."""
    p = r["params"]
    if r["study"] == "read-stack":
        s = p["layer"]
        return "read-stack/" + (s if s.startswith("c-") else "python-bin" if s in ("py-file", "numpy") else "python-nc")
    if r["study"] == "chunking":
        return f"chunking/{p['layer']}/{'contiguous' if p['chunking'] == 'contiguous' else 'chunked'}"
    return (f"parallel-write/{p['mode']}/{'pnetcdf' if p['backend'] == 'pnetcdf' else 'mpi'}/"
            f"{'serial' if p['strategy'] == 'serial' else 'parallel'}")


@pytest.mark.parametrize("study, values", [
    ("read-stack", dict(size="64KiB", buffers="16KiB", reps=1, stacks="c-posix,c-netcdf,py-file,netcdf4-python")),
    ("chunking", dict(shape="4,2,8,16", chunks="A,E", reads="xy", compression="none", chunk_cache="default",
                      stacks="netcdf4-python,h5py,c-netcdf", reps=1)),
    ("parallel-write", dict(mode="benchio,model", ranks="2", local="8,8,8", model_grid="16,8,2", nt=1, reps=1,
                            backends="mpiio,pnetcdf", strategies="shared,serial")),
])
def test_serial_studies_and_parallel_write(tmp_path, study, values):
    """A quick run at the smallest sizes: every record has its group's keys and value types, and every
    group of the study is there."""
    s = registry.get(study)
    ctx, recs = ctx_collecting(tmp_path)
    s.run(ctx, s.grid("quick", **values))
    assert recs and all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs if r["status"] != "ok"]
    for r in recs:
        assert_shape(shape_group(r), r)
    assert {shape_group(r) for r in recs} == {g for g in EXPECTED if g.startswith(study + "/")}
