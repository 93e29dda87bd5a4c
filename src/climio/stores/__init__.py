"""Object-store plumbing (core): endpoints and credentials from the environment, the test server
and its latency proxy, uploads.

    endpoint.py   Endpoint (AWS_* variables, --endpoint-url; credentials never in records or logs),
                  s3:// addresses
    server.py     S3Server: SeaweedFS + Toxiproxy on free loopback ports, latency/bandwidth toxics,
                  eviction of the server's volume files for cold repetitions
    toxiproxy.py  the Toxiproxy HTTP API
    objects.py    upload (metadata last), list, delete
    remote.py     RemoteStore: any S3 endpoint with S3Server's face (no eviction or injected latency)
    timing.py     the time of every GET a zarr store makes
    binaries.py   where setup.sh built weed and toxiproxy-server
"""

from .endpoint import Endpoint, S3Url, is_s3_url, parse_s3_url

__all__ = ["Endpoint", "S3Url", "is_s3_url", "parse_s3_url"]
