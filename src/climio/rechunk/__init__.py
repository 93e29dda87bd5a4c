"""`climio rechunk`: memory-bounded, parallel layout conversion of netCDF-4/HDF5 files.

model    the shared nouns (a source variable, a target layout)
meta     scan a source file; define the output file with everything but the bulk data
spec     user chunk specs (nccopy forms, --for, --balanced, --chunk-bytes) -> target chunks
plan     the pure planner: passes, block shapes, predicted bytes, memory and time
codec    decode/encode whole chunks (HDF5 shuffle + deflate) outside HDF5
execute  run a plan: read blocks, encode target chunks, write them in file order
verify   compare every value and the metadata of two files in bounded memory
"""
