"""The analysis jobs of `climio bench advice`: real scripts as a climate scientist writes them, each
run as `python JOB.py FILE` on a CMIP-style tas file and printing its numbers (two decimals, as one
prints temperatures; `trace try` compares them between runs). Not imported: the study copies each
script into its job's directory and runs it there.

    JOBS   {name: (script file, what it does)} in the table's order
"""

JOBS = {
    "station": ("station_series.py", "xarray: 25 station series (sel nearest, .load()), annual maxima"),
    "box-index": ("box_index.py", "xarray: a Nino3.4-style box mean over time, its annual means"),
    "monthly-clim": ("monthly_clim_dask.py", "xarray + Dask: monthly climatology (open with chunks={})"),
    "seasonal-clim": ("seasonal_clim_dask.py", "xarray + Dask: seasonal climatology (chunks={'time': 120})"),
    "anomalies": ("anomalies.py", "xarray: daily anomalies from the monthly climatology, their global mean"),
    "nc4-points": ("nc4_points.py", "netCDF4-python: 25 point series, one var[:, j, i] each"),
    "h5py-slabs": ("h5py_hyperslabs.py", "h5py: a region hyperslab per month in a loop"),
    "hovmoeller": ("hovmoeller.py", "xarray: zonal-band mean (time x lon Hovmoeller) over the tropics"),
}
