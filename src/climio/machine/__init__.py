"""The platform and the native programs: provenance (platform), climio's built programs (native),
page-cache control (cache), Lustre striping (stripes) and how worker processes start (spawning).

May import climio.base only."""
